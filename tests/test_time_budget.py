"""The time budgets test themselves: a planted test that sleeps past its budget fails the run and
is named; the same test within its budget passes; a run past the suite's limit fails; the speed
scale stretches every budget. Each case is a pytest run of its own on a planted test file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TESTS_DIR = Path(__file__).resolve().parent

PLANTED = """
import time

def test_planted_sleeper():
    time.sleep({sleep_s})

def test_planted_quick():
    pass
"""


def run_planted(
    tmp_path: Path,
    *,
    sleep_s: float,
    budget_s: float,
    suite_limit_s: float = 3600,
    scale: str | None = "1.0",
    workers: int = 0,
) -> subprocess.CompletedProcess:
    (tmp_path / "test_planted.py").write_text(PLANTED.format(sleep_s=sleep_s))
    budgets = {
        "reference_calibration_s": 0.24,
        "max_scale": 2.0,
        "tolerance": 1.5,
        "suite_limit_s": suite_limit_s,
        "default_s": 60,
        "tests": {"test_planted.py::test_planted_sleeper": budget_s},
    }
    (tmp_path / "budgets.yaml").write_text(yaml.safe_dump(budgets))
    env = {
        **os.environ,
        "COBALT_TIME_BUDGETS": str(tmp_path / "budgets.yaml"),
        "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("COBALT_SPEED_SCALE", None)
    if scale is not None:
        env["COBALT_SPEED_SCALE"] = scale
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "time_budget",
        "-p",
        "no:cacheprovider",
        "-q",
        "-c",
        os.devnull,
        "--rootdir",
        str(tmp_path),
        "-n",
        str(workers),
        "test_planted.py",
    ]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_planted_test_past_its_budget_fails_the_run_and_is_named(tmp_path):
    done = run_planted(tmp_path, sleep_s=1.0, budget_s=0.4)  # allowed 0.4 x 1.5 = 0.6 s
    assert done.returncode == 1, done.stdout + done.stderr
    assert "time budget exceeded: test_planted.py::test_planted_sleeper took 1 s" in done.stdout
    # its call passed; it errs at teardown, named in the short summary
    assert "ERROR test_planted.py::test_planted_sleeper - time budget exceeded" in done.stdout
    assert "1 error" in done.stdout


def test_the_same_test_within_its_budget_passes(tmp_path):
    done = run_planted(tmp_path, sleep_s=0.2, budget_s=2.0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout and "time budget exceeded" not in done.stdout


def test_the_budget_holds_under_two_workers(tmp_path):
    done = run_planted(tmp_path, sleep_s=1.0, budget_s=0.4, workers=2)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "time budget exceeded: test_planted.py::test_planted_sleeper" in done.stdout


def test_under_two_workers_the_summary_says_what_each_worker_did(tmp_path):
    """Where a run's time went: each worker's busy time and when its last test ended (CI's log
    shows whether one worker's serial tests set the run's length)."""
    done = run_planted(tmp_path, sleep_s=1.0, budget_s=10, workers=2)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("workers ("))
    busy = {w: float(s) for w, s in re.findall(r"(gw\d) busy (\d+) s", line)}
    # xdist hands the two tests to whichever workers ask; the sleeper's second is on one of them
    assert busy and set(busy) <= {"gw0", "gw1"} and max(busy.values()) >= 1, line


def test_one_process_prints_no_worker_summary(tmp_path):
    done = run_planted(tmp_path, sleep_s=0.0, budget_s=10)
    assert done.returncode == 0 and "workers (" not in done.stdout, done.stdout


def test_a_slow_machine_stretches_the_budget(tmp_path):
    done = run_planted(tmp_path, sleep_s=1.0, budget_s=0.4, scale="2.0")  # allowed 1.2 s
    assert done.returncode == 0, done.stdout + done.stderr
    assert "machine speed scale 2.00" in done.stdout


def test_a_run_past_the_suite_limit_fails_and_names_its_slowest_test(tmp_path):
    done = run_planted(tmp_path, sleep_s=1.0, budget_s=10, suite_limit_s=0.5)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "time budget exceeded: the whole run took" in done.stdout
    assert "test_planted.py::test_planted_sleeper" in done.stdout.split("the whole run took")[1]


def test_without_a_fixed_scale_the_machine_is_calibrated(tmp_path):
    done = run_planted(tmp_path, sleep_s=0.0, budget_s=10, scale=None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "calibration" in done.stdout


def test_a_broken_budget_file_is_a_usage_error_naming_the_file(tmp_path):
    (tmp_path / "budgets.yaml").write_text("tolerance: 1.5\n")
    env = {**os.environ, "COBALT_TIME_BUDGETS": str(tmp_path / "budgets.yaml"), "PYTHONPATH": str(TESTS_DIR)}
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "time_budget",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            "test_x.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "budgets.yaml" in done.stderr and "default_s" in done.stderr


def test_every_budget_names_a_test_that_exists():
    """A renamed test loses its budget silently (it falls back to the default and fails its run):
    each key names a test function of its file, with a parameter id where the test has them."""
    import ast

    budgets = yaml.safe_load((TESTS_DIR / "time_budgets.yaml").read_text())["tests"]
    stale = []
    for nodeid in budgets:
        path, _, name = nodeid.partition("::")
        function = name.split("[")[0]
        source = TESTS_DIR.parent / path
        tree = ast.parse(source.read_text()) if source.exists() else ast.Module(body=[], type_ignores=[])
        found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
        parametrized = any("parametrize" in ast.unparse(d) for n in found for d in n.decorator_list)
        if not found or parametrized != ("[" in name):
            stale.append(nodeid)
    assert not stale, stale
