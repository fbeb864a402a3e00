"""A small first GPU run of ``scripts/reproduce_paper.sh``: ``--max_problems N``, the engine's context
(``--max_model_len`` or the config key), and a chain config of one's own that starts from ``paper``."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
from data_fixtures import lcb_file, taco_file

from cobalt.config import from_dict, load_config
from cobalt.reproduce import PaperConfig, with_engine_context

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def files(tmp_path):
    taco_file(tmp_path / "taco.jsonl", limit=4)
    lcb_file(tmp_path / "lcb.jsonl", limit=3)
    return tmp_path


def reproduce(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CUDA_VISIBLE", "COBALT_PROFILE"))
    }
    cmd = ["bash", str(ROOT / "scripts/reproduce_paper.sh"), "--profile", "multi_turn_qwen3_8b",
           "--taco", "taco.jsonl", "--lcb", "lcb.jsonl", "--dry-run", *args]  # fmt: skip
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def plan_of(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout[: proc.stdout.index("\n}\n") + 2])


def test_problems_and_the_engines_context_by_flag(files):
    plan = plan_of(reproduce(files, "--max_problems", "3", "--max_model_len", "16384"))
    assert (plan["chain"]["max_problems"], plan["chain"]["max_model_len"]) == (3, 16384)
    assert plan["context_budget"]["context"] == 16384  # the turns that fit, at that context


def test_a_config_of_ones_own_extends_paper_by_name_and_a_missing_parent_is_one_line(files):
    (files / "small.yaml").write_text("extends: paper\nmax_problems: 2\nmax_model_len: 32768\n")
    chain = plan_of(reproduce(files, "--config", "small.yaml"))["chain"]
    assert (chain["max_problems"], chain["max_model_len"], chain["eval_turns"]) == (2, 32768, 8)
    (files / "bad.yaml").write_text("extends: papr\n")
    proc = reproduce(files, "--config", "bad.yaml")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        f"error: bad.yaml: extends: 'papr' names no config file (not papr.yaml nor {ROOT}/configs/papr.yaml)"
    )


def test_the_engine_of_every_stage_gets_the_context(tmp_path):
    from cobalt.serve.engine import load_engine_config

    cfg = from_dict(PaperConfig, load_config("paper"))
    assert with_engine_context(cfg, tmp_path) == cfg  # not set: the engine config as it is
    run_cfg = with_engine_context(dataclasses.replace(cfg, max_model_len=16384), tmp_path / "run")
    assert run_cfg.engine_config == str(tmp_path / "run/engine.yaml")
    engine = load_engine_config(run_cfg.engine_config).llm["engine_kwargs"]
    paper = load_engine_config("engine_paper").llm["engine_kwargs"]
    assert engine == {**paper, "max_model_len": 16384}
