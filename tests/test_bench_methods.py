"""bench/bench_methods.py's figures on metrics as veRL's file logger writes them (the keys of a step
of the cobalt_sync trainer), its rounds and resumption, and the commands it runs: every method gets
the same model, batch, lengths, engine and evaluator, and its profile differs only in what it trains."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt.common.errors import ConfigError
from cobalt.train.learning_check import read_metrics
from cobalt.train.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_methods", ROOT / "bench/bench_methods.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["bench_methods"] = bench  # its dataclass looks its module up
spec.loader.exec_module(bench)


def step(step_s, gen_s, generate_s, wait_s, tokens, episodes, requests, turns=None):
    data = {
        "timing_s/step": step_s,
        "timing_s/gen": gen_s,
        "rollout/generate_s/mean": generate_s,
        "rollout/evaluator_wait_s/mean": wait_s,
        "rollout/generated_tokens": tokens,
        "rollout/episodes": episodes,
        bench.REQUESTS: requests,
    }
    return data if turns is None else {**data, "reward/turns/mean": turns}


def write(path: Path, steps: dict[int, dict]) -> Path:
    lines = [{"step": s, "data": d} for s, d in steps.items()]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_step_splits_the_rollout_by_the_share_of_time_an_episode_waits_for_the_evaluator():
    figures = bench.step_figures(step(30.0, 20.0, 3.0, 1.0, 400, 8, requests=21, turns=2.0))
    assert figures["evaluation_s"] == pytest.approx(5.0) and figures["generation_s"] == pytest.approx(15.0)
    assert figures["update_s"] == pytest.approx(10.0) and figures["tokens_per_s"] == pytest.approx(400 / 15.0)
    assert figures["requests"] == 21  # as counted, whatever the turns would suggest


def test_requests_are_counted_or_the_step_has_no_figures():
    data = step(30.0, 20.0, 3.0, 1.0, 400, 8, requests=0)
    del data[bench.REQUESTS]
    with pytest.raises(KeyError, match="evaluator_requests/count"):
        bench.step_figures(data)


def test_a_run_is_measured_after_its_first_step_per_example_and_per_problem(tmp_path):
    metrics = read_metrics(
        write(
            tmp_path / "m.jsonl",
            {
                0: {"val-core/x/acc/mean@8": 0.1},
                1: step(100, 60, 1, 1, 900, 8, 8),  # start-up: not measured
                2: step(10, 6, 1, 1, 100, 8, 8),
                3: step(14, 8, 1, 1, 300, 8, 10),
            },
        )
    )
    cobalt = bench.run_figures("cobalt", metrics, examples=2, prompts_per_problem=4.5)
    assert cobalt["steps"] == 2 and cobalt["step_s"] == 12 and cobalt["tokens"] == 200
    assert cobalt["example_s"] == 6 and cobalt["problem_s"] == 27  # a bandit prompt; all of a problem's
    assert cobalt["requests"] == 9 and cobalt["requests_per_example"] == 4.5
    online = bench.run_figures("grpo_mt", metrics, examples=2, prompts_per_problem=4.5)
    assert online["problem_s"] == online["example_s"] == 6  # an online example is a problem
    with pytest.raises(ValueError, match="no training step after the first"):
        bench.run_figures("cobalt", {0: {}, 1: step(10, 6, 1, 1, 100, 8, 8)}, 2, 1.0)


def test_rounds_give_a_median_and_its_range():
    got = bench.across_rounds([{"step_s": 12.0}, {"step_s": 10.0}, {"step_s": 30.0}])
    assert got == {"step_s": {"median": 12.0, "min": 10.0, "max": 30.0}}


def test_the_offline_cost_is_the_trajectories_stages_whole_and_amortized():
    """From the base run's stages.json, as the quickstart's stages write it (the commands beside the times)."""
    stages = {name: {"seconds": 10.0 * (i + 1)} for i, name in enumerate(bench.TRAJECTORY_STAGES)}
    stages["base model: deploy engine and evaluator"] = {
        "seconds": 90.0
    }  # once per head, like veRL's start-up
    stages["commands"] = {"trajectories_single": "python scripts/run_single_turn.py ..."}
    cost = bench.offline_cost(stages, problems=4, bandit_prompts=12)
    assert cost["whole_s"] == 60 and cost["per_problem_s"] == 15 and cost["per_example_s"] == 5
    with pytest.raises(KeyError, match="trajectories: hidden tests"):
        bench.offline_cost({name: {"seconds": 1.0} for name in bench.TRAJECTORY_STAGES[:2]}, 1, 1)


def test_ratios_of_medians_to_cobalt_and_the_table():
    def rounds(method, step_s):
        return bench.across_rounds(
            [bench.run_figures(method, {1: step(99, 9, 1, 1, 1, 1, 1), 2: step(s, 6, 1, 1, 100, 8, 8)}, 2, 2.0)
             for s in step_s]
        )  # fmt: skip

    summaries = {"cobalt": rounds("cobalt", [10, 12, 11]), "grpo_mt": rounds("grpo_mt", [25, 30, 20])}
    got = bench.ratios(summaries)
    assert got["cobalt"]["example_s"] == 1 and got["grpo_mt"]["example_s"] == pytest.approx(25 / 11)
    assert bench.ratios({"grpo_mt": summaries["grpo_mt"]}) == {}  # no baseline, no ratio
    offline = bench.offline_cost({name: {"seconds": 20.0} for name in bench.TRAJECTORY_STAGES}, 2, 6)
    text = bench.table(summaries, offline)
    assert "11.0 [10.0-12.0]" in text and "25.0 [20.0-30.0]" in text
    assert "grpo_mt / cobalt: example_s 2.27x" in text
    # COBALT's example with its share of the offline trajectories: 5.50 + 60 s / 6 prompts
    assert "60 s whole for 2 problems" in text and "share of them: 15.50 s" in text


def test_the_methods_take_every_place_in_turn():
    orders = [bench.rotated(list(bench.METHODS), r) for r in range(3)]
    for place in range(3):
        assert sorted(order[place] for order in orders) == sorted(bench.METHODS)


def test_the_methods_profiles_differ_only_in_what_they_train():
    """The main job's three GRPO profiles: the same lengths, batch, engine, optimizer and seeds."""
    trains = {
        "actor_rollout_ref.rollout.agent.agent_loop_config_path",
        "algorithm.adv_estimator",
        "reward.reward_manager.module.path",
        "reward.reward_manager.name",
        "trainer.experiment_name",
    }
    profiles = {m: load_profile(bench.profile_of(m, "quickstart")) for m in bench.METHODS}
    shared = [{k: v for k, v in p.overrides.items() if k not in trains} for p in profiles.values()]
    assert shared[0] == shared[1] == shared[2] and len(shared[0]) > 20
    assert len({(p.evaluator_config, json.dumps(p.env, sort_keys=True)) for p in profiles.values()}) == 1


def test_every_run_gets_the_same_model_batch_and_lengths(tmp_path):
    inputs = bench.Inputs(tmp_path / "model", tmp_path / "bandit", tmp_path / "online", 8, 30, 704)
    run = argparse.Namespace(address="127.0.0.1:6379", cfg=argparse.Namespace(train_profile="quickstart"))
    args = argparse.Namespace(problems=2, steps=6)
    cmds = {m: bench.train_command(m, inputs, run, tmp_path / f"r1_{m}", args) for m in bench.METHODS}

    def settings(cmd):
        return dict(item.split("=", 1) for item in cmd if "=" in item)

    for method, cmd in cmds.items():
        s = settings(cmd)
        assert cmd[cmd.index("--profile") + 1] == bench.profile_of(method, "quickstart")
        assert cmd[cmd.index("--address") + 1] == "127.0.0.1:6379"
        assert s["actor_rollout_ref.model.path"] == str(inputs.model)
        assert s["data.train_batch_size"] == s["actor_rollout_ref.actor.ppo_mini_batch_size"] == "2"
        # the prompt slot holds the longest bandit prompt for every method: no row is dropped
        assert s["data.max_prompt_length"] == "704" and s["actor_rollout_ref.rollout.max_model_len"] == "896"
        assert s["trainer.total_training_steps"] == "6" and s["trainer.save_freq"] == "-1"
    assert settings(cmds["cobalt"])["data.train_files"] == str(tmp_path / "bandit/train.parquet")
    assert settings(cmds["verpo_mt"])["data.train_files"] == str(tmp_path / "online/train.parquet")


def test_an_unfinished_run_is_set_aside_and_a_finished_one_kept(tmp_path):
    run_dir = tmp_path / "r1_cobalt"
    run_dir.mkdir()
    write(run_dir / "metrics.jsonl", {1: {"x": 1.0}, 2: {"x": 1.0}})
    assert bench.finished(run_dir, 2) and not bench.finished(run_dir, 3)
    bench.set_aside(run_dir)
    run_dir.mkdir()
    bench.set_aside(run_dir)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1_cobalt.incomplete-1", "r1_cobalt.incomplete-2"]


def test_out_resumes_only_a_bench_of_the_same_settings(tmp_path):
    settings = {"profile": "quickstart", "problems": 2, "steps": 6}
    bench.check_resumable(tmp_path / "new", settings)
    bench.check_resumable(tmp_path / "new", settings)  # the same bench: resumes
    with pytest.raises(ConfigError, match=r"other settings \(was, now\): \{'steps': \(6, 8\)\}"):
        bench.check_resumable(tmp_path / "new", {**settings, "steps": 8})
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine/notes.txt").write_text("a user's")
    with pytest.raises(ConfigError, match=r"holds no bench\.json"):
        bench.check_resumable(tmp_path / "mine", settings)
    assert (tmp_path / "mine/notes.txt").read_text() == "a user's"


def test_cli_help_and_bad_arguments(tmp_path):
    run = [sys.executable, str(ROOT / "bench/bench_methods.py")]
    out = subprocess.run([*run, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--rounds" in out.stdout and "--methods" in out.stdout
    bad = subprocess.run([*run, "--out", str(tmp_path), "--methods", "ppo"], capture_output=True, text=True)
    assert bad.returncode == 2 and "expected some of cobalt, grpo_mt, verpo_mt" in bad.stderr
    one = subprocess.run([*run, "--out", str(tmp_path), "--steps", "1"], capture_output=True, text=True)
    assert one.returncode == 2 and "at least 2" in one.stderr
    profile = subprocess.run(
        [*run, "--out", str(tmp_path / "o"), "--profile", "huge"], capture_output=True, text=True
    )
    assert profile.returncode == 2 and "huge" in profile.stderr and not (tmp_path / "o").exists()
