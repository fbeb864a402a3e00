"""An evaluator replica killed in the middle of a burst costs no request and leaves nothing behind."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from proc_helpers import wait_until
from sandbox_fixtures import backend_config, processes_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
UID_BASE = {"bwrap": 62600, "landlock": 62700}  # uids of their own: leftovers are attributable
SLOTS = 16
ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
CASES = {"inputs": [f"{i} {i + 1}\n" for i in range(4)], "outputs": [str(2 * i + 1) for i in range(4)]}


@pytest.fixture(params=["bwrap", "landlock"])
def app(request, ray_cluster, tmp_path):
    """The evaluator app (2 replicas) under a name and config of its own."""
    from ray import serve

    from cobalt.serve.evaluator import start_evaluator_app

    scratch = Path(tempfile.mkdtemp(prefix="cobalt-loss-", dir="/tmp"))
    scratch.chmod(0o711)  # the slot uids pass through it to their own dirs
    config = yaml.safe_load((ROOT / "configs/evaluator.yaml").read_text())
    config["sandbox"].update(
        backend=request.param, uid_base=UID_BASE[request.param], slots=SLOTS, scratch_root=str(scratch)
    )
    # the surviving replica's warm sandboxes end a second after the burst: any process of these
    # uids still alive after that is one the dead replica left
    config["sandbox"]["warm_idle_s"] = 1
    config["serve"].update(app_name=f"evaluator-loss-{request.param}", num_replicas=2)
    path = tmp_path / "evaluator.yaml"
    path.write_text(yaml.safe_dump(config))
    backend_config(request.param)  # skips where the backend cannot run
    start_evaluator_app(str(path))
    yield config
    serve.delete(config["serve"]["app_name"])
    shutil.rmtree(scratch, ignore_errors=True)


def replica_names(app_name: str) -> set[str]:
    import ray

    return {
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["name"].startswith(f"SERVE_REPLICA::{app_name}#")
    }


def test_a_replica_killed_mid_burst_costs_no_request(app):
    import ray
    from ray import serve

    from cobalt.serve.client import ServeEvaluator

    app_name = app["serve"]["app_name"]
    evaluator = ServeEvaluator(app_name=app_name)
    victim_name = sorted(replica_names(app_name))[0]
    victim = ray.get_actor(victim_name, namespace="serve")

    async def burst():
        jobs = [asyncio.ensure_future(evaluator.evaluate(ADD, CASES)) for _ in range(300)]
        # the kill lands once the replicas answer, while most of the burst still waits: a fixed
        # 3 s wait let warm sandboxes finish all 300 first (CI at 7832962)
        deadline = time.monotonic() + 120
        while sum(job.done() for job in jobs) < 10 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert not all(job.done() for job in jobs), "the burst ended before the kill"
        ray.kill(victim, no_restart=True)
        return await asyncio.gather(*jobs, return_exceptions=True)

    seen = []  # what reaches the caller's log from Serve's router (after our digest filter)
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())
    logging.getLogger("ray.serve").addHandler(handler)
    try:
        results = asyncio.run(burst())
    finally:
        logging.getLogger("ray.serve").removeHandler(handler)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == [], f"{len(errors)} requests failed, e.g. {errors[:1]}"
    wrong = [r for r in results if r["passing"] != [True] * 4]
    assert wrong == [], f"{len(wrong)} requests judged wrongly, e.g. {wrong[:1]}"
    about_the_death = ("Failed to fetch queue length", "will not be considered for future requests")
    dead_replica_warnings = [m for m in seen if any(mark in m for mark in about_the_death)]
    assert len(dead_replica_warnings) <= 4, f"{len(dead_replica_warnings)} warnings about one dead replica"

    # Serve replaces the replica (after its health check notices the death, up to ~10 s later; the
    # app reads RUNNING until then), and the new one sweeps what the dead one left (if anything)
    def replaced() -> bool:
        names = replica_names(app_name)
        running = serve.status().applications[app_name].status == "RUNNING"
        return running and len(names) == 2 and victim_name not in names

    assert wait_until(replaced, 180), f"not replaced: {replica_names(app_name)}, {serve.status()}"
    uids = set(range(app["sandbox"]["uid_base"], app["sandbox"]["uid_base"] + SLOTS))
    assert wait_until(lambda: not processes_of(uids), 30), (
        f"sandboxes outlived their replica: {processes_of(uids)}"
    )
    scratch = Path(app["sandbox"]["scratch_root"])
    leftovers = lambda: list(scratch.glob("cobalt-scratch-*/slot-*/*"))  # noqa: E731
    assert wait_until(lambda: not leftovers(), 30), f"stale scratch dirs: {leftovers()}"
    assert os.listdir(scratch) in ([], [f"cobalt-scratch-{os.geteuid()}"])
