"""The two workers' plugin (tests/run_alone.py) on planted tests: light tests run two at a time,
never beside a test that runs alone (the memory-heavy chain), beside a training run only at
SCHED_IDLE, and then are not judged on their time. Each case is a pytest run of its own on two
workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent

PLANTED = """
import json, os, time
import pytest

def note(name, seconds):
    start = time.time()
    time.sleep(seconds)
    policy = os.sched_getscheduler(0)
    with open(os.environ["PLANTED_LOG"], "a") as log:
        log.write(json.dumps([name, start, time.time(), policy]) + "\\n")

@pytest.mark.memory_heavy
def test_alone():
    note("alone", 2.0)

@pytest.mark.slow
@pytest.mark.train
def test_training_run():
    note("training", 1.0)

@pytest.mark.parametrize("k", range(12))
def test_light(k):
    note("light", 0.5)

@pytest.mark.timing
def test_timing():
    note("timing", 0.5)

@pytest.mark.one_worker
def test_counting_this_modules_sandboxes():
    note("one_worker", 0.2)
"""


def run_planted(tmp_path: Path, planted: str = PLANTED, budgets: dict | None = None) -> list[tuple]:
    """The planted tests' (name, start, end, scheduling policy), with the time budgets' plugin
    when ``budgets`` are given."""
    pytest.importorskip("xdist")
    (tmp_path / "test_planted.py").write_text(planted)
    log = tmp_path / "intervals.jsonl"
    env = {
        **os.environ,
        "PLANTED_LOG": str(log),
        "COBALT_SPEED_SCALE": "1.0",
        "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("COBALT_TEST_LOCK_DIR", None)  # this run's own locks, not the outer run's
    command = [sys.executable, "-m", "pytest", "-p", "run_alone", "-p", "no:cacheprovider", "-q"]
    if budgets is not None:
        (tmp_path / "budgets.json").write_text(json.dumps(budgets))  # YAML reads JSON
        env["COBALT_TIME_BUDGETS"] = str(tmp_path / "budgets.json")
        command += ["-p", "time_budget"]
    command += ["-c", os.devnull, "--rootdir", str(tmp_path), "-n", "2", "test_planted.py"]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, preexec_fn=full_priority
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]


def full_priority() -> None:
    """The planted run starts at SCHED_OTHER, whatever the outer run gave this (light) test."""
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def overlaps(a: tuple[str, float, float], b: tuple[str, float, float]) -> bool:
    return a[1] < b[2] and b[1] < a[2]


def test_light_tests_run_beside_a_training_run_at_sched_idle_but_never_beside_an_alone_test(tmp_path):
    """A training run's Ray workers run at nice 15: a light test beside them at nice 0 took their CPU
    (CI at 14ff73d: the learning checks took 1.5 to 2 x as long). At SCHED_IDLE it takes only what
    they leave idle. A test marked ``timing`` runs after the training runs (and so does a
    ``one_worker`` module of it), never beside one, and holds up no light test by waiting."""
    intervals = run_planted(tmp_path)
    (alone,) = [i for i in intervals if i[0] == "alone"]
    (training,) = [i for i in intervals if i[0] == "training"]
    (timing,) = [i for i in intervals if i[0] == "timing"]
    light = [i for i in intervals if i[0] == "light"]
    assert len(light) == 12
    assert not any(overlaps(alone, other) for other in [*light, training, timing]), intervals
    (counting,) = [i for i in intervals if i[0] == "one_worker"]
    assert timing[1] >= training[2] and counting[1] >= training[2], intervals
    assert any(overlaps(training, other) for other in light), intervals
    assert any(overlaps(a, b) for a in light for b in light if a is not b), intervals
    assert {i[3] for i in light} == {os.SCHED_IDLE}, intervals
    assert training[3] == alone[3] == timing[3] == os.SCHED_OTHER, intervals


BESIDE_TRAINING = """
import json, os, time
from pathlib import Path
import pytest

@pytest.mark.slow
@pytest.mark.train
def test_training_run():
    time.sleep(4.0)

def test_light_beside_it():
    state = Path(os.environ["COBALT_TEST_LOCK_DIR"]) / "training.json"
    deadline = time.time() + 30
    while not (state.exists() and json.loads(state.read_text())["running"]) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    with open(os.environ["PLANTED_LOG"], "a") as log:
        log.write(json.dumps(["light", 0, 0, 0]) + "\\n")
"""


def test_a_light_test_beside_a_training_run_is_not_judged_on_its_time(tmp_path):
    """Its time is mostly the training run's: 1 s against a budget of 0.1 s passes. (A test alone
    past its budget fails: tests/test_time_budget.py.)"""
    budgets = {
        "reference_calibration_s": 0.24,
        "max_scale": 2.0,
        "tolerance": 1.5,
        "suite_limit_s": 3600,
        "default_s": 0.1,
        "tests": {"test_planted.py::test_training_run": 60},
    }
    assert [i[0] for i in run_planted(tmp_path, BESIDE_TRAINING, budgets)] == ["light"]
