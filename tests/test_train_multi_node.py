"""Multi-node training on one machine (issue 19, item 5): a 2-node loopback LocalCluster (8 logical
CPUs and one fake GPU per node), one GRPO step of the cpu_smoke profile through the launcher with
``--address 127.0.0.1:PORT trainer.nnodes=2 trainer.n_gpus_per_node=1``: world size 2, two
rollout replicas, a checkpoint of two shards, and the two FSDP workers (veRL's ``WorkerDict``
actors), the two vLLM rollout servers and the two evaluator replicas each on both nodes (GCS's
actor table, which keeps dead actors with their node). The cluster is stopped at the end and
leaves no process and no temp dir.

The launcher gets the cluster's address and token but not RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0:
``cobalt.serve.cluster.join_env`` adds it for a loopback address (without it the trainer's
``ray.init`` would dial the machine's address instead of 127.0.0.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from train_fixtures import ENV, demo_data_and_policy, run

pytest.importorskip("verl")
pytest.importorskip("vllm")
pytestmark = [pytest.mark.slow, pytest.mark.train]

ROOT = Path(__file__).resolve().parents[1]
NODES = 2


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """Demo bandit data and a warmed-up tiny policy."""
    work = tmp_path_factory.mktemp("multi_node")
    demo_data_and_policy(work)
    return work


@pytest.fixture(scope="module")
def two_nodes():
    from cobalt.serve.cluster import LocalCluster, exported, processes_of

    with exported(ENV):  # the nodes' processes inherit these
        cluster = LocalCluster(NODES, num_cpus=8, num_gpus=1)
        cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
    assert not processes_of(cluster.temp_dir), "processes of the cluster outlived stop()"
    assert not os.path.exists(cluster.temp_dir)


def test_one_grpo_step_on_two_nodes_puts_a_rank_on_each(work, two_nodes):
    from cobalt.serve.cluster import SINGLE_NODE_LOOPBACK

    assert two_nodes.address.startswith("127.0.0.1:")
    # the address and the token, as a user would export them; the loopback switch comes from join_env
    env = {k: v for k, v in two_nodes.head.child_env().items() if k not in SINGLE_NODE_LOOPBACK}
    seconds = run(
        [
            "bash",
            str(ROOT / "scripts/train_grpo_multi_turn.sh"),
            "--profile",
            "cpu_smoke",
            "--address",
            two_nodes.address,
            "--logger",
            "console,file",
            f"data.train_files={work / 'demo/train.parquet'}",
            f"data.val_files={work / 'demo/test.parquet'}",
            f"actor_rollout_ref.model.path={work / 'policy'}",
            f"trainer.default_local_dir={work / 'ckpt'}",
            f"trainer.nnodes={NODES}",
            "trainer.n_gpus_per_node=1",
            "trainer.total_training_steps=1",
            "trainer.save_freq=1",
            "trainer.test_freq=-1",
        ],
        work / "train.log",
        timeout=600,
        env={**env, "VERL_FILE_LOGGER_PATH": str(work / "metrics.jsonl")},
    )
    log = (work / "train.log").read_text()
    assert f"joining the Ray cluster at {two_nodes.address}" in log
    (entry,) = map(json.loads, (work / "metrics.jsonl").read_text().splitlines())
    assert entry["step"] == 1
    assert entry["data"]["trainer/world_size"] == NODES, entry["data"]
    assert entry["data"]["trainer/rollout_replicas"] == NODES, entry["data"]
    actor = work / "ckpt" / "global_step_1" / "actor"
    assert sorted(p.name for p in actor.glob("model_world_size_*_rank_*.pt")) == [
        f"model_world_size_{NODES}_rank_{rank}.pt" for rank in range(NODES)
    ]

    driver = [sys.executable, str(ROOT / "tests/cluster_driver.py"), "--actors"]
    done = subprocess.run(driver, capture_output=True, text=True, timeout=120, env=two_nodes.head.child_env())
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["nodes"]) == NODES  # both nodes still alive

    def nodes_of(class_prefix: str, state: str | None = None) -> list[str]:
        """Nodes of the actors whose class (its name without the enclosing scopes) starts so."""
        return sorted(
            a["node"]
            for a in report["actors"]
            if a["class"].rpartition(".")[2].startswith(class_prefix) and state in (None, a["state"])
        )

    where = sorted((a["class"], a["state"], a["node"][:8]) for a in report["actors"])
    # the trainer's actors are dead by now (its driver exited); the table keeps their node
    assert nodes_of("WorkerDict") == report["nodes"], where  # one FSDP rank on each node
    assert nodes_of("vLLMHttpServer") == report["nodes"], where  # one rollout server on each node
    # the evaluator app outlives the trainer: its replicas, one on each node (Serve spreads them)
    assert nodes_of("ServeReplica:evaluator:", "ALIVE") == report["nodes"], where
    print(json.dumps({"train_s": round(seconds, 1)}))
