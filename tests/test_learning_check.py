"""The learning check: the verdict module on made-up metrics files (fast, no veRL), then the real
check -- ``scripts/learning_check.sh``, COBALT GRPO on CPU -- which must pass, and the same run with
the rewards handed to the wrong responses, which must fail.

Every run of the check, learning and deliberately broken, with its numbers: docs/benchmarks.md
("The learning check"). The margins sit between five runs without learning (lr = 0) and five
learning runs (bench/calibrate_learning_check.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from proc_helpers import processes_using, wait_until

from cobalt.train.learning_check import (
    CRITERIA,
    Criteria,
    Unjudgeable,
    judge,
    main,
    read_metrics,
    read_rollouts,
    report,
)
from cobalt.train.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]
VAL = "val-core/code_taco_verified/acc/mean@4"


def write_metrics(path: Path, rewards: list[float], val: dict[int, float], **extra) -> Path:
    """A metrics file as veRL's file logger writes it: validation before training at step 0 on
    its own line, then one line per step (the last step's validation in the same line)."""
    lines = []
    if 0 in val:
        lines.append({"step": 0, "data": {VAL: val[0], "val-aux/code_taco_verified/acc/std@4": 0.1}})
    for step, reward in enumerate(rewards, 1):
        data = {"critic/score/mean": reward, "critic/score/max": 1.0, **extra}
        if step in val:
            data[VAL] = val[step]
        lines.append({"step": step, "data": data})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def write_rollouts(directory: Path, steps: list[dict[str, list[float]]]) -> Path:
    """veRL's rollout dump: ``<step>.jsonl``, a line per response (``{prompt: [scores]}`` per step)."""
    directory.mkdir()
    for step, prompts in enumerate(steps, 1):
        rows = [
            {"input": p, "output": "x", "score": s, "step": step} for p, ss in prompts.items() for s in ss
        ]
        (directory / f"{step}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return directory


# ---- the verdict ----------------------------------------------------------------------------------


def test_a_gain_from_the_data_order_alone_is_not_a_gain_when_paired_by_prompt(tmp_path):
    """No prompt's reward changes, but the first steps drew the hard prompt and the last steps the
    easy one: unpaired window means gain +0.75, the paired comparison sees 0 and fails."""
    hard, easy = {"hard": [-0.5, -0.5]}, {"easy": [0.5, 0.5]}
    order = [hard, hard, {**hard, **easy}, hard, easy, {**hard, **easy}, easy, easy]
    rewards = [sum(sum(v) for v in s.values()) / sum(len(v) for v in s.values()) for s in order]
    metrics = read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, {0: 0.0, 8: 0.5}))
    rollouts = read_rollouts(write_rollouts(tmp_path / "rollouts", order))
    judged = Criteria(margin=0.03)
    assert judge(metrics, judged).gain == pytest.approx(0.75) and judge(metrics, judged).passed
    verdict = judge(metrics, judged, rollouts)
    assert verdict.gain == pytest.approx(0.0) and verdict.paired_prompts == 2 and not verdict.passed
    assert "paired over 2 prompts" in verdict.reasons[0]


def test_a_paired_gain_is_each_prompts_own_change_averaged(tmp_path):
    early = {"a": [0.0, 0.0], "b": [-1.0, 0.0], "only early": [1.0]}
    late = {"a": [1.0, 0.0], "b": [0.0, 0.5], "only late": [-1.0]}
    rollouts = read_rollouts(write_rollouts(tmp_path / "r", [early] * 2 + [late] * 2))
    metrics = read_metrics(write_metrics(tmp_path / "m.jsonl", [0.0] * 4, {0: 0.0, 4: 0.2}))
    verdict = judge(metrics, Criteria(window=2, margin=0.5), rollouts)
    # a: 0 -> 0.5, b: -0.5 -> 0.25; prompts in one window only are left out
    assert verdict.paired_prompts == 2 and verdict.gain == pytest.approx((0.5 + 0.75) / 2)
    assert verdict.first_mean == pytest.approx(-0.25) and verdict.last_mean == pytest.approx(0.375)
    assert verdict.passed


def test_unreadable_rollouts_name_the_file_and_line(tmp_path):
    with pytest.raises(Unjudgeable, match="no rollout dump"):
        read_rollouts(tmp_path / "missing")
    bad = write_rollouts(tmp_path / "bad", [{"a": [0.0]}, {"a": [0.0]}])
    (bad / "2.jsonl").write_text('{"input": "a", "score": 0.5}\n{"input": "a"}\n')
    with pytest.raises(Unjudgeable, match=r"2\.jsonl:2: not a rollout line"):
        read_rollouts(bad)
    (bad / "2.jsonl").write_text('{"input": "a", "score": "high"}\n')
    with pytest.raises(Unjudgeable, match=r"2\.jsonl:1: field score is 'high'"):
        read_rollouts(bad)
    metrics = read_metrics(write_metrics(tmp_path / "m.jsonl", [0.0] * 8, {0: 0.0, 8: 0.2}))
    short = read_rollouts(write_rollouts(tmp_path / "short", [{"a": [0.0]}] * 7))
    with pytest.raises(Unjudgeable, match="rollouts of 7 steps"):
        judge(metrics, rollouts=short)


def test_rising_reward_and_validation_pass(tmp_path):
    rewards = [-0.2, -0.1, -0.15, -0.1, 0.0, 0.1, 0.2, 0.1, 0.2, 0.3]
    verdict = judge(read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, {0: 0.1, 10: 0.3})))
    assert verdict.passed, verdict.reasons
    assert verdict.first_mean == pytest.approx(-0.1375)
    assert verdict.last_mean == pytest.approx(0.2)
    assert verdict.gain == pytest.approx(0.3375)
    assert verdict.val_gain == pytest.approx(0.2)
    assert list(verdict.rewards) == list(range(1, 11))


def test_the_training_reward_is_reported_not_judged_by_default(tmp_path):
    """On 8 steps of 8 prompts the training reward is too noisy to gate on: in CI a learning run
    gained -0.020 in it (paired; -0.044 unpaired, as here) while its validation rose +0.188."""
    rewards = [0.003, 0.045, -0.065, 0.143, -0.008, 0.075, -0.054, -0.064]
    metrics = read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, {0: 0.172, 8: 0.360}))
    verdict = judge(metrics)
    assert verdict.passed and verdict.gain == pytest.approx(-0.044, abs=1e-3)
    assert "(not judged" in report(verdict) and "LEARNED: the reward on the training prompts" in report(
        verdict
    )


def test_flat_reward_fails_with_a_reward_margin(tmp_path):
    rewards = [0.0, 0.1, -0.1, 0.05] * 3
    verdict = judge(
        read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, {0: 0.1, 12: 0.5})), Criteria(margin=0.03)
    )
    assert not verdict.passed
    assert len(verdict.reasons) == 1 and "reward gain" in verdict.reasons[0]


def test_rising_reward_with_flat_validation_fails(tmp_path):
    rewards = [-0.5] * 4 + [0.5] * 4
    verdict = judge(read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, {0: 0.2, 8: 0.22})))
    assert not verdict.passed
    assert (
        len(verdict.reasons) == 1
        and "reward on the training prompts at temperature 0.6: gain" in verdict.reasons[0]
    )


def test_one_lucky_last_step_is_not_enough(tmp_path):
    """Window means: a single high step at the end does not carry the check."""
    rewards = [0.0] * 11 + [0.5]
    verdict = judge(
        read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, {0: 0.0, 12: 0.5})),
        Criteria(window=4, margin=0.15),
    )
    assert verdict.gain == pytest.approx(0.125) and not verdict.passed


def test_margins_are_inclusive_bounds(tmp_path):
    rewards = [0.0] * 4 + [0.25] * 4
    metrics = read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, {0: 0.0, 8: 0.125}))
    assert judge(metrics, Criteria(margin=0.25, val_margin=0.125)).passed
    assert not judge(metrics, Criteria(margin=0.2501, val_margin=0.125)).passed
    assert not judge(metrics, Criteria(margin=0.25, val_margin=0.1251)).passed


def test_lines_of_one_step_are_merged_and_non_numbers_ignored(tmp_path):
    path = tmp_path / "m.jsonl"
    lines = [{"step": 0, "data": {VAL: 0.0}}]
    lines += [{"step": s, "data": {"critic/score/mean": 0.1 * s}} for s in range(1, 9)]
    lines += [{"step": 8, "data": {VAL: 0.4, "val-core/other/acc/mean@4": 0.2, "note": "x"}}]
    lines += [{"step": 9, "data": {"critic/score/mean": float("nan")}}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    metrics = read_metrics(path)
    assert metrics[8]["critic/score/mean"] == pytest.approx(0.8) and metrics[8][VAL] == 0.4
    verdict = judge(metrics, Criteria(window=4, margin=0.4, val_margin=0.3))
    assert list(verdict.rewards) == list(range(1, 9))  # the NaN step is not a reward
    assert verdict.validation == {0: 0.0, 8: pytest.approx(0.3)}  # both data sources, averaged
    assert verdict.passed


@pytest.mark.parametrize(
    "rewards, val, message",
    [
        ([0.1] * 7, {0: 0.0, 7: 1.0}, "needs at least 8"),
        ([0.1] * 8, {8: 1.0}, "before training"),
        ([0.1] * 8, {}, "before training"),
    ],
)
def test_too_little_to_judge(tmp_path, rewards, val, message):
    with pytest.raises(Unjudgeable, match=message):
        judge(read_metrics(write_metrics(tmp_path / "m.jsonl", rewards, val)))


def test_unreadable_files(tmp_path):
    with pytest.raises(Unjudgeable, match="no metrics file"):
        read_metrics(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"step": 1, "data": {}}\nnot json\n')
    with pytest.raises(Unjudgeable, match=r"bad\.jsonl:2"):
        read_metrics(tmp_path / "bad.jsonl")


def test_cli_exit_status_report_and_json(tmp_path, capsys):
    good = write_metrics(tmp_path / "good.jsonl", [-0.3] * 4 + [0.3] * 4, {0: 0.0, 8: 0.2})
    flat = write_metrics(tmp_path / "flat.jsonl", [0.0] * 8, {0: 0.0, 8: 0.2})
    assert main([str(good), "--json", str(tmp_path / "v.json")]) == 0
    out = capsys.readouterr().out
    assert "step   1  -0.3000" in out and "step   8  +0.3000" in out
    assert "gain +0.6000" in out and "LEARNED" in out
    saved = json.loads((tmp_path / "v.json").read_text())
    assert saved["passed"] is True and saved["gain"] == pytest.approx(0.6)
    assert main([str(flat)]) == 0  # the training reward is reported, not judged
    assert main([str(flat), "--margin", "0.03"]) == 1
    assert "NOT LEARNED" in capsys.readouterr().out
    assert main([str(flat), "--margin", "0", "--val-margin", "0.2"]) == 0
    assert main([str(flat), "--val-margin", "0.21"]) == 1
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    assert main([str(good), "--window", "5"]) == 2
    flat_rollouts = write_rollouts(tmp_path / "rollouts", [{"p": [0.0]}] * 8)
    assert main([str(good), "--rollouts", str(flat_rollouts), "--margin", "0.03"]) == 1  # paired: no gain
    assert "paired over 1 prompts: gain +0.0000" in capsys.readouterr().out


def test_the_report_shows_each_steps_evaluator_failures(tmp_path, capsys):
    """A step whose responses failed for want of the evaluator says so beside its reward: a CI run
    of GRPO-MT's check that did not learn had two steps far below the others, and nothing said why."""
    metrics = write_metrics(tmp_path / "m.jsonl", [0.0] * 8, {0: 0.0, 8: 0.0})
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    for line in lines[1:]:
        line["data"]["reward/evaluator_failure/count"] = 3.0 if line["step"] == 4 else 0.0
    metrics.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main([str(metrics), "--json", str(tmp_path / "v.json")]) == 1
    out = capsys.readouterr().out
    assert "step   4  +0.0000  (3 scored as failing for want of the evaluator)" in out
    assert "step   3  +0.0000\n" in out  # a step without failures: the reward alone
    saved = json.loads((tmp_path / "v.json").read_text())
    assert saved["evaluator_failures"]["4"] == 3.0 and saved["evaluator_failures"]["1"] == 0.0


def test_each_method_is_judged_on_its_own_calibrated_criteria(tmp_path, capsys):
    """GRPO-MT's runs without learning spread wider than COBALT's on the training prompts, so its
    check has its own margin there, and also passes on the paired training reward, whose null and
    learning runs lie far apart (bench/calibrate_learning_check.py --method grpo_mt); an explicit
    margin still wins."""
    cobalt, grpo_mt = CRITERIA["cobalt"], CRITERIA["grpo_mt"]
    assert grpo_mt.val_margin > cobalt.val_margin == Criteria().val_margin and cobalt.margin is None
    between = (cobalt.val_margin + grpo_mt.val_margin) / 2
    flat = write_metrics(tmp_path / "flat.jsonl", [0.0] * 8, {0: 0.0, 8: between})
    assert main([str(flat)]) == 0  # COBALT's, the default
    assert main([str(flat), "--method", "cobalt"]) == 0
    assert main([str(flat), "--method", "grpo_mt"]) == 1
    out = capsys.readouterr().out
    assert (
        f"is below the margin {grpo_mt.val_margin}" in out and f"is below the margin {grpo_mt.margin}" in out
    )
    assert main([str(flat), "--method", "grpo_mt", "--val-margin", str(cobalt.val_margin)]) == 0
    # the training reward alone passes GRPO-MT's check; COBALT's reports it, does not judge it
    rising = write_metrics(tmp_path / "rising.jsonl", [0.0] * 4 + [0.02] * 4, {0: 0.0, 8: 0.0})
    capsys.readouterr()
    assert main([str(rising), "--method", "grpo_mt"]) == 0
    assert "LEARNED: the training reward or the reward on the training prompts" in capsys.readouterr().out
    assert main([str(rising), "--method", "cobalt"]) == 1
    assert main([str(rising), "--method", "grpo_mt", "--margin", "0.03"]) == 1
    # ... unless the reward on the training prompts fell past the floor (a policy collapsed at
    # temperature 0.6), not when it dipped within the noise of runs at lr 0 (CI, 2026-12-05: paired
    # +0.100 and -0.011 there failed the first seed under a floor of 0)
    collapsed = write_metrics(tmp_path / "collapsed.jsonl", [0.0] * 4 + [0.02] * 4, {0: 0.3, 8: 0.05})
    capsys.readouterr()
    assert main([str(collapsed), "--method", "grpo_mt"]) == 1
    assert f"past the floor -{grpo_mt.val_floor}" in capsys.readouterr().out
    dipped = write_metrics(tmp_path / "dipped.jsonl", [-0.08] * 4 + [0.02] * 4, {0: 0.245, 8: 0.234})
    assert main([str(dipped), "--method", "grpo_mt"]) == 0
    assert 0 < grpo_mt.val_floor < 0.25  # the collapse fell 0.25


def test_the_sign_flipped_estimator_is_grpos_advantage_negated():
    """tests/broken_advantage.py (the second breakage the check was run against)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("verl")
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests"))
    import broken_advantage  # noqa: F401  (registers grpo_sign_flipped)
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, get_adv_estimator_fn

    rewards = torch.zeros(4, 3)
    rewards[:, -1] = torch.tensor([1.0, 0.0, 0.5, -1.0])
    mask, index = torch.ones(4, 3), np.array(["a", "a", "b", "b"])
    flipped, _ = get_adv_estimator_fn("grpo_sign_flipped")(rewards, mask, index=index, config=None)
    true, _ = compute_grpo_outcome_advantage(rewards, mask, index)
    assert torch.equal(flipped, -true) and true[0, 0] > 0  # the better response of each group loses


def test_cli_help():
    out = subprocess.run(
        [sys.executable, "-m", "cobalt.train.learning_check", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "--margin" in out.stdout and "metrics" in out.stdout


def test_tiny_policy_is_warmed_up_with_the_tokenizer_the_rollout_loads(tmp_path):
    """The warm-up fine-tunes with the tokenizer as vLLM and veRL load it from the policy directory
    (with config.json there AutoTokenizer picks the Qwen2 class, which tokenizes differently from
    the object the BPE trainer returned; a policy trained on the other tokenization writes noise)."""
    from transformers import AutoTokenizer

    from cobalt.train.tiny_policy import WarmUpOptions, build_model, build_tokenizer, loaded_tokenizer

    texts = [
        "n = int(input())\nprint(sum(map(int, input().split())) % 1000000007)\n",
        "Read 12345, print it.",
    ] * 20
    opts = WarmUpOptions(vocab_size=300)
    tokenizer = loaded_tokenizer(build_tokenizer(texts, tmp_path, opts.vocab_size), tmp_path, opts)
    build_model(tokenizer, opts).save_pretrained(tmp_path)  # what warm_up leaves behind
    rollout = AutoTokenizer.from_pretrained(tmp_path)
    for text in texts[:2] + ["  x  =  [ 1,2 ]\n\n\tprint( x )"]:
        assert tokenizer(text)["input_ids"] == rollout(text)["input_ids"]


def test_the_checks_evaluator_gives_the_default_evaluators_verdicts_on_its_problems():
    """configs/evaluator_learning_check.yaml judges a test at a fraction of the default CPU limit:
    on every right and wrong program of the check's problems, each test's verdict is the same."""
    from cobalt.data.embedded.problems import load_problems
    from cobalt.sandbox import default_config, evaluate

    check = load_profile("learning_check")
    fast, default = default_config(check.evaluator_config), default_config()
    assert fast.test_timeout_s < default.test_timeout_s
    for problem in load_problems()[: check.prepare["demo_data"]["limit"]]:
        tests = {k: problem["public_tests"][k] + problem["hidden_tests"][k] for k in ("inputs", "outputs")}
        for code in problem["solutions"] + [w["code"] for w in problem["wrong_solutions"]]:
            verdicts = [evaluate(code, tests, cfg)["passing"] for cfg in (fast, default)]
            assert verdicts[0] == verdicts[1], (problem["id"], code[:200])


def test_the_grpo_mt_checks_rows_are_the_demo_problems_and_its_policy_the_cobalt_checks(
    tmp_path, monkeypatch
):
    """The launcher prepares the GRPO-MT check: the demo where COBALT's check has it, the tiny policy
    warmed up on the demo's bandit prompts with the same settings, one online row per problem."""
    from cobalt.train import launch

    demo = tmp_path / "demo"
    (demo / "problems").mkdir(parents=True)
    tests = json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]})
    problem = {
        "id": "p1",
        "instruction": "Print n + 1.",
        "public_test_cases": tests,
        "hidden_test_cases": tests,
        "test_cases": json.dumps({"inputs": ["1\n", "1\n"], "outputs": ["2\n", "2\n"]}),
    }
    for split in ("train", "dev"):
        (demo / "problems" / f"{split}.jsonl").write_text(json.dumps(problem) + "\n")
    ran = []
    monkeypatch.setattr(launch, "_run_step", lambda what, cmd: ran.append(cmd))
    online, cobalt = load_profile("learning_check_grpo_mt"), load_profile("learning_check")
    overrides = [
        f"data.train_files={demo}/online/train.parquet",
        f"actor_rollout_ref.model.path={tmp_path}/p",
    ]
    launch.prepare(online, overrides)
    demo_cmd, warm_cmd = ran
    assert demo_cmd[demo_cmd.index("--out") + 1] == str(demo)  # not demo/online
    assert warm_cmd[warm_cmd.index("--data") + 1] == str(demo / "train.parquet")
    assert online.prepare["tiny_policy"] == cobalt.prepare["tiny_policy"]
    import pandas as pd

    rows = pd.read_parquet(demo / "online" / "train.parquet")
    assert list(rows["agent_name"]) == ["cobalt_code_repair"]
    assert rows["extra_info"][0]["public_test_cases"] == tests
    assert rows["reward_model"][0]["ground_truth"] == problem["test_cases"]  # all tests, as COBALT's rows


def test_the_check_refuses_a_method_it_does_not_know(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "LEARNING_CHECK_DIR": str(out), "LEARNING_CHECK_METHOD": "ppo"}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts/learning_check.sh")], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "expected cobalt or grpo_mt" in proc.stderr and not out.exists()


def test_inputs_that_are_no_earlier_checks_are_refused(tmp_path):
    out, inputs = tmp_path / "run", tmp_path / "not_a_check"
    (inputs / "demo").mkdir(parents=True)
    env = {**os.environ, "LEARNING_CHECK_DIR": str(out), "LEARNING_CHECK_INPUTS": str(inputs)}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts/learning_check.sh")], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2 and f"LEARNING_CHECK_INPUTS={inputs} holds no" in proc.stderr
    assert not (out / "train.log").exists()


# ---- the real check: COBALT GRPO on CPU ---------------------------------------------------------

CHECK_ENV = {"WANDB_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}


def run_check(
    out: Path, *overrides: str, method: str = "cobalt", inputs: Path | None = None, seed: int = 1
) -> tuple[subprocess.CompletedProcess, dict]:
    """``bash scripts/learning_check.sh`` into ``out`` on its own private Ray head (never the test
    session's cluster, which has no GPU slot for veRL); its output and the saved verdict. With
    ``inputs`` (an earlier check's directory) it takes that check's demo data and policy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_TOKEN"))}
    env |= {**CHECK_ENV, "LEARNING_CHECK_DIR": str(out), "LEARNING_CHECK_METHOD": method}
    env["LEARNING_CHECK_SEED"] = str(seed)
    if inputs is not None:
        env["LEARNING_CHECK_INPUTS"] = str(inputs)
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts/learning_check.sh"), *overrides],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=2400,  # measured 10 min on 2 cores (8 steps of 35-80 s, ~3 min of start-up); room for a busy CI
    )
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    verdict = out / "verdict.json"
    return proc, json.loads(verdict.read_text()) if verdict.exists() else {}


# the check cut to a cheap step (2 prompts x 16 responses: one micro-batch of the profile's 32)
ONE_CHEAP_STEP = (
    "data.train_batch_size=2",
    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "actor_rollout_ref.actor.ppo_epochs=1",
    "trainer.val_before_train=false",
)


def random_policy_inputs(work: Path) -> list[str]:
    """Overrides pointing the check at demo data and a random tiny policy (its tokenizer trained on
    the demo prompts), so that the launcher prepares nothing: a run killed after its first step
    needs a step, not learning, and the check's own warm-up costs about 70 CPU-seconds."""
    train = work / "inputs/demo/train.parquet"
    demo = [sys.executable, "-m", "cobalt.data.demo", "--out", str(train.parent), "--limit", "12"]
    policy = [
        sys.executable,
        "-m",
        "cobalt.train.tiny_policy",
        "random",
        "--out",
        str(work / "inputs/policy"),
    ]
    for cmd in (demo, [*policy, "--data", str(train)]):
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return [
        f"data.train_files={train}",
        f"data.val_files={train}",
        f"actor_rollout_ref.model.path={work / 'inputs/policy'}",
    ]


def ray_head_of(train_log: Path) -> str | None:
    """The temp dir of the private Ray head the launcher says it started (None before that)."""
    found = re.search(r"RAY_AUTH_TOKEN_PATH=(\S+)/auth_token", train_log.read_text(errors="replace"))
    return found.group(1) if found else None


@pytest.mark.slow
@pytest.mark.train
def test_a_killed_check_leaves_no_trainer_and_no_ray_head_behind(tmp_path):
    """SIGKILL of the script (what a CI timeout does) once left the trainer and its Ray head
    running beside everything after it. Killed once the trainer is ready to fit -- veRL's workers,
    the rollout servers, the evaluator and the head all up -- nothing of the run may outlive it:
    no process naming the output dir, none of the head's (raylet, GCS, Ray workers)."""
    pytest.importorskip("verl")
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_TOKEN"))}
    script = subprocess.Popen(
        ["bash", str(ROOT / "scripts/learning_check.sh"), *ONE_CHEAP_STEP, *random_policy_inputs(tmp_path)],
        cwd=ROOT,
        env={**env, **CHECK_ENV, "LEARNING_CHECK_DIR": str(out)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    head = None
    try:
        ready = lambda: READY_TO_FIT in log_text(out / "train.log")  # noqa: E731
        assert wait_until(lambda: script.poll() is not None or ready(), 900, interval_s=1)
        assert ready(), log_text(out / "train.log")[-3000:]
        head = ray_head_of(out / "train.log")
        assert head and processes_using(head), "no live Ray head of the check's own"
        os.kill(script.pid, signal.SIGKILL)
        script.wait()
        left = lambda: processes_using(str(out)) + processes_using(head)  # noqa: E731
        assert wait_until(lambda: not left(), 90), [live_command(pid) for pid in left()]
    finally:
        for pid in set(processes_using(str(out)) + (processes_using(head) if head else [])):
            os.kill(pid, signal.SIGKILL)
        if head:
            shutil.rmtree(head, ignore_errors=True)  # the launcher keeps a failed head's logs


READY_TO_FIT = "all initialize finished, ready to fit"  # veRL's trainer, its servers up


def log_text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def live_command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return f"{pid} (exited)"


@pytest.fixture(scope="module")
def cobalt_check(tmp_path_factory):
    """COBALT's check, run once: its own test judges it, and GRPO-MT's check takes its demo data
    and warmed-up policy (LEARNING_CHECK_INPUTS) instead of building the same ones again."""
    pytest.importorskip("verl")
    pytest.importorskip("vllm")
    out = tmp_path_factory.mktemp("cobalt_check") / "run"
    proc, verdict = run_check(out)
    return out, proc, verdict


@pytest.mark.slow
@pytest.mark.train
def test_learning_check_passes(cobalt_check):
    """In CI (about 6 minutes on 2 cores): the check must pass on main."""
    out, proc, verdict = cobalt_check
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "taken from" not in proc.stdout  # it prepared its own data and policy
    assert verdict["passed"] and verdict["criteria"]["margin"] is None
    assert verdict["val_gain"] >= verdict["criteria"]["val_margin"] > 0
    assert verdict["paired_prompts"] >= 8  # the reward gain was paired by prompt (rollout dump)
    # it printed the per-step means and the verdict, and left veRL's metrics file
    steps = load_profile("learning_check").overrides["trainer.total_training_steps"]
    assert sorted(map(int, verdict["rewards"])) == list(range(1, steps + 1))
    assert f"step {steps:3d}" in proc.stdout and "LEARNED" in proc.stdout
    metrics = read_metrics(out / "metrics.jsonl")
    # hardly a response scored as failing for want of the evaluator (its call timing out or
    # raising): when 64 calls were in flight, right programs waiting behind slow ones timed out,
    # 1-20 of 128 in 11 of 16 steps; within the evaluator's capacity, at most 2 in a step
    failures = {step: metrics[step]["reward/evaluator_failure/count"] for step in range(1, steps + 1)}
    assert max(failures.values()) <= 2, failures
    assert 0 < metrics[steps]["reward/groups_with_spread/fraction"] <= 1  # GRPO had a signal


@pytest.mark.learning
@pytest.mark.slow
@pytest.mark.train
def test_learning_check_fails_when_rewards_go_to_the_wrong_responses(tmp_path):
    """The same run with each reward handed to another response of the batch (the true scores,
    shifted in the order they finish: tests/broken_rewards.py) must not pass."""
    pytest.importorskip("verl")
    pytest.importorskip("vllm")
    proc, verdict = run_check(
        tmp_path / "run",
        f"reward.custom_reward_function.path={ROOT / 'tests/broken_rewards.py'}",
        "reward.custom_reward_function.name=shifted_score_details",
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert verdict["passed"] is False and verdict["reasons"]
    assert "NOT LEARNED" in proc.stdout


# CI's GRPO-MT check: a second seed when the first falls short. Its criteria were calibrated on one
# warmed-up policy; the policy CI warms up differs from machine to machine, and on some the gains of
# learning runs land near the margins (CI: +0.045 on the training prompts and +0.009 paired where a
# run of the same code here gained +0.21 and +0.04). A run at lr 0 passes one of two tries about
# twice as often as one (CRITERIA's rates: docs/training.md, "The GRPO-MT check").
GRPO_MT_SEEDS = (1, 2)


@pytest.mark.slow
@pytest.mark.train
@pytest.mark.parametrize(
    "lr, learned",
    [pytest.param(None, True, id="learns"), pytest.param(0, False, id="lr0", marks=pytest.mark.learning)],
)
def test_grpo_mt_learning_check(tmp_path, lr, learned, cobalt_check):
    """GRPO-MT's check (LEARNING_CHECK_METHOD=grpo_mt), from COBALT's check's demo data and policy:
    the tiny policy's reward on the training problems must rise (in CI, about 6 minutes on 2
    cores, twice that when the first seed falls short: GRPO_MT_SEEDS), and must not at learning
    rate 0 (the policy never changes; one seed; opt-in, COBALT_LEARNING_CHECK=1). Times:
    docs/benchmarks.md."""
    overrides = [] if lr is None else [f"actor_rollout_ref.actor.optim.lr={lr}"]
    outputs = []
    for seed in GRPO_MT_SEEDS if learned else GRPO_MT_SEEDS[:1]:
        run = tmp_path / f"seed{seed}"
        proc, verdict = run_check(run, *overrides, method="grpo_mt", inputs=cobalt_check[0], seed=seed)
        outputs.append(proc.stdout[-3000:] + proc.stderr[-3000:])
        if proc.returncode != 1:  # learned, or broken: a second seed would not change that
            break
    assert proc.returncode == (0 if learned else 1), "\n\n".join(outputs)
    assert f"demo data and policy taken from {cobalt_check[0]}" in proc.stdout
    for name in ("config.json", "model.safetensors"):  # the very policy COBALT's check started from
        ours, theirs = run / "policy" / name, cobalt_check[0] / "policy" / name
        assert ours.read_bytes() == theirs.read_bytes()
    assert verdict["passed"] is learned and f"learning check: grpo_mt, seed {seed}" in proc.stdout
    metrics = read_metrics(run / "metrics.jsonl")
    assert metrics[1]["reward/turns/mean"] >= 1  # episodes of the code-repair loop were scored
    assert max(metrics[int(s)]["reward/context_cut/mean"] for s in verdict["rewards"]) < 1
    # some episodes ran to a second turn: sessions of several rows were trained
    assert max(metrics[int(s)]["reward/turns/mean"] for s in verdict["rewards"]) > 1
