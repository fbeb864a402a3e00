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


def test_a_sweep_override_stops_at_once_naming_it_and_how_to_quote_it(files):
    """main_ppo composes in hydra's run mode, which refuses a sweep ("Ambiguous value") at the GRPO
    stage, hours into the chain: it is refused here, before the dry run and the preflight."""
    for flag in ("--dry-run", "--preflight"):
        proc = reproduce(files, flag, "--", "trainer.experiment_name=a,b")
        assert proc.returncode == 2, proc.stdout[-2000:]
        error = proc.stderr.strip().splitlines()[-1]
        assert "after --: 'trainer.experiment_name=a,b' is a sweep" in error
        assert (
            "\"trainer.experiment_name='a,b'\"" in error
        )  # the override as one string, quoted for the shell
        assert "trainer.experiment_name=[a,b]" in error  # or as a list


@pytest.mark.parametrize(
    "item", ["k=a,b", "k=choice(a,b)", "k=range(1,3)", "k=interval(0,1)", "k=glob(*)", "+k=1,2"]
)
def test_every_kind_of_sweep_is_refused_and_one_value_is_not(item):
    from cobalt.train.profile import override_error

    assert "is a sweep" in override_error(item)
    assert override_error("k='a,b'") is None and override_error("k=[a,b]") is None


def test_an_override_verls_config_refuses_fails_the_preflight_naming_it(files):
    proc = reproduce(files, "--dry-run", "--", "trainer.no_such_key=1")
    assert proc.returncode == 0, proc.stderr[-2000:]  # the dry run reads the settings; --preflight gates
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("preflight fail overrides")]
    assert (
        "trainer.no_such_key: veRL's config has no such key" in line and "+trainer.no_such_key=VALUE" in line
    )
    ok = reproduce(files, "--dry-run", "--", "+trainer.no_such_key=1")
    assert any(line.startswith("preflight ok   overrides") for line in ok.stdout.splitlines()), ok.stdout[
        -2000:
    ]


def test_a_misspelt_key_fails_the_preflight_naming_the_nearest_key_not_hydras_plus(files):
    proc = reproduce(files, "--dry-run", "--", "trainer.total_epoch=2")
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("preflight fail overrides")]
    assert "trainer.total_epoch: veRL's config has no such key; did you mean trainer.total_epochs?" in line
    assert "+trainer.total_epoch" not in line


@pytest.mark.parametrize(
    "item", ["trainer.total_epochs=two", "data.train_batch_size=0", "actor_rollout_ref.rollout.n=-1"]
)
def test_a_count_that_is_not_a_whole_number_of_at_least_one_stops_at_once_in_one_line(files, item):
    for flag in ("--dry-run", "--preflight"):
        proc = reproduce(files, flag, "--", item)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        key = item.partition("=")[0]
        assert f"after --: '{item}': {key} is a count: a whole number of at least 1" in proc.stderr
