"""The real thing on CPU: veRL 0.9.1's main_ppo GRPO with the project's reward manager, reward
function and Ray Serve evaluator, on bandit prompts built by the data pipeline from the embedded
problems, with a tiny policy warmed up so that rewards vary within a group. Two FSDP ranks (gloo)
on two Ray nodes of one loopback cluster, two rollout replicas; three steps, a checkpoint of two
shards that veRL's model merger turns into the saved Hugging Face model, then a resumed run that
continues from it at the next step and the next batch of the dataloader -- asserted on the logged
metrics and rollouts. Last, the inference commands serve the merged model from two vLLM replicas
on Ray Serve, one on each node, both answering, and record every problem.

Multi-node: the launcher gets ``--address 127.0.0.1:PORT trainer.nnodes=2
trainer.n_gpus_per_node=1`` and the cluster's token, but not RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
(``cobalt.serve.cluster.join_env`` adds it for a loopback address; without it the trainer's
``ray.init`` would dial the machine's address instead of 127.0.0.1). The two FSDP workers (veRL's
``WorkerDict`` actors), the two vLLM rollout servers and the two evaluator replicas must sit one on
each node (GCS's actor table, which keeps dead actors with their node). The cluster is stopped at
the end and leaves no process and no temp dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from train_fixtures import ENV, demo_data_and_policy, run

from cobalt.common.jsonl import load_jsonl

pytest.importorskip("verl")
pytest.importorskip("vllm")
pytestmark = [pytest.mark.slow, pytest.mark.train]

ROOT = Path(__file__).resolve().parents[1]
NODES = 2  # one FSDP rank and one rollout replica on each


def metrics(path: Path) -> dict[int, dict]:
    return {entry["step"]: entry["data"] for entry in map(json.loads, path.read_text().splitlines())}


@pytest.fixture(scope="module")
def two_nodes():
    """A 2-node loopback cluster with its own token; one fake GPU slot per node (the CPU platform
    schedules FSDP ranks on "GPU"). Never the session's cluster that conftest exports as
    $RAY_ADDRESS: that one has no GPU slot, and veRL's resource check would refuse it."""
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


def launch(work: Path, cluster, name: str, *overrides: str) -> float:
    from cobalt.serve.cluster import SINGLE_NODE_LOOPBACK

    # the address and the token, as a user would export them; the loopback switch comes from join_env
    env = {k: v for k, v in cluster.head.child_env().items() if k not in SINGLE_NODE_LOOPBACK}
    cmd = [
        "bash",
        str(ROOT / "scripts/train_grpo_multi_turn.sh"),
        "--profile",
        "cpu_smoke",
        "--address",
        cluster.address,
        "--logger",
        "console,file",
        f"data.train_files={work / 'demo/train.parquet'}",
        f"data.val_files={work / 'demo/test.parquet'}",
        f"actor_rollout_ref.model.path={work / 'policy'}",
        f"trainer.default_local_dir={work / 'ckpt'}",
        f"trainer.nnodes={NODES}",
        "trainer.n_gpus_per_node=1",
        f"trainer.rollout_data_dir={work / 'rollouts'}",
        *overrides,
    ]
    seconds = run(
        cmd,
        work / f"{name}.log",
        timeout=600,
        env={**env, "VERL_FILE_LOGGER_PATH": str(work / f"{name}.jsonl")},
    )
    assert f"joining the Ray cluster at {cluster.address}" in (work / f"{name}.log").read_text()
    return seconds


def assert_one_of_each_on_every_node(cluster) -> None:
    """The FSDP ranks, rollout servers and evaluator replicas: one on each node (GCS actor table)."""
    driver = [sys.executable, str(ROOT / "tests/cluster_driver.py"), "--actors"]
    done = subprocess.run(driver, capture_output=True, text=True, timeout=120, env=cluster.head.child_env())
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


def rollout_prompts(rollout_dir: Path, step: int) -> list[str]:
    """The prompts of one step's rollouts (veRL's trainer.rollout_data_dir dump), sorted."""
    rows = map(json.loads, (rollout_dir / f"{step}.jsonl").read_text().splitlines())
    return sorted(row["input"] for row in rows)


def assert_merged_shards_equal_the_saved_model(actor: Path, out: Path) -> float:
    """veRL's model merger on the N shards gives the Hugging Face model saved beside them. The
    merger writes bfloat16 (veRL 0.9.1 casts every tensor), so the saved float32 model is
    compared after the same rounding: equal bit for bit."""
    import torch
    from safetensors.torch import load_file

    cmd = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp"]
    seconds = run([*cmd, "--local_dir", str(actor), "--target_dir", str(out)], out.parent / "merge.log", 300)
    merged, saved = load_file(out / "model.safetensors"), load_file(actor / "huggingface/model.safetensors")
    assert sorted(merged) == sorted(saved)
    for name, tensor in saved.items():
        assert torch.equal(merged[name], tensor.to(torch.bfloat16)), name
    return seconds


SPREAD_APP = "engine-spread"


def spread_engine_config(path: Path, node_cpus: int) -> Path:
    """configs/engine.yaml with two replicas, one on each node, under its own app name. A replica
    reserves 1 CPU for its actor and its vLLM worker's bundle; a bundle of more than half a node
    keeps two replicas off one node, with room left for the app's ingress and an evaluator replica."""
    config = yaml.safe_load((ROOT / "configs/engine.yaml").read_text())
    config["app_name"] = SPREAD_APP
    llm = config["llm"]
    llm["deployment_config"]["num_replicas"] = NODES
    llm["placement_group_config"] = {"bundle_per_worker": {"CPU": node_cpus // 2 + 1}}
    llm["runtime_env"]["env_vars"]["VLLM_CPU_KVCACHE_SPACE"] = "1"  # two engines on one machine
    llm["engine_kwargs"]["enable_log_requests"] = True  # "Added request ..." in its worker's log
    path.write_text(yaml.safe_dump(config))
    return path


def requests_per_node(cluster) -> list[int]:
    """Requests the vLLM engines of each node took: the "Added request" lines in its worker logs."""
    node_dirs = [cluster.temp_dir, *(cluster.node_dir(i) for i in range(1, cluster.nodes))]
    return [
        sum(log.read_text(errors="replace").count("Added request") for log in logs)
        for logs in (Path(d, "session_latest/logs").glob("worker-*") for d in node_dirs)
    ]


def inference_commands_on(model: Path, problems: Path, cluster, work: Path) -> float:
    """``run_single_turn.py`` then one feedback turn of ``run_multi_turn.py`` with ``model`` served
    by two engine replicas, one on each node of the cluster: every problem recorded, both
    replicas answered; their seconds."""
    config = spread_engine_config(work / "engine_spread.yaml", cluster.num_cpus)
    common = ["--engine", "serve", "--model", str(model), "--engine_config", str(config)]
    common += ["--address", cluster.address, "--evaluator", "local", "--max_tokens", "48"]
    single, multi = work / "single.jsonl", work / "multi.jsonl"
    script = lambda name: str(ROOT / "scripts" / f"{name}.py")  # noqa: E731
    seconds = run(
        [script("run_single_turn"), "-i", str(problems), "-o", str(single), "-n", "2", *common],
        work / "single_turn.log",
        timeout=600,
        env=cluster.head.child_env(),
    )
    seconds += run(
        [script("run_multi_turn"), "-i", str(single), "-o", str(multi), "--turns", "1", *common],
        work / "multi_turn.log",
        timeout=600,
        env=cluster.head.child_env(),
    )
    ids = sorted(r["id"] for r in load_jsonl(problems))
    for path in (single, multi):
        assert sorted(r["id"] for r in load_jsonl(path)) == ids, path
    assert all(r["usage"]["completion_tokens"] > 0 for r in load_jsonl(single))
    # (a conversation that passed at turn 0 asks for no feedback turn)
    assert sum(r["usage"]["completion_tokens"] for r in load_jsonl(multi)) > 0
    assert f"reusing the '{SPREAD_APP}' app already serving 'merged'" in (work / "multi_turn.log").read_text()
    driver = [sys.executable, str(ROOT / "tests/cluster_driver.py"), "--replicas", SPREAD_APP]
    where = subprocess.run(driver, capture_output=True, text=True, timeout=300, env=cluster.head.child_env())
    assert where.returncode == 0, where.stderr[-3000:]
    report = json.loads(where.stdout.strip().splitlines()[-1])
    engines = {name: node for name, node in report["replicas"].items() if "LLMServer" in name}
    assert sorted(engines.values()) == report["nodes"], report  # one vLLM replica on each node
    answered = requests_per_node(cluster)
    assert all(answered) and sum(answered) >= len(ids), answered  # and both answered requests
    return seconds


def test_grpo_on_two_nodes_learns_checkpoints_and_resumes(tmp_path, two_nodes):
    timings = demo_data_and_policy(tmp_path)

    # Three steps, of which at least two must learn: with a tiny policy sampled at temperature 1,
    # one step's whole batch can occasionally score the same (e.g. every response malformed).
    timings["run_1"] = launch(tmp_path, two_nodes, "run1", "trainer.total_training_steps=3")
    first = metrics(tmp_path / "run1.jsonl")
    assert sorted(first) == [1, 2, 3]
    learning_steps = [
        step
        for step, m in first.items()
        # rewards vary within groups, so GRPO advantages and the policy-gradient loss are non-zero
        if m["critic/score/max"] > m["critic/score/min"]
        and max(abs(m["critic/advantages/max"]), abs(m["critic/advantages/min"])) > 0
        and m["actor/pg_loss"] != 0
    ]
    assert len(learning_steps) >= 2, {
        step: {k: v for k, v in m.items() if k.startswith(("critic/", "actor/pg"))}
        for step, m in first.items()
    }
    for m in first.values():
        # the reward manager's extras reached the logger (cobalt_sync trainer)
        assert 0 <= m["reward/pass_rate/mean"] <= 1 and m["reward/evaluator_failure/count"] == 0, m
        assert m["trainer/world_size"] == NODES and m["trainer/rollout_replicas"] == NODES, m
    assert any(key.startswith("val-core/code_taco_verified/acc") for key in first[2])  # validation ran
    checkpoint = tmp_path / "ckpt"
    assert (checkpoint / "latest_checkpointed_iteration.txt").read_text().strip() == "3"
    assert (checkpoint / "global_step_2" / "actor").is_dir()  # save_freq 2, and the last step
    # every profile saves the policy in Hugging Face format: what the evaluation commands load
    from transformers import AutoConfig, AutoModelForCausalLM

    actor = checkpoint / "global_step_2" / "actor"
    trained = AutoModelForCausalLM.from_pretrained(actor / "huggingface")
    assert trained.config.vocab_size == AutoConfig.from_pretrained(tmp_path / "policy").vocab_size
    assert sorted(p.name for p in actor.glob("model_world_size_*_rank_*.pt")) == [
        f"model_world_size_{NODES}_rank_{rank}.pt" for rank in range(NODES)
    ]
    assert_one_of_each_on_every_node(two_nodes)
    timings["merge"] = assert_merged_shards_equal_the_saved_model(actor, tmp_path / "merged")

    timings["run_2"] = launch(
        tmp_path,
        two_nodes,
        "run2",
        "trainer.total_training_steps=4",
        "trainer.save_freq=4",
        "trainer.test_freq=-1",
    )
    second = metrics(tmp_path / "run2.jsonl")
    assert sorted(second) == [4], f"the resumed run should continue at step 4, logged {sorted(second)}"
    assert second[4]["training/global_step"] == 4
    # The dataloader resumed too: step 4 opens the second epoch (3 batches of 4 in an epoch). A
    # loader restarted from scratch would replay the first epoch's first batch, step 1's prompts.
    assert rollout_prompts(tmp_path / "rollouts", 4) != rollout_prompts(tmp_path / "rollouts", 1)
    assert (checkpoint / "latest_checkpointed_iteration.txt").read_text().strip() == "4"
    timings["inference_on_merged"] = inference_commands_on(
        tmp_path / "merged", tmp_path / "demo/problems/dev.jsonl", two_nodes, tmp_path
    )
    print(
        json.dumps(
            {
                "timings_s": timings,
                "step_1": {
                    k: first[1][k]
                    for k in sorted(first[1])
                    if k.startswith(("critic/", "actor/pg", "reward/"))
                },
            }
        )
    )
