"""The method in the recipes (issue 47): ``--method grpo_mt|verpo_mt`` trains an online baseline in
the paper's chain and in the main job; their rows come from the training problems (one step, one
command), the estimate counts a problem as an online method's training example, and the report
never invents a figure the reference does not give. Fast: every step here is faked or small."""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cobalt.common.config import from_dict, load_config
from cobalt.common.jsonl import write_jsonl
from cobalt.pipeline.stages import Run
from cobalt.recipes.paper import preflight
from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, training_data
from cobalt.recipes.quickstart import run as quickstart
from cobalt.recipes.quickstart.config import QuickstartConfig
from cobalt.train.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def problems(tmp_path):
    from cobalt.data.embedded import problem_records

    path = tmp_path / "problems.jsonl"
    write_jsonl(path, problem_records()[:3])
    return path


def test_the_online_rows_command_writes_one_row_per_problem_and_keeps_an_existing_output(problems, tmp_path):
    out = tmp_path / "online"
    cmd = [sys.executable, ROOT / "preproc/verl_preproc_online.py", "--local-dir", out]
    cmd += ["--train-data-file", problems, "--val-data-file", problems]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = pd.read_parquet(out / "train.parquet")
    assert len(rows) == 3 and set(rows["agent_name"]) == {"cobalt_code_repair"}
    assert all(row["public_test_cases"] for row in rows["extra_info"])
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "already exists; pass --overwrite" in again.stderr


def test_the_papers_chain_trains_an_online_method_on_the_problems_not_on_bandit_prompts(problems, tmp_path):
    cfg = from_dict(PaperConfig, load_config("paper_rehearsal"))
    run = Run(tmp_path / "run", cfg, "grpo_mt_qwen3_8b")
    inputs = Inputs("grpo_mt_qwen3_8b", "unused", "unused", method="grpo_mt")
    files = {"train": problems, "dev": problems}
    train_file = training_data(run, inputs, files, {}, "unused-tokenizer", None)
    assert train_file == run.root / "data/verl_online/train.parquet" and train_file.exists()
    assert "preproc/verl_preproc_online.py" in run.state["commands"]["parquet_online"]
    assert not (run.root / "data/bandit_validation.jsonl").exists()


def quickstart_cfg(method: str, **changes) -> QuickstartConfig:
    cfg = from_dict(QuickstartConfig, load_config("quickstart"))
    return quickstart.with_method(dataclasses.replace(cfg, **changes), method, explicit=False)


def test_the_main_job_picks_the_methods_profile_and_refuses_one_of_another_method():
    from cobalt.common.errors import ConfigError

    assert quickstart_cfg("grpo_mt").train_profile == "grpo_mt_quickstart"
    assert quickstart_cfg("verpo_mt", train_profile="generalize").train_profile == "verpo_mt_generalize"
    assert quickstart_cfg("cobalt").train_profile == "quickstart"
    with pytest.raises(ConfigError, match="no GRPO profile grpo_mt_quickstart_learn"):
        quickstart_cfg("grpo_mt", train_profile="quickstart_learn")
    cfg = from_dict(QuickstartConfig, load_config("quickstart"))
    with pytest.raises(ConfigError, match="trains method grpo_mt, not cobalt"):
        quickstart.with_method(dataclasses.replace(cfg, train_profile="grpo_mt_quickstart"), "cobalt", True)
    with pytest.raises(ConfigError, match="the control arm is COBALT's comparison only"):
        quickstart_cfg("grpo_mt", arm="control")


def test_the_main_job_of_an_online_method_trains_on_its_rows_and_evaluates_as_cobalt(tmp_path):
    calls, root = [], tmp_path / "run"
    heldout = root / "data/heldout.jsonl"
    base = quickstart.Base(root / "data/train.jsonl", heldout, None, None, root / "models/warm", None)

    def side_by_side(run, label, model, chains):
        calls.append((label, sorted(chains)))
        return {tag: root / f"{tag}.jsonl" for tag in chains}

    fake = quickstart.Steps(
        base=lambda run: base,
        cluster=lambda run: contextlib.nullcontext(),
        side_by_side=side_by_side,
        bandit_data=lambda *args: pytest.fail("an online method cuts no bandit prompts"),
        online_data=lambda run, train: calls.append(("rows", train)) or root / "data/verl_online",
        stop_engine=lambda run: None,
        record_start=lambda root, model: None,
        grpo=lambda run, parquet, model: calls.append(("grpo", parquet)) or root / "grpo",
        report=lambda record: record,
    )
    record = quickstart.run_pipeline(Run(root, quickstart_cfg("grpo_mt"), "quickstart"), do=fake)
    assert calls == [
        ("base model", ["eval_base"]),  # no trajectories of the model's own
        ("rows", root / "data/train.jsonl"),
        ("grpo", root / "data/verl_online"),
        ("trained model", ["eval_trained"]),
    ]
    assert "trajectories" not in record.files and "bandit" not in record.files


def estimate_of(profile: str, method: str, tmp_path) -> dict:
    cfg = from_dict(PaperConfig, load_config("paper"))
    taco, lcb = tmp_path / "taco.jsonl", tmp_path / "lcb.jsonl"
    taco.write_text("{}\n" * 50)
    lcb.write_text("{}\n" * 20)
    inputs = Inputs(profile, str(taco), str(lcb), num_gpus=0, method=method)
    return preflight.estimate(cfg, inputs, load_profile(profile).overrides, False, method)


def test_the_estimate_counts_a_problem_as_an_online_example_and_sets_the_papers_figures_beside(tmp_path):
    cobalt = estimate_of("multi_turn_qwen3_8b", "cobalt", tmp_path)
    online = estimate_of("verpo_mt_qwen3_8b", "verpo_mt", tmp_path)
    assert "trajectories (true and perturbed feedback)" not in online["stages"]
    # one training example a problem, 2 epochs of 45 problems in batches of 128: 2 steps
    assert online["stages"]["GRPO"]["steps_at_most"] == 2 < cobalt["stages"]["GRPO"]["steps_at_most"]
    # every turn on the public tests, every turn on the hidden ones (VeRPO-MT): 6 programs an episode
    assert online["evaluator_per_grpo_step"]["programs"] == 128 * 16 * 6
    mine, theirs = online["per_example"], cobalt["per_example"]
    assert mine["training_example"] == "a problem, with 16 episodes of up to 3 turns"
    assert theirs["training_example"].startswith("a bandit prompt")
    # 16 episodes of 3 rows (a turn each: COBALT's 6,144 generated at 2,500 tokens/s and 10,240 +
    # 6,144 trained at 4,000), half-length answers
    assert mine["gpu_seconds"] == round(16 * 3 * (6144 * 0.5 / 2500 + 16384 * 0.5 / 4000), 1)
    assert (mine["gpus"], mine["seconds"]) == (8, round(mine["gpu_seconds"] / 8, 1))
    assert mine["paper"] == {
        "COBALT": {"seconds": 16.9, "gpus": 4, "gpu_seconds": 67.6},
        "the online multi-turn baseline": {"seconds": 26.7, "gpus": 8, "gpu_seconds": 213.6},
    }
    line = preflight.per_example_line(mine)
    assert (
        line.startswith("estimate (verpo_mt): ")
        and "per training example (a problem, with 16 episodes" in line
    )


def test_the_paper_report_of_a_baseline_never_invents_the_papers_figure(tmp_path):
    from test_eval_paper_report import evaluated, setting

    from cobalt.recipes.paper.report import NOT_KNOWN, write_paper_report

    files = {}
    for model, grid in (("base", [[0.0, 0.0]]), ("trained", [[0.0, 1.0]])):
        for suffix in ("", "_dev"):
            files[f"eval_{model}{suffix}"] = evaluated(tmp_path / f"{model}{suffix}.jsonl", [grid] * 2)
    run = Run(tmp_path / "run", from_dict(PaperConfig, load_config("paper")), "verpo_mt_qwen3_8b")
    setting(run, method="verpo_mt")
    base, trained = ({k: v for k, v in files.items() if model in k} for model in ("base", "trained"))
    md = write_paper_report(run, "verpo_mt_qwen3_8b", base, trained, 1.0, "verpo_mt").read_text()
    assert md.startswith("# VeRPO-MT, the paper's chain — profile `verpo_mt_qwen3_8b`")
    assert "| LiveCodeBench (test6) | base | 32.3 |" in md  # the same base model as COBALT's
    assert f"| LiveCodeBench (test6) | trained | {NOT_KNOWN} |" in md
    assert f"| TACO-dev, perturbed public tests | trained | {NOT_KNOWN} |" in md
    assert "38.5" not in md and "56.9" not in md
    assert "| method | VeRPO-MT, with VeRPO's reward equations" in md and "cobalt/reward/verpo.py" in md


def test_the_papers_chain_refuses_a_profile_of_another_method_and_cobalts_trajectories(capsys, tmp_path):
    from cobalt.recipes.paper.reproduce import main

    taco, lcb = tmp_path / "taco.jsonl", tmp_path / "lcb.jsonl"
    for path in (taco, lcb):
        path.write_text("{}\n")
    files = ["--taco", str(taco), "--lcb", str(lcb)]
    assert main(["--method", "grpo_mt", "--profile", "multi_turn_qwen3_8b", *files, "--dry-run"]) == 2
    assert "error: training profile multi_turn_qwen3_8b trains method cobalt, not grpo_mt" in (
        capsys.readouterr().err
    )
    with pytest.raises(SystemExit) as stopped:
        main(["--method", "verpo_mt", "--profile", "verpo_mt_qwen3_8b", *files, "--trajectories", str(taco)])
    assert stopped.value.code == 2
    assert "--trajectories are COBALT's: --method verpo_mt trains on the problems" in capsys.readouterr().err


def test_a_baseline_takes_the_problems_and_base_evaluation_of_cobalts_run_with_the_same_base(tmp_path):
    from cobalt.recipes.paper.reproduce import record_base, take_base

    cfg = from_dict(PaperConfig, load_config("paper_rehearsal"))
    cobalt = Run(tmp_path / "cobalt", cfg, "multi_turn_qwen3_8b")
    online = Run(tmp_path / "grpo_mt", cfg, "grpo_mt_qwen3_8b")
    inputs = Inputs(
        "grpo_mt_qwen3_8b", "taco.jsonl", "lcb.jsonl", method="grpo_mt", base_run=str(cobalt.root)
    )
    with pytest.raises(ValueError, match="has not finished its base evaluation"):
        take_base(online, inputs)
    for part in (
        "data/taco/taco_verified_filtered_train.jsonl",
        "data/lcb_test6.jsonl",
        "eval_base/eval.jsonl",
    ):
        (cobalt.root / part).parent.mkdir(parents=True, exist_ok=True)
        (cobalt.root / part).write_text("{}\n")
    (cobalt.root / "data/bandit_trajectories.jsonl").write_text("{}\n")
    record_base(cobalt, Inputs("multi_turn_qwen3_8b", "taco.jsonl", "lcb.jsonl"))

    take_base(online, inputs)
    assert (online.root / "eval_base/eval.jsonl").read_text() == "{}\n"
    assert (online.root / "data/taco/taco_verified_filtered_train.jsonl").exists()
    assert not (online.root / "data/bandit_trajectories.jsonl").exists()  # COBALT's training data stays

    other = dataclasses.replace(cfg, eval_turns=3)
    with pytest.raises(ValueError, match=r"made with other settings \(eval_turns: theirs 2, this run's 3\)"):
        take_base(Run(tmp_path / "other", other, "grpo_mt_qwen3_8b"), inputs)
    with pytest.raises(ValueError, match=r"made with other settings \(files: "):
        take_base(
            Run(tmp_path / "files", cfg, "grpo_mt_qwen3_8b"), dataclasses.replace(inputs, lcb="x.jsonl")
        )
