"""``scripts/fetch_paper_data.sh``: the paper's data by command, checked, and the command to run next.

No test reaches the network: ``--from DIR`` reads a local directory laid out as the hub's
repositories, made here from small files in each dataset's shipped format (TACO-verified as one JSON
array, LiveCodeBench's test6.jsonl with compressed private tests, the released sets as the hub's
parquet shards). The printed dry run then estimates from the files' real row counts."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from data_fixtures import lcb_file

from cobalt.data.embedded import load_problems, to_taco_records

ROOT = Path(__file__).resolve().parents[1]


def released_records(start: int, n: int, perturbed: bool = False) -> list[dict]:
    """Processed problem records (reference section 1), as the authors release them."""
    tests = json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n", "2\n"]})
    rows = [{"id": f"cobalt-{i}", "difficulty": "EASY", "question": f"Problem {i}: print the number read.",
             "instruction": f"Solve problem {i}.", "test_cases": tests, "public_test_cases": tests,
             "hidden_test_cases": tests} for i in range(start, start + n)]  # fmt: skip
    if perturbed:
        swapped = json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["2\n", "1\n"]})
        rows = [{**row, "perturbed_public_test_cases": swapped} for row in rows]
    return rows


@pytest.fixture
def hub(tmp_path) -> Path:
    """A local stand-in for the hub: 6 TACO-verified problems, 3 LiveCodeBench, the released
    train in two parquet shards (5 + 4) beside a validation shard, and a perturbed dev of 2."""
    hub = tmp_path / "hub"
    taco = hub / "likaixin/TACO-verified/taco_verified.json"
    taco.parent.mkdir(parents=True)
    rows = to_taco_records(load_problems()[:6])
    taco.write_text(json.dumps([{**row, "id": f"taco-{i:05d}"} for i, row in enumerate(rows)]))
    lcb = hub / "livecodebench/code_generation_lite/test6.jsonl"
    lcb.parent.mkdir(parents=True)
    lcb_file(lcb, limit=3, start=6)
    data = hub / "osunlp/TACO-Cobalt/data"
    data.mkdir(parents=True)
    pd.DataFrame(released_records(0, 5)).to_parquet(data / "train-00000-of-00002.parquet")
    pd.DataFrame(released_records(5, 4)).to_parquet(data / "train-00001-of-00002.parquet")
    pd.DataFrame(released_records(100, 3)).to_parquet(data / "validation-00000-of-00001.parquet")
    ptb = hub / "osunlp/TACO-Cobalt-PTB/data"
    ptb.mkdir(parents=True)
    pd.DataFrame(released_records(100, 2, perturbed=True)).to_parquet(
        ptb / "validation-00000-of-00001.parquet"
    )
    return hub


def env(home: Path) -> dict:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CUDA_VISIBLE", "COBALT_PROFILE"))
    }
    return {**base, "HOME": str(home), "HF_HUB_OFFLINE": "1"}


def fetch(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts/fetch_paper_data.sh"), *args], cwd=cwd, env=env(cwd / "home"),
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def dry_run_estimate(command: str, cwd: Path) -> dict:
    proc = subprocess.run(shlex.split(command), cwd=cwd, env=env(cwd / "home"), capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout[: proc.stdout.index("\n}\n") + 2])["estimate"]


def test_the_fetched_files_are_checked_and_the_printed_dry_run_estimates_their_real_counts(hub, tmp_path):
    out = tmp_path / "paper-data"
    proc = fetch(tmp_path, "--from", str(hub), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    taco, lcb = (
        out / "likaixin/TACO-verified/taco_verified.json",
        out / "livecodebench/code_generation_lite/test6.jsonl",
    )
    assert (
        f"{taco}: 6 rows, each with id, question, solutions, input_output, source, difficulty" in proc.stdout
    )
    assert f"{lcb}: 3 rows" in proc.stdout
    command = proc.stdout.strip().splitlines()[-1]
    assert command.endswith(f"--profile multi_turn_qwen3_8b --taco {taco} --lcb {lcb} --model DIR --dry-run")
    assert dry_run_estimate(command, tmp_path)["problems"] == {"train": 5, "dev": 1, "lcb": 3}


def test_the_released_files_become_one_jsonl_each_passed_as_given(hub, tmp_path):
    out = tmp_path / "paper-data"
    proc = fetch(tmp_path, "--from", str(hub), "--out", str(out), "--released")
    assert proc.returncode == 0, proc.stderr
    train, dev = out / "taco_cobalt_train.jsonl", out / "taco_cobalt_ptb.jsonl"
    assert f"{train}: 9 rows" in proc.stdout and f"{dev}: 2 rows" in proc.stdout  # the two train shards only
    assert [json.loads(line)["id"] for line in train.read_text().splitlines()] == [
        f"cobalt-{i}" for i in range(9)
    ]
    command = proc.stdout.strip().splitlines()[-1]
    assert f"--taco {train} --taco-dev {dev} --lcb " in command
    assert dry_run_estimate(command, tmp_path)["problems"] == {"train": 9, "dev": 2, "lcb": 3}


def test_a_row_without_a_required_field_or_a_missing_dataset_is_one_error_naming_it(hub, tmp_path):
    lcb = hub / "livecodebench/code_generation_lite/test6.jsonl"
    rows = [json.loads(line) for line in lcb.read_text().splitlines()]
    del rows[1]["private_test_cases"]
    lcb.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "paper-data"
    proc = fetch(tmp_path, "--from", str(hub), "--out", str(out))
    assert proc.returncode == 1
    copied = out / "livecodebench/code_generation_lite/test6.jsonl"
    assert proc.stderr.strip() == f"error: {copied}:2: field 'private_test_cases': missing"
    (hub / "osunlp/TACO-Cobalt-PTB/data/validation-00000-of-00001.parquet").unlink()
    proc = fetch(tmp_path, "--from", str(hub), "--out", str(tmp_path / "other"), "--released")
    assert (
        proc.returncode == 1
        and "no file of *.jsonl, *.json, *.parquet in osunlp/TACO-Cobalt-PTB" in proc.stderr
    )
