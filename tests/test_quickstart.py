"""The main job, whole, on the reduced CI profile: real Ray head, evaluator and engine apps, veRL
GRPO on SmolLM2-135M-Instruct, in a fresh HOME. The report's numbers must come from the run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from data_fixtures import taco_file

from cobalt.common.jsonl import load_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.train]
ROOT = Path(__file__).resolve().parents[1]


def quickstart(
    run_dir: Path, home: Path, problems: Path, timeout: float, *flags: str
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(home)
    return subprocess.run(
        ["bash", str(ROOT / "scripts/quickstart.sh"), "--profile", "quickstart_ci"]
        + ["--problems", str(problems), "--run_dir", str(run_dir), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def lines(path: Path) -> int:
    return len(load_jsonl(path))


def test_quickstart_ci_profile_end_to_end_on_a_taco_verified_file(tmp_path):
    """``--problems`` a TACO-verified parquet as the dataset ships, under ids of its own: the run
    converts it and warms up on that file's own solutions."""
    home, run_dir = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    problems = taco_file(tmp_path / "taco_verified.parquet", limit=8)
    proc = quickstart(run_dir, home, problems, timeout=2400)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    report = json.loads((run_dir / "report/report.json").read_text())
    cfg = yaml.safe_load((ROOT / "configs/quickstart_ci.yaml").read_text())
    counts = report["counts"]
    assert counts["train_problems"] == lines(run_dir / "data/train_problems.jsonl") == cfg["train_problems"]
    assert (
        counts["heldout_problems"]
        == lines(run_dir / "data/heldout_problems.jsonl")
        == cfg["heldout_problems"]
    )
    assert counts["trajectories"] == lines(run_dir / "trajectories/eval.jsonl")
    assert counts["bandit_prompts"] == lines(run_dir / "data/bandit_train.jsonl") >= 1
    train_ids = {r["id"] for r in load_jsonl(run_dir / "data/train_problems.jsonl")}
    heldout_ids = {r["id"] for r in load_jsonl(run_dir / "data/heldout_problems.jsonl")}
    assert not train_ids & heldout_ids
    warm = json.loads((run_dir / "models/warm/warm_up.json").read_text())
    assert set(warm["problems"]) == train_ids  # the warm-up never saw a held-out problem
    assert all(pid.startswith("taco-") for pid in train_ids | heldout_ids)
    for model in ("base", "trained"):
        curve = report["heldout"]["pass_at_1"][model]["pass_at_1"]
        assert len(curve) == 1 + cfg["eval_turns"] and all(0 <= v <= 100 for v in curve)
        assert report["heldout"]["pass_at_1"][model]["problems"] == cfg["heldout_problems"]
    steps = report["grpo"]
    assert [s["step"] for s in steps] == list(range(1, cfg["grpo_steps"] + 1))
    assert all(s["reward_mean"] is not None and 0 <= s["groups_with_spread"] <= 1 for s in steps)
    assert all(s["response_length_mean"] > 0 and 0 <= s["truncated_fraction"] <= 1 for s in steps)
    comparison = report["heldout"]["comparison"]
    assert comparison["problems"] == cfg["heldout_problems"] and len(comparison["difference"]) == len(curve)
    md = (run_dir / "report/report.md").read_text()
    assert f"| bandit prompts | {counts['bandit_prompts']} |" in md and "![Pass@1 per turn]" in md
    assert f"**Verdict.** {comparison['verdict']}" in md and "![Training curves](training.png)" in md
    for png in ("pass_at_1.png", "training.png"):
        assert (run_dir / "report" / png).read_bytes()[:4] == b"\x89PNG"
    assert not (home / ".ray").exists()  # nothing written to the user's ~/.ray

    # re-running the same command resumes: every stage is found complete and skipped
    again = quickstart(run_dir, home, problems, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    stage_lines = [line for line in again.stdout.splitlines() if line.startswith("[quickstart")]
    assert not [line for line in stage_lines if line.endswith(": running")]
    # every stage that ran is skipped, but those inside the self-debugging block (skipped whole)
    # and the deploys (done only for stages that still need the engine)
    expected = [k for k in report["stages"] if k not in report["concurrent_stages"] and "deploy" not in k]
    assert sum(line.endswith("done already, skipped") for line in stage_lines) == len(expected) >= 10
    again_report = json.loads((run_dir / "report/report.json").read_text())
    assert again_report["stages"] == report["stages"]  # the times of the run that did the work
    total = again_report["stages_total_s"]
    stages, concurrent = report["stages"], set(report["concurrent_stages"])
    assert total == round(sum(v for k, v in stages.items() if k not in concurrent), 1) > 60
    # the trajectories and the base evaluation ran side by side on one engine: their block took
    # less than its stages one after another would have
    assert {k.split(":")[0] for k in concurrent} == {"trajectories", "eval_base"} and len(concurrent) == 6
    assert stages["self-debugging: trajectories ∥ base evaluation"] < sum(stages[k] for k in concurrent)
    assert f"| **all stages** | {total:.0f} |" in (run_dir / "report/report.md").read_text()

    # the control arm takes this run's base (--base_run): no warm-up, no base evaluation of its own,
    # its own SFT and evaluation; its report compares the control with the very same base
    control_dir = tmp_path / "control"
    control = quickstart(control_dir, home, problems, 1200, "--arm", "control", "--base_run", str(run_dir))
    assert control.returncode == 0, control.stdout[-4000:] + control.stderr[-4000:]
    ran = [line for line in control.stdout.splitlines() if line.endswith(": running")]
    assert any("control SFT" in line for line in ran)
    assert not [line for line in ran if "warm-up" in line or "eval_base" in line or "trajectories" in line]
    assert "base: " in control.stdout and f"taken from {run_dir}" in control.stdout
    control_report = json.loads((control_dir / "report/report.json").read_text())
    assert control_report["arm"] == "control"
    rows, control_rows = report["heldout"]["per_instance"], control_report["heldout"]["per_instance"]
    assert [(r["id"], r["base"]) for r in rows] == [(r["id"], r["base"]) for r in control_rows]
    weights = next((run_dir / "models/warm").glob("*.safetensors"))
    assert (control_dir / "models/warm" / weights.name).stat().st_ino == weights.stat().st_ino
