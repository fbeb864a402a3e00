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
    return make_base_run_with(root, CFG)


def make_base_run_with(root, cfg):
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
    record_base(root, cfg, CHAINS)
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


def test_a_start_seeded_by_the_training_seed_is_shared_within_a_seed_and_refused_across_seeds(tmp_path):
    own_start = dataclasses.replace(CFG, warmup={"seed": "train_seed"})
    base = make_base_run_with(tmp_path / "cobalt-seed0", own_start)
    same_seed = dataclasses.replace(own_start, train_profile="grpo_mt_generalize")
    assert adopt_base(tmp_path / "grpo_mt-seed0", same_seed, base, log=lambda _: None) == 6
    other_seed = dataclasses.replace(own_start, train_seed=1)
    with pytest.raises(ValueError, match=r"other settings .*warmup: theirs"):
        adopt_base(tmp_path / "grpo_mt-seed1", other_seed, base)


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


def test_every_arm_of_a_seed_records_the_same_start_weights_and_trains_from_them(tmp_path):
    """The second design's shared start: the run that takes a seed's base trains from the linked
    start model, whose weights' hash equals the one the base's run recorded; other weights differ."""
    from cobalt.recipes.quickstart import run as quickstart
    from cobalt.recipes.quickstart.base import record_start, weights_hash

    own_start = dataclasses.replace(CFG, warmup={"seed": "train_seed"})
    base = make_base_run_with(tmp_path / "cobalt-seed0", own_start)
    made = record_start(base, base / "models/warm")
    other = tmp_path / "grpo_mt-seed0"
    adopt_base(other, own_start, base, log=lambda _: None)
    taken = record_start(other, other / "models/warm")
    assert taken["sha256"] == made["sha256"] == weights_hash(base / "models/warm")
    assert json.loads((other / "start_model.json").read_text()) == taken

    commands = {}
    run = quickstart.Run(other, dataclasses.replace(own_start, train_profile="grpo_mt_generalize"), "t")
    run.stage = lambda name, done, make: make()
    run.command = lambda name, cmd, env=None: commands.setdefault(name, [str(a) for a in cmd])
    run.address = "127.0.0.1:1"
    (other / "data/verl").mkdir(parents=True)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(quickstart, "fitted_lengths", lambda *a: [])
        quickstart.grpo(run, other / "data/verl", other / "models/warm")
    assert f"actor_rollout_ref.model.path={other / 'models/warm'}" in commands["grpo"]
    assert weights_hash(other / "models/warm") == made["sha256"]

    (tmp_path / "changed").mkdir()
    (tmp_path / "changed/model.safetensors").write_text("other weights")
    assert weights_hash(tmp_path / "changed") != made["sha256"]
    with pytest.raises(ValueError, match="no weight files"):
        weights_hash(tmp_path / "cobalt-seed0/data")
