"""bench/bench_methods.py's figures on a metrics file as veRL's file logger writes it (the keys of
a step of the cobalt_sync trainer), and the commands it runs: every method gets the same engine,
evaluator, model and batch arithmetic."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt.train.learning_check import read_metrics

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_methods", ROOT / "bench/bench_methods.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def step(step_s, gen_s, generate_s, wait_s, tokens, episodes, turns=None, score=0.5):
    data = {
        "timing_s/step": step_s,
        "timing_s/gen": gen_s,
        "timing_s/update_actor": step_s - gen_s - 1.0,
        "rollout/generate_s/mean": generate_s,
        "rollout/evaluator_wait_s/mean": wait_s,
        "rollout/generated_tokens": tokens,
        "rollout/episodes": episodes,
        "critic/score/mean": score,
    }
    return data if turns is None else {**data, "reward/turns/mean": turns}


def write(path: Path, steps: dict[int, dict]) -> Path:
    lines = [{"step": s, "data": d} for s, d in steps.items()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_step_splits_the_rollout_by_the_share_of_time_an_episode_waits_for_the_evaluator():
    figures = bench.step_figures("grpo_mt", step(30.0, 20.0, 3.0, 1.0, 400, 8, turns=2.0))
    assert figures["evaluation_s"] == pytest.approx(5.0) and figures["generation_s"] == pytest.approx(15.0)
    assert figures["update_s"] == pytest.approx(10.0)
    assert figures["tokens_per_s"] == pytest.approx(400 / 15.0)
    assert figures["requests"] == 8 * 3  # two public-test runs and one hidden per episode


def test_evaluator_requests_per_method():
    assert bench.evaluator_requests("cobalt", 8, 1.0) == 8
    assert bench.evaluator_requests("grpo_mt", 8, 2.5) == 8 * 3.5
    assert bench.evaluator_requests("verpo_mt", 8, 2.5) == 8 * 5.0


def test_means_over_the_training_steps_per_example_and_per_problem(tmp_path):
    metrics = read_metrics(
        write(
            tmp_path / "m.jsonl",
            {0: {"val-core/x/acc/mean@8": 0.1}, 1: step(10, 6, 1, 1, 100, 8), 2: step(14, 8, 1, 1, 300, 8)},
        )
    )
    cobalt = bench.summarize("cobalt", metrics, examples=2, prompts_per_problem=4.5)
    assert cobalt["steps"] == 2 and cobalt["step_s"] == 12 and cobalt["tokens"] == 200
    assert cobalt["example_s"] == 6 and cobalt["problem_s"] == 27  # a bandit prompt; all of a problem's
    online = bench.summarize("grpo_mt", metrics, examples=2, prompts_per_problem=4.5)
    assert online["problem_s"] == online["example_s"] == 6  # an online example is a problem
    with pytest.raises(ValueError, match="no training step"):
        bench.summarize("cobalt", {0: {}}, 2, 1.0)


def test_ratios_to_cobalt_and_the_table(tmp_path):
    base = bench.summarize("cobalt", {1: step(10, 6, 1, 1, 100, 8)}, 2, 1.0)
    slow = bench.summarize("grpo_mt", {1: step(25, 18, 2, 1, 300, 8, turns=2.0)}, 2, 1.0)
    got = bench.ratios({"cobalt": base, "grpo_mt": slow})
    assert got["cobalt"]["example_s"] == 1 and got["grpo_mt"]["example_s"] == 2.5
    assert got["grpo_mt"]["requests"] == 3  # 24 requests against 8
    assert bench.ratios({"grpo_mt": slow}) == {}  # no baseline, no ratio
    text = bench.table({"cobalt": base, "grpo_mt": slow})
    assert "grpo_mt / cobalt: example_s 2.50x" in text and "s per example (paper)" in text


def test_every_method_gets_the_same_engine_evaluator_model_and_batches(tmp_path):
    args = argparse.Namespace(problems=2, samples=4, steps=2)
    inputs = {"rows": str(tmp_path / "rows"), "model": str(tmp_path / "model")}
    cmds = {m: bench.method_command(m, "tiny", inputs, args, tmp_path / m) for m in bench.METHODS}

    def settings(cmd):
        return dict(item.split("=", 1) for item in cmd if "=" in item)

    shared = {m: {k: v for k, v in settings(c).items() if k in bench.SHARED} for m, c in cmds.items()}
    assert (
        len(shared["cobalt"]) == len(bench.SHARED)
        and shared["cobalt"] == shared["grpo_mt"] == shared["verpo_mt"]
    )
    for cmd in cmds.values():
        s = settings(cmd)
        assert cmd[cmd.index("--evaluator-config") + 1] == "evaluator_learning_check"
        assert (
            s["actor_rollout_ref.model.path"] == inputs["model"] and s["actor_rollout_ref.rollout.n"] == "4"
        )
        assert s["data.train_batch_size"] == "2" and s["trainer.total_training_steps"] == "2"
        assert all(8 % int(s[key]) == 0 for key in bench.MICRO)  # micro-batches divide 2 x 4 rows
    assert settings(cmds["cobalt"])["data.train_files"].endswith("cobalt.parquet")
    assert "actor_rollout_ref.rollout.agent.agent_loop_config_path" not in settings(cmds["cobalt"])
    assert settings(cmds["grpo_mt"])["data.train_files"].endswith("online.parquet")
    assert "reward.reward_manager.name" not in settings(cmds["grpo_mt"])  # the profile's GRPO-MT manager
    assert settings(cmds["verpo_mt"])["reward.reward_manager.name"] == "VerpoRewardManager"


def test_cli_help_and_bad_methods(tmp_path):
    run = [sys.executable, str(ROOT / "bench/bench_methods.py")]
    out = subprocess.run([*run, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--problems" in out.stdout and "--methods" in out.stdout
    bad = subprocess.run([*run, "--out", str(tmp_path), "--methods", "ppo"], capture_output=True, text=True)
    assert bad.returncode == 2 and "expected some of cobalt, grpo_mt, verpo_mt" in bad.stderr


def test_figures_of_a_recorded_run():
    """tests/data/bench_methods/: the bench's keys of the run in docs/benchmarks.md (2 steps each)."""
    recorded = ROOT / "tests/data/bench_methods"
    got = {m: bench.summarize(m, read_metrics(recorded / f"{m}.jsonl"), 2, 2.0) for m in bench.METHODS}
    assert got["cobalt"]["step_s"] == pytest.approx(10.83, abs=0.01)
    assert got["grpo_mt"]["example_s"] / got["cobalt"]["example_s"] == pytest.approx(1.24, abs=0.01)
    for s in got.values():
        assert s["generation_s"] + s["evaluation_s"] + s["update_s"] == pytest.approx(s["step_s"])
    assert got["cobalt"]["requests"] == 8 and got["grpo_mt"]["requests"] == 8 * (2.75 + 1)
