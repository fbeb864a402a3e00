"""The quickstart's training seed (``train_seed``) and its control arm (``arm: control``): where the
seed goes (GRPO's veRL seeds, the control's SFT; never the warm-up, the base every arm shares), and
what the control arm runs instead of GRPO. The stages' commands are recorded, not run."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import pytest

from cobalt.common.config import from_dict, load_config
from cobalt.common.errors import ConfigError
from cobalt.recipes.quickstart import run as quickstart
from cobalt.recipes.quickstart.config import save_freq
from cobalt.recipes.quickstart.run import QuickstartConfig, Run


def recording_run(root: Path, cfg: QuickstartConfig) -> tuple[Run, dict]:
    """A run whose commands are recorded; each leaves the file that marks its stage done."""
    run, commands = Run(root, cfg, "test"), {}

    def command(name, args, env=None):
        args = [str(a) for a in args]
        commands[name] = args
        if "--out" in args:  # cobalt.train.sft
            out = Path(args[args.index("--out") + 1])
            out.mkdir(parents=True, exist_ok=True)
            (out / "warm_up.json").write_text("{}")
        else:  # GRPO: veRL's last checkpoint
            checkpoints = root / "checkpoints"
            (checkpoints / "global_step_2/actor/huggingface").mkdir(parents=True, exist_ok=True)
            (checkpoints / "global_step_2/actor/huggingface/config.json").write_text("{}")
            (checkpoints / "latest_checkpointed_iteration.txt").write_text("2")

    run.command = command
    return run, commands


def generalize(**settings) -> QuickstartConfig:
    cfg = from_dict(QuickstartConfig, load_config("generalize"), source="configs/generalize")
    return dataclasses.replace(cfg, **settings)


def test_the_training_seed_reaches_grpos_data_and_rollout_seeds_and_unset_changes_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(quickstart, "fitted_lengths", lambda *a: [])
    run, commands = recording_run(tmp_path / "seeded", QuickstartConfig(train_seed=7))
    quickstart.grpo(run, tmp_path / "verl", tmp_path / "warm")
    assert commands["grpo"][-2:] == ["data.seed=7", "actor_rollout_ref.rollout.seed=7"]

    run, commands = recording_run(tmp_path / "default", QuickstartConfig())
    quickstart.grpo(run, tmp_path / "verl", tmp_path / "warm")
    keys = [str(a).partition("=")[0] for a in commands["grpo"]]
    assert not [k for k in keys if k.endswith(".seed")]  # the train profile's seeds, as before


def test_the_warm_up_keeps_its_own_seed_whatever_the_training_seed(tmp_path):
    """Every arm and training seed starts from one base (docs/preregistration.md)."""
    train = tmp_path / "train.jsonl"
    train.write_text("")
    run, commands = recording_run(tmp_path / "a", QuickstartConfig(train_seed=3))
    quickstart.warm_up(run, tmp_path / "base", train)
    assert "--seed" not in commands["warmup"]  # cobalt.train.sft's default (0), the command as before
    cfg = QuickstartConfig(train_seed=3, warmup={"seed": 2})
    run, commands = recording_run(tmp_path / "b", cfg)
    quickstart.warm_up(run, tmp_path / "base", train)
    assert commands["warmup"][commands["warmup"].index("--seed") + 1] == "2"


def test_a_warm_up_seeded_by_the_training_seed_gives_each_seed_its_own_start(tmp_path):
    """warmup.seed: train_seed (the fine-tuned start of docs/preregistration_ft.md): one SFT model
    per training seed, which another seed's run may not take as its base."""
    train = tmp_path / "train.jsonl"
    train.write_text("")
    for seed in (1, 2):
        run, commands = recording_run(
            tmp_path / f"s{seed}", QuickstartConfig(train_seed=seed, warmup={"seed": "train_seed"})
        )
        quickstart.warm_up(run, tmp_path / "base", train)
        assert commands["warmup"][commands["warmup"].index("--seed") + 1] == str(seed)
    with pytest.raises(ValueError, match=r"warmup\.seed is train_seed, but the run has no training seed"):
        quickstart.warm_up(
            recording_run(tmp_path / "none", QuickstartConfig(warmup={"seed": "train_seed"}))[0],
            tmp_path / "base",
            train,
        )


def test_the_control_arm_fine_tunes_the_base_on_every_training_program_with_the_training_seed(tmp_path):
    cfg = generalize(arm="control", train_seed=2, control={"epochs": 0.833, "lr": 1e-4, "batch_size": 4})
    run, commands = recording_run(tmp_path / "run", cfg)
    train = tmp_path / "run/data/procedural/train.jsonl"
    out = quickstart.control_sft(run, tmp_path / "run/models/warm", train)
    assert out == tmp_path / "run/models/control"
    cmd = commands["control_sft"]
    assert cmd[1:3] == ["-m", "cobalt.train.sft"]
    flag = lambda name: cmd[cmd.index(name) + 1]  # noqa: E731
    assert flag("--model") == str(tmp_path / "run/models/warm") and flag("--problems") == str(train)
    assert flag("--solutions") == str(
        tmp_path / "run/data/procedural/solutions.jsonl"
    )  # the reference programs
    assert [flag(f) for f in ("--epochs", "--lr", "--batch_size", "--seed")] == ["0.833", "0.0001", "4", "2"]
    # resumable: its output exists, the stage is skipped
    commands.clear()
    quickstart.control_sft(run, tmp_path / "run/models/warm", train)
    assert commands == {} and "control SFT" in run.state


@pytest.mark.parametrize("arm", ["trained", "control"])
def test_the_arm_decides_what_follows_the_base_and_what_is_evaluated_beside_it(tmp_path, arm):
    """The orchestration of run_pipeline with every step faked: the control arm runs its SFT
    instead of GRPO, and its model is evaluated with the same chains as base and trained."""
    import contextlib

    calls, root = [], tmp_path / "run"
    heldout, families = root / "data/heldout.jsonl", root / "data/families.jsonl"
    base = quickstart.Base(
        root / "data/train.jsonl", heldout, families, None, root / "models/warm", root / "offline.jsonl"
    )

    def side_by_side(run, label, model, chains):
        calls.append((label, model, {tag: c.problems for tag, c in chains.items()}))
        return {tag: root / f"{tag}.jsonl" for tag in chains}

    fake = quickstart.Steps(
        base=lambda run: base,
        cluster=lambda run: contextlib.nullcontext(),
        side_by_side=side_by_side,
        bandit_data=lambda run, trajectories, tokenizer: root / "data/verl",
        stop_engine=lambda run: None,
        record_start=lambda root, model: None,
        grpo=lambda run, parquet, model: calls.append("grpo") or root / "grpo",
        control_sft=lambda run, model, train: calls.append(("control", model, train)) or root / "ctl",
        report=lambda record: record,
    )
    run_pipeline = functools.partial(quickstart.run_pipeline, do=fake)
    run = Run(root, generalize(arm=arm, train_seed=1), "generalize")
    record = run_pipeline(run)

    base = ("base model", root / "models/warm", {"eval_base": heldout, "eval_base_families": families})
    if arm == "trained":
        assert calls == [
            base,
            "grpo",
            ("trained model", root / "grpo", {"eval_trained": heldout, "eval_trained_families": families}),
        ]
    else:
        assert calls == [
            base,
            ("control", root / "models/warm", root / "data/train.jsonl"),
            ("control model", root / "ctl", {"eval_control": heldout, "eval_control_families": families}),
        ]
    assert record.files["trained_eval"] == root / f"eval_{arm}.jsonl"
    assert record.files["trained_families_eval"] == root / f"eval_{arm}_families.jsonl"
    assert record.config["arm"] == arm and record.config["train_seed"] == 1
    assert json.loads((root / "arm.json").read_text()) == {"arm": arm, "train_seed": 1}

    # the run directory is this arm's and seed's: resuming it as another fails before any stage
    other = "control" if arm == "trained" else "trained"
    calls.clear()
    with pytest.raises(
        ValueError, match=rf"arm.json: this run directory is arm '{arm}' with train_seed 1, not arm '{other}'"
    ):
        run_pipeline(Run(root, generalize(arm=other, train_seed=1), "generalize"))
    with pytest.raises(ValueError, match=r"train_seed 1, not arm .* with train_seed 2"):
        run_pipeline(Run(root, generalize(arm=arm, train_seed=2), "generalize"))
    assert calls == []


def test_the_command_line_takes_the_seed_and_the_arm_and_the_dry_run_shows_where_they_go(capsys):
    from cobalt.recipes.quickstart.run import main

    assert main(["--profile", "generalize", "--train_seed", "3", "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["settings"]["train_seed"] == 3 and plan["settings"]["arm"] == "trained"
    assert plan["training"]["grpo_seed_overrides"] == ["data.seed=3", "actor_rollout_ref.rollout.seed=3"]
    assert plan["training"]["warm_up_seed"] == 0

    assert main(["--profile", "generalize_prereg", "--arm", "control", "--train_seed", "1", "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["training"]["arm"] == "control"
    sft = plan["training"]["control_sft"]
    assert sft.startswith("python -m cobalt.train.sft --model RUN_DIR/models/warm")
    assert "--epochs 0.833 --lr 0.0001 --batch_size 4 --seed 1" in sft

    assert main(["--dry-run"]) == 0  # the default: trained, no seed overrides
    plan = json.loads(capsys.readouterr().out)
    assert plan["settings"]["arm"] == "trained" and plan["training"]["grpo_seed_overrides"] == []

    with pytest.raises(SystemExit):
        main(["--arm", "placebo", "--dry-run"])
    assert "invalid choice: 'placebo'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--train_seed", "-1", "--dry-run"])
    assert "--train-seed: must not be negative" in capsys.readouterr().err


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"arm": "placebo"}, r"arm must be one of 'trained', 'control', not 'placebo'"),
        ({"train_seed": -1}, r"train_seed must be 0 or more, not -1"),
        ({"train_seed": "one"}, r"train_seed must be an integer or null"),
        ({"control": {"epoch": 1}}, r"control: unknown key\(s\) \['epoch'\]"),
        ({"warmup": {"seed": "x"}}, r"warmup.seed must be an int or 'train_seed', not 'x'"),
        ({"procedural": {"heldout_family_names": ["acronym", "nope"]}}, r"held-out families: unknown nope"),
    ],
)
def test_bad_seed_arm_or_control_settings_name_the_file_and_field(tmp_path, settings, message):
    import yaml

    from cobalt.recipes.quickstart.run import main

    path = tmp_path / "profile.yaml"
    path.write_text(
        yaml.safe_dump(
            {"extends": str(Path(__file__).resolve().parents[1] / "configs/generalize.yaml"), **settings}
        )
    )
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {message}"):
        main(["--profile", str(path), "--dry-run"])


def test_the_sft_command_line_takes_a_seed_that_orders_its_batches(tmp_path, tiny_tokenizer_dir, capsys):
    from transformers import AutoTokenizer

    from cobalt.common.jsonl import write_jsonl
    from cobalt.data.embedded import PROBLEM_SETS, problem_records
    from cobalt.train.sft import main
    from cobalt.train.tiny_policy import WarmUpOptions, build_model

    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--seed" in capsys.readouterr().out

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    model_dir = tmp_path / "model"
    build_model(tokenizer, WarmUpOptions()).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    problems = tmp_path / "problems.jsonl"
    write_jsonl(problems, problem_records(path=PROBLEM_SETS["embedded"])[:6])

    def sft(seed: int | None, out: str) -> dict:
        seed_flag = [] if seed is None else ["--seed", str(seed)]
        main(
            [
                "--model",
                str(model_dir),
                "--problems",
                str(problems),
                "--out",
                str(tmp_path / out),
                "--epochs",
                "0.5",
                "--batch_size",
                "1",
                *seed_flag,
            ]
        )
        return json.loads((tmp_path / out / "warm_up.json").read_text())

    default, again, other = sft(None, "a"), sft(0, "b"), sft(5, "c")
    assert default["seed"] == 0 and other["seed"] == 5 and other["batch_size"] == 1 and other["steps"] == 3
    keep = ("first_loss", "last_loss")
    assert [default[k] for k in keep] == [again[k] for k in keep]  # the default is seed 0, deterministic
    assert [default[k] for k in keep] != [other[k] for k in keep]  # another seed, other batches


def test_earlier_checkpoints_are_evaluated_on_the_evaluated_split_after_the_last(tmp_path):
    """eval_steps (the design's pilot: a dose curve on dev): each earlier checkpoint is evaluated
    on the evaluated split only, after the last one, and GRPO saves every one of them."""
    import contextlib

    calls, root = [], tmp_path / "run"
    heldout, families = root / "data/dev.jsonl", root / "data/families.jsonl"
    base = quickstart.Base(
        root / "data/train.jsonl", heldout, families, None, root / "models/warm", root / "offline.jsonl"
    )
    fake = quickstart.Steps(
        base=lambda run: base,
        cluster=lambda run: contextlib.nullcontext(),
        side_by_side=lambda run, label, model, chains: (
            calls.append((label, model, sorted(chains))) or {tag: root / f"{tag}.jsonl" for tag in chains}
        ),
        bandit_data=lambda run, trajectories, tokenizer: root / "data/verl",
        stop_engine=lambda run: None,
        record_start=lambda root, model: None,
        grpo=lambda run, parquet, model: root / "grpo",
        report=lambda record: record,
    )
    cfg = generalize(train_seed=0, grpo_steps=30, eval_steps=[10, 20], save_every=15)
    quickstart.run_pipeline(Run(root, cfg, "generalize"), do=fake)
    step = lambda n: root / f"checkpoints/global_step_{n}/actor/huggingface"  # noqa: E731
    assert calls[2:] == [
        ("trained model at step 10", step(10), ["eval_trained_step10"]),
        ("trained model at step 20", step(20), ["eval_trained_step20"]),
    ]
    assert save_freq(cfg) == 5 and save_freq(generalize(grpo_steps=30)) == 30
    with pytest.raises(ValueError, match=r"eval_steps: \[30\]; each must lie between 0 and grpo_steps"):
        generalize(grpo_steps=30, eval_steps=[30])


def test_grpo_is_done_at_its_last_step_not_at_a_checkpoint_saved_on_the_way(tmp_path):
    from cobalt.pipeline.steps import trained_model

    checkpoints = tmp_path / "checkpoints"
    for n in (10, 20):
        (checkpoints / f"global_step_{n}/actor/huggingface").mkdir(parents=True)
        (checkpoints / f"global_step_{n}/actor/huggingface/config.json").write_text("{}")
    (checkpoints / "latest_checkpointed_iteration.txt").write_text("10")
    assert trained_model(checkpoints, total_steps=20) is None  # stopped after step 10: resume
    assert trained_model(checkpoints) == checkpoints / "global_step_10/actor/huggingface"
    (checkpoints / "latest_checkpointed_iteration.txt").write_text("20")
    assert trained_model(checkpoints, total_steps=20) == checkpoints / "global_step_20/actor/huggingface"
