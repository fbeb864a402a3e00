"""Several Ray nodes on one machine (issue 19, item 5): `python -m cobalt.serve.cluster start`
makes a 2-node loopback cluster that outlives the command, the evaluator spreads its replicas over
both nodes, `stop` leaves nothing; losing a node in the middle of `run_multi_turn.py` loses no
problem and duplicates none."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from infer_fixtures import answer, problem_records
from openai_stub import ScriptedEndpoint
from proc_helpers import wait_until

from cobalt.common.jsonl import load_jsonl, write_jsonl
from cobalt.data.execute import Executor
from cobalt.sandbox.feedback import exception_feedback, feedback_for
from cobalt.serve.cluster import LocalCluster, alive_nodes, processes_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"cobalt-{i:03d}" for i in range(1, 13)]
# a program that reads its input and is always wrong: every turn of every problem is evaluated
WRONG = "import sys\nprint(len(sys.stdin.read()))\n"
# How an execution result's feedback starts when the evaluator, not the program, failed: the
# executor's "Exception: <error type>: ..." or call timeout (cobalt.data.execute), the sandbox's
# "Exception: ..." after a test's input (cobalt.sandbox.feedback).
EVALUATOR_FAILURE = re.compile(r"^(Exception: |TimeoutError: evaluation did not finish)", re.MULTILINE)


def evaluator_failures(record: dict) -> list[str]:
    results = [*record["turn0_results"], *(result for turns in record["public_results"] for result in turns)]
    return [text for result in results for text in result["feedback"] if EVALUATOR_FAILURE.search(text)]


class FailingEvaluator:
    """Raises ``error``, or never answers (None)."""

    def __init__(self, error: BaseException | None):
        self.error = error

    async def evaluate(self, code, test_cases):
        if self.error is None:
            await asyncio.sleep(60)
        raise self.error


def test_evaluator_failures_are_found_whatever_the_error():
    from ray.exceptions import NodeDiedError, WorkerCrashedError

    async def results(errors):
        return [await Executor(FailingEvaluator(e), timeout_s=0.1).run("print(1)", "{}") for e in errors]

    failed = asyncio.run(results([NodeDiedError("node 1 died"), WorkerCrashedError(), None]))
    crashed = {"passing": [False], "feedback": [exception_feedback("1", "the sandbox stopped first")]}
    run = {"status": "exit", "rc": 0, "stdout": "7", "stderr": ""}
    verdict = {"passing": [False], "feedback": [feedback_for(run, "1", "2", 4.0)]}
    record = {"turn0_results": [verdict], "public_results": [[*failed, crashed, verdict]]}
    assert len(evaluator_failures(record)) == 4


def spread_config(path: Path, app_name: str) -> Path:
    """configs/evaluator.yaml with two replicas, at most one per node, under its own app name."""
    config = yaml.safe_load((ROOT / "configs/evaluator.yaml").read_text())
    config["serve"].update(app_name=app_name, num_replicas=2, max_replicas_per_node=1)
    path.write_text(yaml.safe_dump(config))
    return path


def deploy(config: Path, env: dict[str, str]) -> dict:
    """Deploy the evaluator from a driver of the cluster in ``env``; its report (cluster_driver)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests/cluster_driver.py"), str(config)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def exports(text: str) -> dict[str, str]:
    return dict(
        line.removeprefix("export ").split("=", 1) for line in text.splitlines() if line.startswith("export ")
    )


def test_a_two_node_cluster_serves_the_evaluator_from_both_nodes_and_stops_clean(tmp_path):
    cli = ["bash", str(ROOT / "scripts/local_cluster.sh")]  # the documented command
    start = subprocess.run(
        [*cli, "start", "--nodes", "2", "--num-cpus", "2", "--num-gpus", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert start.returncode == 0, start.stderr[-3000:]
    env = exports(start.stdout)
    temp_dir = str(Path(env["RAY_AUTH_TOKEN_PATH"]).parent)
    try:
        assert env["RAY_ADDRESS"].startswith("127.0.0.1:") and env["RAY_AUTH_MODE"] == "token"
        assert f"stop {temp_dir}" in start.stdout
        driver_env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"} | env
        assert alive_nodes(env["RAY_ADDRESS"], driver_env) == 2  # the command has exited
        report = deploy(spread_config(tmp_path / "evaluator.yaml", "evaluator-spread"), driver_env)
        assert len(report["nodes"]) == 2
        assert sorted(report["replicas"].values()) == report["nodes"], report  # one on each node
        assert report["passing"] == [[True] * 3] * 16
        assert processes_of(os.path.join(temp_dir, "node-1"))  # the worker node's own raylet
    finally:
        stop = subprocess.run(
            [*cli, "stop", env.get("RAY_ADDRESS", temp_dir)], capture_output=True, text=True, timeout=300
        )
    assert stop.returncode == 0, stop.stderr
    assert not processes_of(temp_dir), "processes of the cluster outlived `stop`"
    assert not os.path.exists(temp_dir)
    again = subprocess.run([*cli, "stop", temp_dir], capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "no cluster started by" in again.stderr


@contextlib.contextmanager
def two_node_cluster(num_cpus: int):
    cluster = LocalCluster(2, num_cpus=num_cpus, num_gpus=1)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
    assert not processes_of(cluster.temp_dir) and not os.path.exists(cluster.temp_dir)


@pytest.fixture
def two_nodes():
    with two_node_cluster(num_cpus=2) as cluster:
        yield cluster


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def raylet_of(node_dir: str) -> int:
    (pid,) = [p for p in processes_of(node_dir) if Path(f"/proc/{p}/comm").read_text().strip() == "raylet"]
    return pid


def test_b_losing_a_node_mid_run_loses_no_problem_and_duplicates_none(two_nodes, tmp_path):
    problems = tmp_path / "problems.jsonl"
    write_jsonl(problems, problem_records(IDS))
    with ScriptedEndpoint(lambda messages: answer(WRONG), delay_s=0.5) as api_base:
        model = [
            "--engine",
            "litellm",
            "--model",
            "openai/stub",
            "--api_base",
            api_base,
            "--max_tokens",
            "16",
        ]
        single = tmp_path / "single.jsonl"
        done = subprocess.run(
            [
                str(ROOT / "scripts/run_single_turn.py"),
                "-i",
                str(problems),
                "-o",
                str(single),
                "-n",
                "2",
                "--evaluator",
                "local",
                *model,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        env = two_nodes.head.child_env()
        config = spread_config(tmp_path / "evaluator.yaml", "evaluator-node-loss")
        report = deploy(config, env)
        assert sorted(report["replicas"].values()) == report["nodes"], report
        multi = tmp_path / "multi.jsonl"
        args = [
            str(ROOT / "scripts/run_multi_turn.py"),
            "-i",
            str(single),
            "-o",
            str(multi),
            "--turns",
            "3",
            "--concurrency",
            "2",
            "--address",
            two_nodes.address,
            "--evaluator",
            "serve",
            "--evaluator_config",
            str(config),
            *model,
        ]
        log = tmp_path / "first_run.log"
        with open(log, "w") as err:
            job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
            deadline = time.monotonic() + 300
            while job.poll() is None and time.monotonic() < deadline and len(lines(multi)) < 3:
                time.sleep(0.1)
            assert job.poll() is None and len(lines(multi)) < len(IDS), log.read_text()[-3000:]
            os.kill(raylet_of(two_nodes.node_dir(1)), signal.SIGKILL)  # the second node is lost
            written_at_kill = len(lines(multi))
            job.wait(timeout=600)
        # No error stops the command when a node is lost: a request that fails for good becomes an
        # evaluator failure in the results (counted below), so the run must finish.
        assert job.returncode == 0, log.read_text()[-3000:]
    records = load_jsonl(multi)
    assert sorted(r["id"] for r in records) == IDS, "problems lost or duplicated"
    failures = [text for record in records for text in evaluator_failures(record)]
    assert not failures, f"{len(failures)} evaluator failures recorded as verdicts: {failures[:3]}"
    assert all(len(r["conversations"][0]) == 2 + 2 * 4 for r in records)  # every turn ran
    assert written_at_kill < len(IDS)
    assert wait_until(lambda: alive_nodes(two_nodes.address, env) == 1, 120, interval_s=1), (
        "the lost node still counts"
    )
