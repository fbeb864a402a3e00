"""Pieces of the quickstart that need no cluster."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from transformers import AutoTokenizer

from cobalt.recipes.quickstart.run import fitted_lengths
from cobalt.train.profile import load_profile, override_value


def test_grpo_prompt_slot_fits_the_longest_prompt_and_never_exceeds_the_profile(tmp_path, tiny_tokenizer_dir):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_tokenizer_dir))
    prompts = [[{"role": "user", "content": "word " * n}] for n in (10, 60, 30)]
    parquet = tmp_path / "train.parquet"
    pd.DataFrame({"prompt": prompts}).to_parquet(parquet)
    longest = max(
        len(tokenizer.apply_chat_template(p, add_generation_prompt=True, return_dict=False)) for p in prompts
    )
    profile = load_profile("quickstart_ci").overrides
    response = int(profile["data.max_response_length"])

    overrides = fitted_lengths("quickstart_ci", parquet, tiny_tokenizer_dir, multiple=64)
    prompt_len = int(override_value(overrides, "data.max_prompt_length"))
    assert longest <= prompt_len < longest + 64 and prompt_len % 64 == 0
    assert int(override_value(overrides, "actor_rollout_ref.rollout.max_model_len")) == prompt_len + response

    pd.DataFrame({"prompt": [[{"role": "user", "content": "word " * 5000}]]}).to_parquet(parquet)
    capped = fitted_lengths("quickstart_ci", parquet, tiny_tokenizer_dir)
    assert override_value(capped, "data.max_prompt_length") == str(profile["data.max_prompt_length"])


CHILD = """
import signal, sys, time
def stop(signum, frame):
    open(sys.argv[1], "w").write("stopped cleanly")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1], "w").write("ready")
time.sleep(120)
"""

DRIVER = """
import signal, sys
from pathlib import Path
from cobalt.recipes.quickstart.run import QuickstartConfig, Run
def interrupt(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, interrupt)
Run(Path(sys.argv[3]), QuickstartConfig(), "test").command("child", [sys.executable, "-c", sys.argv[1], sys.argv[2]])
"""


def quickstart_running_a_command(tmp_path):
    """A quickstart (DRIVER) whose stage command (CHILD) has started; its marker file."""
    import subprocess
    import sys
    import time

    marker = tmp_path / "child.txt"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, CHILD, str(marker), str(tmp_path / "run")])
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text() == "ready"):
        assert time.monotonic() < deadline and driver.poll() is None, "the command never started"
        time.sleep(0.1)
    return driver, marker


def test_an_interrupted_stage_asks_its_command_to_stop_instead_of_killing_it(tmp_path):
    """A command killed at once cannot stop its own children (the launcher's veRL trainer was left
    running after an interrupted quickstart): the command gets SIGTERM and time to clean up."""
    import signal

    driver, marker = quickstart_running_a_command(tmp_path)
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(timeout=60) != 0  # the interrupt still ends the quickstart
    assert marker.read_text() == "stopped cleanly"


def test_a_command_stops_when_the_quickstart_is_killed(tmp_path):
    """Regression: a quickstart that died without stopping its commands (aborted by Ray's SIGTERM
    handler, or killed) left them running, orphaned, against a Ray head that had died with it."""
    import time

    driver, marker = quickstart_running_a_command(tmp_path)
    driver.kill()  # no chance to stop anything itself
    driver.wait(timeout=60)
    deadline = time.monotonic() + 30
    while marker.read_text() != "stopped cleanly":
        assert time.monotonic() < deadline, "the command outlived the quickstart"
        time.sleep(0.1)


@pytest.mark.parametrize(
    "profile", ["quickstart", "quickstart_ci", "learn", "generalize", "generalize_prereg"]
)
def test_every_quickstart_profile_loads_and_dry_runs(profile, capsys):
    """``--dry-run`` resolves a profile (its extends chain and its GRPO profile) and runs nothing."""
    import json

    from cobalt.recipes.quickstart.run import main

    assert main(["--profile", profile, "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    settings = plan["settings"]
    assert plan["profile"] == profile and settings["grpo_steps"] >= 1
    assert plan["grpo_profile"]["data.train_batch_size"] >= 1


@pytest.mark.parametrize("profile", ["generalize_ft", "generalize_ft_pilot"])
def test_a_profile_with_a_start_per_training_seed_dry_runs_with_one_and_names_the_flag_without(
    profile, capsys
):
    import json

    from cobalt.common.errors import ConfigError
    from cobalt.recipes.quickstart.run import main

    assert main(["--profile", profile, "--train-seed", "2", "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["training"]["warm_up_seed"] == 2 and plan["settings"]["eval_turns"] == 3
    with pytest.raises(
        ConfigError, match=r"warmup\.seed is train_seed \(a start per training seed\): pass --train-seed"
    ):
        main(["--profile", profile, "--dry-run"])


def test_the_learn_profile_trains_longer_and_evaluates_with_four_feedback_turns():
    from cobalt.common.config import load_config

    learn, default = load_config("learn"), load_config("quickstart")
    assert learn["problems"] == "embedded_easy" and learn["grpo_steps"] >= 10 * default["grpo_steps"]
    assert learn["eval_turns"] >= 4 and learn["eval_samples"] * learn["heldout_problems"] >= 60


def test_the_learn_profile_evaluates_a_subset_of_its_training_problems(tmp_path):
    import dataclasses

    from cobalt.common.config import from_dict, load_config
    from cobalt.common.jsonl import load_jsonl
    from cobalt.recipes.quickstart.run import QuickstartConfig, Run, split_problems, train_eval_subset

    cfg = from_dict(QuickstartConfig, load_config("learn"), source="configs/learn")
    run = Run(tmp_path, cfg, "learn")
    train, _ = split_problems(run)
    subset = train_eval_subset(run, train)
    expected = load_jsonl(train)[: cfg.train_eval_problems]
    assert 0 < cfg.train_eval_problems < cfg.train_problems and load_jsonl(subset) == expected
    assert train_eval_subset(Run(tmp_path / "none", QuickstartConfig(), "quickstart"), train) is None
    too_many = dataclasses.replace(cfg, train_eval_problems=cfg.train_problems + 1)
    with pytest.raises(ValueError, match="train_eval_problems: 41, but the run has 40 training problems"):
        train_eval_subset(Run(tmp_path / "more", too_many, "learn"), train)


def test_a_stage_interrupted_and_resumed_is_timed_over_both_invocations(tmp_path, monkeypatch):
    """Seed 0 of the second design resumed its trajectories in a second invocation: its record kept
    the second part alone (730 of about 2,120 s), and the cost per example read that."""
    from cobalt.pipeline import report, stages
    from cobalt.recipes.quickstart.config import QuickstartConfig

    clock = {"wall": 0.0, "cpu": 0.0}
    monkeypatch.setattr(stages.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(stages, "machine_cpu_seconds", lambda: clock["cpu"])

    def works(seconds, then=None):
        def action():
            clock["wall"] += seconds
            clock["cpu"] += 2 * seconds
            if then:
                raise then

        return action

    first = stages.Run(tmp_path, QuickstartConfig(), "test")
    with pytest.raises(KeyboardInterrupt):
        first.timed("trajectories: multi-turn", works(1400, KeyboardInterrupt()), concurrent=True)
    assert json.loads((tmp_path / "stages.json").read_text())["trajectories: multi-turn"]["unfinished"]
    resumed = stages.Run(tmp_path, QuickstartConfig(), "test")
    resumed.timed("trajectories: multi-turn", works(730), concurrent=True)
    assert resumed.state["trajectories: multi-turn"] == {
        "seconds": 2130.0,
        "machine_cpu_s": 4260.0,
        "concurrent": True,
        "invocations": 2,
    }
    times = report.stage_times(resumed.state)
    assert times["stages"]["trajectories: multi-turn"] == 2130.0
    assert "trajectories: multi-turn (2 invocations) | 2130 |" in "\n".join(report.times_table(times))
    # a finished stage run again (a new output asked for) is timed afresh, not added to
    resumed.timed("trajectories: multi-turn", works(5))
    assert resumed.state["trajectories: multi-turn"]["seconds"] == 5.0


def test_one_models_chains_run_side_by_side_in_one_block_after_one_deploy(tmp_path, monkeypatch):
    """The orchestration only: which chains run, in one block, on one deploy (the chains' commands
    themselves are exercised by tests/test_quickstart.py)."""
    from cobalt.pipeline import stages
    from cobalt.recipes.quickstart import run as quickstart

    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": 1}\n{"id": 2}\n')
    calls = []

    def fake_chain(run, tag, model, chain, concurrent=False):
        calls.append((tag, chain.samples, chain.turns, concurrent))
        for name in ("single", "multi", "eval"):  # one line per problem, as the real chain's
            run.path(f"{tag}/{name}.jsonl").write_text(chain.problems.read_text())

    monkeypatch.setattr(stages, "self_debug", fake_chain)
    monkeypatch.setattr(stages, "deploy", lambda run, label, model: calls.append(("deploy", label)))
    run = quickstart.Run(tmp_path, quickstart.QuickstartConfig(eval_samples=3, eval_turns=5), "test")
    chains = quickstart.evaluation_chains(run, "trained", problems, problems)
    out = stages.self_debug_side_by_side(run, "trained model", tmp_path / "m", chains)
    assert calls[0] == ("deploy", "trained model")
    assert sorted(calls[1:]) == [("eval_trained", 3, 5, True), ("eval_trained_train", 3, 5, True)]
    assert out == {tag: stages.evaluated(run, tag) for tag in ("eval_trained", "eval_trained_train")}
    assert "self-debugging: trained evaluation ∥ trained on training problems" in run.state
    # complete: a second call neither deploys nor runs a chain
    calls.clear()
    stages.self_debug_side_by_side(run, "trained model", tmp_path / "m", chains)
    assert calls == []
    # one chain (the default profile's trained evaluation) runs on its own, not in a block
    alone = quickstart.evaluation_chains(run, "base", problems, None)
    stages.self_debug_side_by_side(run, "base model", tmp_path / "m", alone)
    assert calls == [("deploy", "base model"), ("eval_base", 3, 5, False)]


# ---------------------------------------------------------------- problem files as datasets ship them
def test_a_problem_file_is_recognised_by_its_fields_and_anything_else_named(tmp_path):
    from data_fixtures import lcb_file, taco_file

    from cobalt.common.errors import DataError
    from cobalt.data.sources import file_shape

    assert file_shape(taco_file(tmp_path / "t.parquet", limit=2)) == "taco"
    assert file_shape(taco_file(tmp_path / "t.jsonl", limit=2)) == "taco"
    assert file_shape(lcb_file(tmp_path / "l.jsonl", limit=2)) == "lcb"
    records = tmp_path / "p.jsonl"
    records.write_text(json.dumps({"id": "a", "instruction": "x", "test_cases": "[]"}) + "\n")
    assert file_shape(records) == "problems"
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"prompt": "x"}) + "\n")
    with pytest.raises(
        DataError, match=r"other.jsonl:1: not a problem file \(its fields are prompt; expected problems"
    ):
        file_shape(other)


def quickstart_run(tmp_path, problems, **settings):
    """A quickstart run whose conversion commands run and whose other commands are only recorded
    (the warm-up's leaves the file that marks it done)."""
    from pathlib import Path

    from cobalt.recipes.quickstart.run import QuickstartConfig, Run

    cfg = QuickstartConfig(problems=str(problems), train_problems=2, heldout_problems=1, **settings)
    run = Run(tmp_path / "run", cfg, "test")
    commands, run_command = {}, run.command

    def command(name, args, env=None):
        commands[name] = [str(a) for a in args]
        if name.endswith("_preproc"):
            return run_command(name, args, env)
        out = Path(commands[name][commands[name].index("--out") + 1])
        out.mkdir(parents=True)
        (out / "warm_up.json").write_text("{}")

    run.command = command
    return run, commands


@pytest.mark.parametrize("shape", ["taco", "lcb"])
def test_a_taco_or_livecodebench_file_is_converted_then_split(tmp_path, shape):
    from data_fixtures import lcb_file, taco_file

    from cobalt.common.jsonl import load_jsonl
    from cobalt.recipes.quickstart.run import split_problems

    raw = (
        taco_file(tmp_path / "raw.parquet", limit=4)
        if shape == "taco"
        else lcb_file(tmp_path / "raw.jsonl", limit=4)
    )
    run, commands = quickstart_run(tmp_path, raw)
    train, heldout = split_problems(run)
    ids = [r["id"] for r in load_jsonl(train) + load_jsonl(heldout)]
    assert len(ids) == 3 and len(set(ids)) == 3 and all(i.startswith(f"{shape}-") for i in ids)
    script = {"taco": "preproc/preproc_taco.py", "lcb": "preproc/preproc_lcb_test6.py"}[shape]
    assert commands["problems_preproc"][1].endswith(script)  # run with this Python, as every preproc step
    assert f"problems: {shape} file to problem records" in run.state


def test_the_warm_up_answers_with_the_files_own_solutions_or_the_embedded_ones(tmp_path):
    from data_fixtures import lcb_file, taco_file

    from cobalt.common.jsonl import load_jsonl
    from cobalt.recipes.quickstart.run import warm_up

    taco = taco_file(tmp_path / "taco.parquet", limit=3)
    run, commands = quickstart_run(tmp_path / "a", taco)
    warm_up(run, tmp_path / "base", tmp_path / "train.jsonl")
    assert commands["warmup"][commands["warmup"].index("--solutions") + 1] == str(taco)

    run, commands = quickstart_run(tmp_path / "b", lcb_file(tmp_path / "lcb.jsonl", limit=3))
    warm_up(run, tmp_path / "base", tmp_path / "train.jsonl")
    problems = commands["warmup"][commands["warmup"].index("--problems") + 1]
    assert "--solutions" not in commands["warmup"] and problems != str(tmp_path / "train.jsonl")
    assert all(not r["id"].startswith("lcb-") for r in load_jsonl(problems))  # the embedded problems

    # a model of the user's own (an 8B model, say) is used as it is: no CPU warm-up
    run, commands = quickstart_run(tmp_path / "c", taco, model=str(tmp_path / "my_model"))
    assert warm_up(run, tmp_path / "my_model", tmp_path / "train.jsonl") == tmp_path / "my_model"
    assert commands == {}


TESTS = json.dumps({"inputs": ["1"], "outputs": ["1"]})


def test_the_sft_finds_solutions_in_a_taco_file_and_refuses_problems_without_any(tmp_path):
    from data_fixtures import taco_file

    from cobalt.data.sources import iter_local
    from cobalt.train.sft import main, solutions_by_id

    taco = taco_file(tmp_path / "taco.jsonl", limit=2)
    found = solutions_by_id(record for _, record in iter_local(taco))
    assert sorted(found) == ["taco-00000", "taco-00001"] and all(
        "print" in s or "write" in s for s in found.values()
    )
    problems = tmp_path / "problems.jsonl"
    problems.write_text(json.dumps({"id": "taco-00000", "instruction": "x", "test_cases": TESTS}) + "\n")
    with pytest.raises(SystemExit, match=r"problems.jsonl: none of its 1 problems has a reference solution"):
        main(["--model", str(tmp_path / "m"), "--problems", str(problems), "--out", str(tmp_path / "o")])


def test_the_private_head_offers_fake_gpus_to_a_cpu_profile_and_the_gpus_found_to_a_gpu_one(monkeypatch):
    """Before, a GPU profile's run started its head with 0 GPUs and its vLLM replicas never placed."""
    from cobalt.recipes.quickstart.run import QuickstartConfig, head_size

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    cpus, gpus, why = head_size(QuickstartConfig(train_profile="quickstart_ci"))
    assert (cpus, gpus) == (8, 1) and why.startswith("CPU platform")  # cpu_smoke's one fake GPU
    assert head_size(QuickstartConfig(train_profile="multi_turn_qwen3_8b"))[1:] == (
        4,
        "detected: CUDA_VISIBLE_DEVICES='0,1,2,3'",
    )
    assert head_size(QuickstartConfig(train_profile="multi_turn_qwen3_8b", num_gpus=8))[1] == 8


def test_the_warm_up_takes_the_procedural_families_solutions_beside_their_problems(tmp_path):
    import subprocess
    import sys

    from cobalt.recipes.quickstart.run import warm_up

    out = tmp_path / "families"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cobalt.data.procedural",
            "--out",
            str(out),
            "--train",
            "6",
            "--dev",
            "2",
            "--heldout",
            "2",
        ],
        check=True,
        capture_output=True,
    )
    run, commands = quickstart_run(tmp_path / "run", out / "train.jsonl")
    warm_up(run, tmp_path / "base", tmp_path / "train.jsonl")
    assert commands["warmup"][commands["warmup"].index("--solutions") + 1] == str(out / "solutions.jsonl")


def test_the_generalize_profile_builds_its_splits_offline_trajectories_and_greedy_chains(tmp_path):
    """``problems: procedural`` with ``offline_trajectories``: the splits and the offline
    trajectories come from their real commands (the model's commands are only recorded); the
    evaluation chains are greedy and include the held-out families."""
    import dataclasses

    from cobalt.common.config import from_dict, load_config
    from cobalt.common.jsonl import load_jsonl
    from cobalt.data.procedural import HELDOUT_FAMILIES, parse_id
    from cobalt.recipes.quickstart.run import (
        QuickstartConfig,
        Run,
        all_trajectories,
        evaluation_chains,
        heldout_families,
        offline_trajectories,
        split_problems,
        warm_up,
    )

    cfg = from_dict(QuickstartConfig, load_config("generalize"), source="configs/generalize")
    small = dataclasses.replace(
        cfg,
        train_problems=4,
        heldout_problems=3,
        procedural={**cfg.procedural, "dev": 2, "heldout_families": 2},
        warmup={**cfg.warmup, "problems": 2},
        offline_trajectories={**cfg.offline_trajectories, "num_samples": 2},
    )
    run = Run(tmp_path / "run", small, "generalize")
    recorded, real_command = {}, run.command

    def command(name, args, env=None):
        if name in ("procedural", "offline"):
            return real_command(name, args, env)
        recorded[name] = [str(a) for a in args]
        (tmp_path / "run/models/warm").mkdir(parents=True)
        (tmp_path / "run/models/warm/warm_up.json").write_text("{}")

    run.command = command
    train, heldout = split_problems(run)
    families = heldout_families(run)
    assert [len(load_jsonl(f)) for f in (train, heldout, families)] == [4, 3, 2]
    family = lambda path: {parse_id(r["id"])[0] for r in load_jsonl(path)}  # noqa: E731
    assert family(families) <= set(HELDOUT_FAMILIES) and not family(train) & set(HELDOUT_FAMILIES)
    assert not {r["id"] for r in load_jsonl(train)} & {r["id"] for r in load_jsonl(heldout)}

    warm_up(run, tmp_path / "base", train)
    warm = recorded["warmup"]
    assert warm[warm.index("--solutions") + 1] == str(tmp_path / "run/data/procedural/solutions.jsonl")
    assert load_jsonl(warm[warm.index("--problems") + 1]) == load_jsonl(train)[:2]

    offline = offline_trajectories(run, train)
    rows = load_jsonl(offline)
    assert rows and {r["id"] for r in rows} <= {r["id"] for r in load_jsonl(train)}
    assert all(len(r["all_pass_rates"]) == 2 for r in rows)  # num_samples conversations each
    assert all_trajectories(run, None, offline) == offline  # train_samples 0: the offline ones only

    chains = evaluation_chains(run, "base", heldout, None, families)
    assert sorted(chains) == ["eval_base", "eval_base_families"]
    assert all(c.samples == 1 and c.temperature == 0 and c.turns == 1 for c in chains.values())
    run.address = "127.0.0.1:1"
    args = [str(a) for a in run.inference_args(chains["eval_base"].temperature)]
    assert args[args.index("--temperature") + 1] == "0"

    tuning = Run(
        tmp_path / "run", dataclasses.replace(small, procedural={**small.procedural, "evaluate": "dev"}), "g"
    )
    assert split_problems(tuning)[1] == tmp_path / "run/data/procedural/dev.jsonl"


def test_settings_that_would_fail_a_later_stage_fail_before_any_stage(tmp_path):
    from cobalt.recipes.quickstart.run import main

    assert main(["--profile", "generalize", "--dry-run"]) == 0
    with pytest.raises(SystemExit, match=r"preregistration\.turn: 5; expected last or 0\.\.1"):
        main(["--profile", str(write_profile(tmp_path, {"preregistration": {"turn": 5}})), "--dry-run"])
    with pytest.raises(
        SystemExit, match=r"preregistration\.primary: 'training_problems'; this run evaluates"
    ):
        main(
            [
                "--profile",
                str(write_profile(tmp_path, {"preregistration": {"primary": "training_problems"}})),
                "--dry-run",
            ]
        )
    with pytest.raises(SystemExit, match="offline_trajectories needs problems: procedural, not 'embedded'"):
        main(["--profile", str(write_profile(tmp_path, {"problems": "embedded"})), "--dry-run"])
    with pytest.raises(SystemExit, match="train_samples is 0 and there are no offline_trajectories"):
        main(["--profile", str(write_profile(tmp_path, {"offline_trajectories": None})), "--dry-run"])


def write_profile(tmp_path, settings: dict):
    """A profile extending generalize with ``settings`` laid over its pre-registration."""
    from pathlib import Path

    import yaml

    path = tmp_path / "profile.yaml"
    generalize = Path(__file__).resolve().parents[1] / "configs/generalize.yaml"
    path.write_text(yaml.safe_dump({"extends": str(generalize), **settings}))
    return path


def test_a_stage_records_the_machines_cpu_seconds_beside_its_wall_time(tmp_path):
    """The second design's cost per training example is measured in its runs: each stage's
    machine-wide CPU-seconds (the machine runs nothing else then) beside its seconds."""
    import time

    from cobalt.pipeline.report import stage_times
    from cobalt.pipeline.stages import machine_cpu_seconds
    from cobalt.recipes.quickstart.run import QuickstartConfig, Run

    def burn():
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        (tmp_path / "out").write_text("x")

    run = Run(tmp_path, QuickstartConfig(), "test")
    run.stage("burn", (tmp_path / "out").exists, burn)
    recorded = run.state["burn"]
    assert recorded["machine_cpu_s"] >= 0.4  # this process's half second, and whatever else ran
    assert machine_cpu_seconds() > recorded["machine_cpu_s"]
    assert stage_times(run.state)["stages_machine_cpu_s"] == {"burn": recorded["machine_cpu_s"]}


def test_held_out_instances_seen_by_form_are_not_evaluated_with_heldout_unseen_only(tmp_path):
    """procedural.heldout_unseen_only (the second design): the evaluated held-out file holds the
    instances no training reference has the program of, every one of them, and nothing else."""
    import dataclasses

    from cobalt.common.config import from_dict, load_config
    from cobalt.common.jsonl import load_jsonl
    from cobalt.data.novelty import UNSEEN, run_novelty
    from cobalt.recipes.quickstart.run import QuickstartConfig, Run, split_problems

    cfg = from_dict(QuickstartConfig, load_config("generalize_ft"), source="configs/generalize_ft")
    small = dataclasses.replace(
        cfg,
        train_problems=72,
        heldout_problems=72,
        procedural={**cfg.procedural, "dev": 0, "heldout_families": 6},
    )
    run = Run(tmp_path / "run", small, "generalize_ft")
    train, evaluated = split_problems(run)
    form = run_novelty(run.root)["heldout"]
    unseen = sorted(i for i, kind in form.items() if kind == UNSEEN)
    assert 0 < len(unseen) < 72  # the 72 held-out instances hold both kinds
    assert sorted(str(r["id"]) for r in load_jsonl(evaluated)) == unseen
    assert evaluated == run.root / "data/heldout_unseen.jsonl" and train.name == "train.jsonl"
