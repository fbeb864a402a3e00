"""Attention that works: where flash-attn does not import, GRPO runs with ``sdpa`` (and
remove-padding off), and the dry runs say which backend the run will use. A stand-in
``flash_attn`` package on ``PYTHONPATH`` shows the other branch: the choice follows the import."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt.train.attention import PADDING_KEY, choose
from cobalt.train.profile import ATTENTION_KEY

ROOT = Path(__file__).resolve().parents[1]
SDPA = f"+{ATTENTION_KEY}=sdpa"


def test_the_choice_follows_flash_attn_and_keeps_what_is_set():
    fallback = choose(["a=1"], flash_attn=False)
    assert fallback.backend == "sdpa" and fallback.overrides == [SDPA, f"{PADDING_KEY}=false"]
    assert choose(["a=1"], flash_attn=True) == choose(["a=1"], flash_attn=True)
    assert choose(["a=1"], flash_attn=True).backend == "flash_attention_2"
    assert choose(["a=1"], flash_attn=True).overrides == []
    explicit = choose([f"+{ATTENTION_KEY}=eager"], flash_attn=False)
    assert explicit.backend == "eager" and explicit.overrides == []
    doomed = choose([f"+{ATTENTION_KEY}=flash_attention_2"], flash_attn=False)
    assert doomed.overrides == [] and "flash-attn does not import here" in doomed.note


def env_with(flash_attn_dir: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CUDA_VISIBLE", "PYTHONPATH"))}
    if flash_attn_dir:
        env["PYTHONPATH"] = str(flash_attn_dir)
    return env


def launch_dry_run(env: dict, *extra: str) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cobalt.train.launch",
            "--profile",
            "multi_turn_qwen3_8b",
            "--dry-run",
            *extra,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.fixture
def fake_flash_attn(tmp_path):
    site = tmp_path / "site"  # not the commands' working directory, which python -m puts on sys.path
    (site / "flash_attn").mkdir(parents=True)
    (site / "flash_attn/__init__.py").write_text("__version__ = 'stand-in'\n")
    return site


def test_without_flash_attn_the_paper_profile_trains_with_sdpa_and_the_dry_run_says_so(fake_flash_attn):
    import importlib.util

    assert importlib.util.find_spec("flash_attn") is None  # this machine: no flash-attn
    plan = launch_dry_run(env_with(None))
    assert plan["command"][-2:] == [SDPA, f"{PADDING_KEY}=false"]
    assert plan["attention"].startswith("attention: sdpa, as flash-attn does not import here")
    mine = launch_dry_run(env_with(None), f"{PADDING_KEY}=true")  # the user's own overrides still win
    assert mine["command"][-3:] == [SDPA, f"{PADDING_KEY}=false", f"{PADDING_KEY}=true"]
    with_flash = launch_dry_run(env_with(fake_flash_attn))
    assert SDPA not in with_flash["command"] and with_flash["attention"].startswith(
        "attention: flash_attention_2"
    )


def test_the_paper_chains_dry_run_says_which_attention_it_will_use(tmp_path, fake_flash_attn):
    from data_fixtures import lcb_file, taco_file

    paper = "--profile multi_turn_qwen3_8b --taco t.jsonl --lcb l.jsonl --dry-run"
    cmd = ["bash", str(ROOT / "scripts/reproduce_paper.sh"), *paper.split()]
    taco_file(tmp_path / "t.jsonl", limit=2)  # each file of its dataset's shape (the dry run checks)
    lcb_file(tmp_path / "l.jsonl", limit=2, start=2)

    def attention(env):
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout[: proc.stdout.index("\n}\n") + 2])["attention"]

    assert attention(env_with(None)).startswith("attention: sdpa, as flash-attn does not import here")
    assert attention(env_with(fake_flash_attn)).startswith("attention: flash_attention_2")


def test_the_preflight_fails_on_the_choices_field_not_on_the_wording_of_its_note():
    from cobalt.recipes.paper.preflight import check_attention

    unloadable = choose([f"+{ATTENTION_KEY}=flash_attention_2"], flash_attn=False)
    assert not unloadable.loads and check_attention(unloadable).level == "fail"
    assert choose([f"+{ATTENTION_KEY}=flash_attention_2"], flash_attn=True).loads
    assert choose([f"+{ATTENTION_KEY}=sdpa"], flash_attn=False).loads
    reworded = dataclasses.replace(
        unloadable, note="attention: flash_attention_2 (cannot load: no flash-attn)"
    )
    assert check_attention(reworded).level == "fail"
    told = dataclasses.replace(unloadable, loads=True)  # whatever the note says, the field decides
    assert check_attention(told).level == "ok"


def test_a_profile_is_single_turn_by_its_field_not_by_its_file_names(tmp_path):
    from cobalt.train.profile import load_profile, single_turn

    assert single_turn("single_turn_r1_distill_llama_8b") and not single_turn("multi_turn_qwen3_8b")
    own = tmp_path / "mine.yaml"
    own.write_text(
        "extends: multi_turn_qwen3_8b\noverrides:\n  data.train_files: data/single_turn_v2/train.parquet\n"
    )
    assert not single_turn(str(own))  # a file name says nothing
    own.write_text(
        "extends: multi_turn_qwen3_8b\nsingle_turn: true\noverrides:\n  data.train_files: d/t.parquet\n"
    )
    assert single_turn(str(own)) and load_profile(str(own)).single_turn
