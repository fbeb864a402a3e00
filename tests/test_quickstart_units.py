"""Pieces of the quickstart that need no cluster."""

from __future__ import annotations

import pandas as pd
import pytest
from transformers import AutoTokenizer

from cobalt.quickstart import fitted_lengths
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
from cobalt.quickstart import QuickstartConfig, Run
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


@pytest.mark.parametrize("profile", ["quickstart", "quickstart_ci", "learn"])
def test_every_quickstart_profile_loads_and_dry_runs(profile, capsys):
    """``--dry-run`` resolves a profile (its extends chain and its GRPO profile) and runs nothing."""
    import json

    from cobalt.quickstart import main

    assert main(["--profile", profile, "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    settings = plan["settings"]
    assert plan["profile"] == profile and settings["grpo_steps"] >= 1
    assert plan["grpo_profile"]["data.train_batch_size"] >= 1


def test_the_learn_profile_trains_longer_and_evaluates_with_four_feedback_turns():
    from cobalt.config import load_config

    learn, default = load_config("learn"), load_config("quickstart")
    assert learn["problems"] == "embedded_easy" and learn["grpo_steps"] >= 10 * default["grpo_steps"]
    assert learn["eval_turns"] >= 4 and learn["eval_samples"] * learn["heldout_problems"] >= 60


def test_the_learn_profile_evaluates_a_subset_of_its_training_problems(tmp_path):
    import dataclasses

    from cobalt.config import from_dict, load_config
    from cobalt.jsonl import load_jsonl
    from cobalt.quickstart import QuickstartConfig, Run, split_problems, train_eval_subset

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


def test_one_models_chains_run_side_by_side_in_one_block_after_one_deploy(tmp_path, monkeypatch):
    """The orchestration only: which chains run, in one block, on one deploy (the chains' commands
    themselves are exercised by tests/test_quickstart.py)."""
    from cobalt import quickstart, stages

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
