"""Each recipe's dry run prints what it printed before the pipeline's refactor (issue 46), and each
online method's (issue 47) what it printed when added: the
outputs are kept under tests/golden/dry_runs/, their temporary and checkout paths normalized.
COBALT_REGEN_GOLDEN=1 rewrites them (only on purpose: a changed golden is a changed behaviour)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests/golden/dry_runs"
PAPER = [
    "cobalt.recipes.paper.reproduce",
    "--taco",
    "taco.jsonl",
    "--lcb",
    "lcb.jsonl",
    "--dry-run",
    "--profile",
]
CASES = {
    "quickstart": ["cobalt.recipes.quickstart.run", "--dry-run"],
    "quickstart_ci": ["cobalt.recipes.quickstart.run", "--profile", "quickstart_ci", "--dry-run"],
    "learn": ["cobalt.recipes.quickstart.run", "--profile", "learn", "--dry-run"],
    "generalize": ["cobalt.recipes.quickstart.run", "--profile", "generalize", "--dry-run"],
    "generalize_control": [
        "cobalt.recipes.quickstart.run",
        "--profile",
        "generalize",
        "--arm",
        "control",
        "--dry-run",
    ],
    "generalize_prereg": ["cobalt.recipes.quickstart.run", "--profile", "generalize_prereg", "--dry-run"],
    "generalize_smoke": ["cobalt.recipes.quickstart.run", "--profile", "generalize_smoke", "--dry-run"],
    "paper_multi_turn_qwen3_8b": [*PAPER, "multi_turn_qwen3_8b"],
    "paper_multi_turn_r1_distill_llama_8b": [*PAPER, "multi_turn_r1_distill_llama_8b"],
    "paper_single_turn_r1_distill_llama_8b": [*PAPER, "single_turn_r1_distill_llama_8b"],
    "paper_rehearse": [*PAPER, "multi_turn_qwen3_8b", "--rehearse"],
    "paper_small": [*PAPER, "multi_turn_qwen3_8b", "--max_problems", "2", "--max_model_len", "16384"],
    "paper_grpo_mt_qwen3_8b": [*PAPER, "grpo_mt_qwen3_8b", "--method", "grpo_mt"],
    "paper_verpo_mt_qwen3_8b": [*PAPER, "verpo_mt_qwen3_8b", "--method", "verpo-mt"],  # the flag style
    "paper_grpo_mt_rehearse": [*PAPER, "grpo_mt_qwen3_8b", "--method", "grpo_mt", "--rehearse"],
    "quickstart_grpo_mt": ["cobalt.recipes.quickstart.run", "--method", "grpo-mt", "--dry-run"],
    "generalize_verpo_mt": [
        "cobalt.recipes.quickstart.run",
        "--profile",
        "generalize",
        "--method",
        "verpo_mt",
        "--dry-run",
    ],
    "design_plan": ["cobalt.recipes.design.design", "--plan"],
    "design_plan_json": ["cobalt.recipes.design.design", "--plan", "--json"],
    "design_smoke_plan": [
        "cobalt.recipes.design.design",
        "--plan",
        "--config",
        "design_smoke",
        "--root",
        ".",
    ],
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from data_fixtures import lcb_file, taco_file

    here = tmp_path_factory.mktemp("dry_runs")
    taco_file(here / "taco.jsonl", limit=4)
    lcb_file(here / "lcb.jsonl", limit=3)
    return here


def dry_run(args: list[str], cwd: Path) -> str:
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CUDA_VISIBLE", "COBALT_PROFILE"))
    }
    env = {
        **keep,
        "PYTHONPATH": str(ROOT),
        "CUDA_VISIBLE_DEVICES": "",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(cwd / "hf"),
        "WANDB_MODE": "disabled",
        "WANDB_API_KEY": "",
    }
    proc = subprocess.run(
        [sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout.replace(str(cwd), "<TMP>").replace(str(ROOT), "<ROOT>")
    return re.sub(r"(?m)^preflight \w+ +disk: .*$", "preflight disk: (this machine's free space)", out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_dry_run_prints_what_it_printed_before(name, inputs):
    out = dry_run(CASES[name], inputs)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("COBALT_REGEN_GOLDEN") == "1":
        golden.write_text(out)
    assert out == golden.read_text()
