"""One base for many runs (cobalt/recipes/quickstart/base.py): what a run records of its base, and what
another run checks before it takes that base instead of making its own."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cobalt.common.rundir import BASE as BASE_FILE
from cobalt.recipes.quickstart.base import adopt_base, record_base
from cobalt.recipes.quickstart.config import QuickstartConfig

CHAINS = ("eval_base", "eval_base_families")
CFG = QuickstartConfig(
    problems="procedural", train_problems=4, heldout_problems=2, arm="trained", train_seed=0
)


def make_base_run(root):
    """A run directory as the quickstart leaves it once its base evaluations are written."""
    for name in (
        "models/warm/model.safetensors",
        "models/warm/warm_up.json",
        "data/procedural/train.jsonl",
        "trajectories_offline/eval.jsonl",
        "eval_base/eval.jsonl",
        "eval_base_families/eval.jsonl",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    record_base(root, CFG, CHAINS)
    # what the run makes after its base is not part of it
    (root / "data/bandit_train.jsonl").write_text("after the base")
    (root / "eval_trained").mkdir()
    (root / "eval_trained/eval.jsonl").write_text("the trained model's")
    return root


def test_a_run_takes_another_runs_base_file_for_file_and_nothing_after_it(tmp_path):
    base = make_base_run(tmp_path / "trained-seed0")
    other = tmp_path / "control-seed1"
    control = dataclasses.replace(CFG, arm="control", train_seed=1, control={"epochs": 1})
    assert adopt_base(other, control, base, log=lambda _: None) == 6
    for name in json.loads((base / BASE_FILE).read_text())["files"]:
        assert (other / name).read_text() == name
        assert (other / name).stat().st_ino == (base / name).stat().st_ino  # linked, not copied
    assert not (other / "data/bandit_train.jsonl").exists() and not (other / "eval_trained").exists()
    assert json.loads((other / BASE_FILE).read_text())["adopted_from"] == str(base.resolve())
    # resuming takes what is missing and keeps what is there
    (other / "eval_base/eval.jsonl").unlink()
    assert adopt_base(other, control, base, log=lambda _: None) == 1
    assert adopt_base(other, control, base, log=lambda _: None) == 0


@pytest.mark.parametrize(
    "change, key",
    [
        ({"heldout_problems": 3}, "heldout_problems"),
        ({"warmup": {"seed": 1}}, "warmup"),
        ({"eval_turns": 2}, "eval_turns"),
        ({"sampling": {"temperature": 0.2}}, "sampling"),
    ],
)
def test_a_base_made_with_other_settings_is_refused_and_the_setting_named(tmp_path, change, key):
    base = make_base_run(tmp_path / "base")
    with pytest.raises(ValueError, match=f"other settings .*{key}: theirs"):
        adopt_base(tmp_path / "run", dataclasses.replace(CFG, **change), base)
    assert not (tmp_path / "run").exists()  # nothing taken


def test_a_run_without_a_finished_base_or_with_its_own_base_is_refused(tmp_path):
    unfinished = tmp_path / "unfinished"
    (unfinished / "models/warm").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"no base\.json; that run has not finished its base evaluation"):
        adopt_base(tmp_path / "run", CFG, unfinished)
    base = make_base_run(tmp_path / "base")
    own = make_base_run(tmp_path / "own")  # made its own base: its evaluations would mix two
    with pytest.raises(ValueError, match="made its own base"):
        adopt_base(own, CFG, base)
    with pytest.raises(ValueError, match="this run's own directory"):
        adopt_base(base, CFG, base)
    started = tmp_path / "started"
    (started / "data").mkdir(parents=True)
    with pytest.raises(ValueError, match="base files of its own"):
        adopt_base(started, CFG, base)


def test_the_settings_after_the_base_may_differ_and_a_gone_file_is_named(tmp_path):
    base = make_base_run(tmp_path / "base")
    later = dataclasses.replace(CFG, grpo_steps=7, train_profile="other", ray_num_cpus=2, base_run=str(base))
    adopt_base(tmp_path / "a", later, base, log=lambda _: None)
    (base / "eval_base/eval.jsonl").unlink()
    with pytest.raises(ValueError, match=r"lists eval_base/eval\.jsonl, which is gone"):
        adopt_base(tmp_path / "b", later, base, log=lambda _: None)
