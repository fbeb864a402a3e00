"""The preproc/*.py entry points: --help, bad input stops with file/line/field, safe outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from data_fixtures import trajectory

from cobalt.common.jsonl import write_jsonl

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [
    "preproc_taco",
    "preproc_lcb_test6",
    "run_perturbation",
    "process_multi_turn_taco",
    "verl_preproc_single_turn",
    "verl_preproc_multi_turn",
]


def run(script, *args, cwd=None):
    return subprocess.run(
        [sys.executable, str(ROOT / "preproc" / f"{script}.py"), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_cli_has_help(script):
    proc = run(script, "--help")
    assert proc.returncode == 0 and "usage:" in proc.stdout


def test_missing_input_file_is_named(tmp_path):
    proc = run(
        "run_perturbation", "--input_file", tmp_path / "nope.jsonl", "--output_file", tmp_path / "o.jsonl"
    )
    assert proc.returncode == 2 and "nope.jsonl: file does not exist" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_truncated_line_is_named_and_no_output_left(tmp_path):
    good = {"id": 1, "public_test_cases": json.dumps({"inputs": ["a", "b"], "outputs": ["1", "2"]})}
    (tmp_path / "in.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(good)[:30] + "\n")
    proc = run("run_perturbation", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "o.jsonl")
    assert proc.returncode == 2 and "in.jsonl:2: invalid JSON" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists() and leftovers(tmp_path) == []


def test_existing_output_is_not_overwritten(tmp_path):
    good = {"id": 1, "public_test_cases": json.dumps({"inputs": ["a", "b"], "outputs": ["1", "2"]})}
    write_jsonl(tmp_path / "in.jsonl", [good])
    (tmp_path / "o.jsonl").write_text("keep me\n")
    proc = run("run_perturbation", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "o.jsonl")
    assert proc.returncode == 2 and "--overwrite" in proc.stderr
    assert (tmp_path / "o.jsonl").read_text() == "keep me\n"
    proc = run("run_perturbation", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "o.jsonl", "--overwrite")
    assert proc.returncode == 0 and "perturbed 1 problems, skipped 0" in proc.stdout
    assert json.loads((tmp_path / "o.jsonl").read_text())["modified_test_cases"]


def test_unequal_tests_in_trajectory_are_named(tmp_path, tiny_tokenizer_dir):
    rec = trajectory("a", [[0.0, 0.5, 1.0]] * 16)
    bad = dict(rec, test_cases=json.dumps({"inputs": ["1", "2"], "outputs": ["1"]}))
    write_jsonl(tmp_path / "t.jsonl", [rec, bad])
    proc = run(
        "process_multi_turn_taco",
        "-i",
        tmp_path / "t.jsonl",
        "-o",
        tmp_path / "b.jsonl",
        "--model_name",
        tiny_tokenizer_dir,
    )
    assert proc.returncode == 2
    assert "t.jsonl:2: field 'test_cases': 2 inputs but 1 outputs" in proc.stderr
    assert not (tmp_path / "b.jsonl").exists() and leftovers(tmp_path) == []


def test_process_multi_turn_prints_counts(tmp_path, tiny_tokenizer_dir):
    recs = [
        trajectory("a", [[0.2, 0.6, 1.0]] + [[0.0] * 3] * 15),
        trajectory("b", [[1.0] * 3] * 16, turn0_pass=True),
    ]
    write_jsonl(tmp_path / "t.jsonl", recs)
    proc = run(
        "process_multi_turn_taco",
        "-i",
        tmp_path / "t.jsonl",
        "-o",
        tmp_path / "b.jsonl",
        "--model_name",
        tiny_tokenizer_dir,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Skipped examples: 1" in proc.stdout and "Total conversations extracted: 4" in proc.stdout
    out = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert sorted(len(p["conversation"]) for p in out) == [2, 4, 6, 8]


def test_missing_field_in_problem_file_is_named(tmp_path):
    write_jsonl(tmp_path / "tr.jsonl", [{"id": 1, "test_cases": json.dumps({"inputs": [], "outputs": []})}])
    write_jsonl(tmp_path / "te.jsonl", [{"id": 2}])
    proc = run(
        "verl_preproc_single_turn",
        "--local_dir",
        tmp_path / "out",
        "--train_data_file",
        tmp_path / "tr.jsonl",
        "--val_data_file",
        tmp_path / "te.jsonl",
    )
    assert proc.returncode == 2 and "tr.jsonl:1: field 'instruction': missing" in proc.stderr
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_lcb_cli_converts_a_local_file(tmp_path):
    import base64
    import pickle
    import zlib

    private = json.dumps([{"input": "3\n", "output": "6\n"}])
    raw = {
        "question_id": "q1",
        "question_content": "Print 2n.\nSample Input 1\n\n3",
        "public_test_cases": json.dumps([{"input": "1\n", "output": "2\n"}]),
        "private_test_cases": base64.b64encode(zlib.compress(pickle.dumps(private))).decode(),
    }
    write_jsonl(tmp_path / "test6.jsonl", [raw])
    proc = run(
        "preproc_lcb_test6", "--input_file", tmp_path / "test6.jsonl", "--output_file", tmp_path / "lcb.jsonl"
    )
    assert proc.returncode == 0, proc.stderr
    rec = json.loads((tmp_path / "lcb.jsonl").read_text())
    assert json.loads(rec["test_cases"])["inputs"] == ["1\n", "3\n"] and rec["question"] == "Print 2n."


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["preproc/preproc_taco.py", "--dev_ratio", "1.5", "--output_dir", "x"],
            "--dev-ratio: must be between 0 and 1",
        ),
        (
            ["preproc/preproc_taco.py", "--num_public", "-2", "--output_dir", "x"],
            "--num-public: must not be negative",
        ),
        (
            ["preproc/process_multi_turn_taco.py", "-i", "a", "-o", "b", "--num_turns", "0"],
            "--num-turns: must be at least 1",
        ),
        (
            ["scripts/run_multi_turn.py", "-i", "a", "-o", "b", "--model", "m", "--turns", "0"],
            "--turns: must be at least 1",
        ),
    ],
)
def test_out_of_range_flags_are_refused_by_the_parser(argv, message):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(root / argv[0]), *argv[1:]], capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr


def _non_utf8_file(path: Path) -> Path:
    """A JSONL file whose second line (after a blank one) holds a byte that is not UTF-8."""
    path.write_bytes(b'\n{"id": 2, "question": "caf\xe9"}\n')
    return path


@pytest.mark.parametrize(
    "script, args",
    [
        ("preproc_taco", ["--input_file", "{bad}", "--output_dir", "{tmp}/out", "--evaluator", "none"]),
        ("preproc_lcb_test6", ["--input_file", "{bad}", "--output_file", "{tmp}/o.jsonl"]),
        ("run_perturbation", ["-i", "{bad}", "-o", "{tmp}/o.jsonl"]),
        ("process_multi_turn_taco", ["-i", "{bad}", "-o", "{tmp}/o.jsonl", "--model_name", "{tok}"]),
        ("verl_preproc_single_turn", ["--local_dir", "{tmp}/o", "--train_data_file", "{bad}"]),
        ("verl_preproc_multi_turn", ["--local_dir", "{tmp}/o", "--train_data_file", "{bad}"]),
    ],
)
def test_a_byte_that_is_not_utf8_is_named_with_its_line(tmp_path, tiny_tokenizer_dir, script, args):
    bad = _non_utf8_file(tmp_path / "bad.jsonl")
    argv = [a.format(bad=bad, tmp=tmp_path, tok=tiny_tokenizer_dir) for a in args]
    proc = run(script, *argv)
    assert proc.returncode == 2, proc.stderr
    assert f"{bad}:2: not UTF-8 (byte 0xe9" in proc.stderr and "Traceback" not in proc.stderr


def test_resume_names_a_non_utf8_line_but_forgives_a_torn_last_one(tmp_path):
    from cobalt.common.errors import DataError
    from cobalt.common.jsonl import done_ids

    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": 1}\n{"id": 2, "x": "\xe9"}\n{"id": 3}\n{"id": 4, "x": "\xe9')
    with pytest.raises(DataError, match=r"out\.jsonl:2"):
        done_ids(path)
    path.write_bytes(b'{"id": 1}\n{"id": 4, "x": "\xe9')
    assert done_ids(path) == {1}


def _serve_env(address: str | None) -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return env | ({"RAY_ADDRESS": address} if address else {})


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
@pytest.mark.parametrize("address", ["nothing-listens", None])
def test_evaluator_serve_without_a_cluster_stops_at_once_saying_what_to_start(tmp_path, address):
    import time

    from cobalt.serve.cluster import free_port

    address = f"127.0.0.1:{free_port()}" if address else None
    write_jsonl(tmp_path / "raw.jsonl", [{"id": 1}])
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "preproc/preproc_taco.py"), "--input_file", tmp_path / "raw.jsonl"]
        + ["--output_dir", tmp_path / "out", "--evaluator", "serve"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_serve_env(address),
    )
    assert time.monotonic() - started < 30
    assert proc.returncode == 2, proc.stderr
    assert "--evaluator serve:" in proc.stderr and "remote_reward_server.py" in proc.stderr
    assert (address or "RAY_ADDRESS is not set") in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
