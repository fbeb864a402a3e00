"""An evaluator replica killed in the middle of a burst costs no request and leaves nothing behind."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import yaml
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
    config["serve"].update(app_name=f"evaluator-loss-{request.param}", num_replicas=2)
    path = tmp_path / "evaluator.yaml"
    path.write_text(yaml.safe_dump(config))
    backend_config(request.param)  # skips where the backend cannot run
    start_evaluator_app(str(path))
    yield config
    serve.delete(config["serve"]["app_name"])
    shutil.rmtree(scratch, ignore_errors=True)


def replica_actors(app_name: str) -> list:
    import ray

    return [
        ray.get_actor(actor["name"], namespace=actor["namespace"])
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["name"].startswith(f"SERVE_REPLICA::{app_name}#")
    ]


def wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_a_replica_killed_mid_burst_costs_no_request(app):
    import ray
    from ray import serve

    from cobalt.serve.client import ServeEvaluator

    app_name = app["serve"]["app_name"]
    evaluator = ServeEvaluator(app_name=app_name)
    victim = replica_actors(app_name)[0]

    async def burst():
        jobs = [asyncio.ensure_future(evaluator.evaluate(ADD, CASES)) for _ in range(300)]
        await asyncio.sleep(3)
        assert not all(job.done() for job in jobs), "the burst ended before the kill"
        ray.kill(victim, no_restart=True)
        return await asyncio.gather(*jobs, return_exceptions=True)

    results = asyncio.run(burst())
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == [], f"{len(errors)} requests failed, e.g. {errors[:1]}"
    assert all(r["passing"] == [True] * 4 for r in results)

    # Serve replaces the replica; the new one sweeps what the dead one left (if anything)
    assert wait_for(lambda: serve.status().applications[app_name].status == "RUNNING", 120)
    assert len(replica_actors(app_name)) == 2
    uids = set(range(app["sandbox"]["uid_base"], app["sandbox"]["uid_base"] + SLOTS))
    assert wait_for(lambda: not processes_of(uids), 10), "a sandbox outlived its replica"
    scratch = Path(app["sandbox"]["scratch_root"])
    assert wait_for(lambda: not list(scratch.glob("cobalt-scratch-*/slot-*/*")), 10), "stale scratch dirs"
    assert os.listdir(scratch) in ([], [f"cobalt-scratch-{os.geteuid()}"])
