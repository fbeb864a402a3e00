"""``scripts/reproduce_paper.sh ... -- key=value ...``: hydra overrides after ``--`` reach the GRPO
stage's command line (last, so they win over the profile's and the chain's); what hydra would
refuse stops the command at once, naming it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from data_fixtures import lcb_file, taco_file

ROOT = Path(__file__).resolve().parents[1]
SDPA = "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"


@pytest.fixture
def files(tmp_path):
    taco_file(tmp_path / "taco.parquet", limit=2)
    lcb_file(tmp_path / "test6.jsonl", limit=2)
    return tmp_path


def reproduce(files: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CUDA_VISIBLE", "COBALT_PROFILE"))
    }
    cmd = ["bash", str(ROOT / "scripts/reproduce_paper.sh"), "--profile", "multi_turn_qwen3_8b",
           "--taco", "taco.parquet", "--lcb", "test6.jsonl", *args]  # fmt: skip
    return subprocess.run(cmd, cwd=files, env=env, capture_output=True, text=True, timeout=300)


def plan_of(stdout: str) -> dict:
    return json.loads(stdout[: stdout.index("\n}\n") + 2])


def test_overrides_after_a_double_dash_reach_the_grpo_command(files):
    proc = reproduce(files, "--dry-run", "--", SDPA, "trainer.total_epochs=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    command = plan_of(proc.stdout)["grpo_command"]
    assert command[-2:] == [SDPA, "trainer.total_epochs=1"]  # after the chain's, so they win
    assert command[:3][1:] == ["-m", "cobalt.train.launch"]


def test_an_override_hydra_would_refuse_stops_at_once_naming_it(files):
    proc = reproduce(files, "--dry-run", "--", "trainer.project_name=a=b")
    assert proc.returncode == 2
    assert "after --: 'trainer.project_name=a=b' is not a hydra override" in proc.stderr
