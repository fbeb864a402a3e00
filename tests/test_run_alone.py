"""The two workers' plugin (tests/run_alone.py) on planted tests: light tests run two at a time, and
never beside a test that runs alone (the memory-heavy chain, a training run). Each case is a pytest
run of its own on two workers."""

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
    with open(os.environ["PLANTED_LOG"], "a") as log:
        log.write(json.dumps([name, start, time.time()]) + "\\n")

@pytest.mark.memory_heavy
def test_alone():
    note("alone", 2.0)

@pytest.mark.slow
@pytest.mark.train
def test_training_run():
    note("training", 3.0)

@pytest.mark.parametrize("k", range(8))
def test_light(k):
    note("light", 0.5)
"""


def run_planted(tmp_path: Path) -> list[tuple[str, float, float]]:
    pytest.importorskip("xdist")
    (tmp_path / "test_planted.py").write_text(PLANTED)
    log = tmp_path / "intervals.jsonl"
    env = {
        **os.environ,
        "PLANTED_LOG": str(log),
        "COBALT_SPEED_SCALE": "1.0",
        "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("COBALT_TEST_LOCK_DIR", None)  # this run's own locks, not the outer run's
    command = [sys.executable, "-m", "pytest", "-p", "run_alone", "-p", "no:cacheprovider", "-q"]
    command += ["-c", os.devnull, "--rootdir", str(tmp_path), "-n", "2", "test_planted.py"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]


def overlaps(a: tuple[str, float, float], b: tuple[str, float, float]) -> bool:
    return a[1] < b[2] and b[1] < a[2]


def test_light_tests_run_two_at_a_time_but_never_beside_an_alone_test_or_a_training_run(tmp_path):
    """Training runs stay alone: their Ray workers run at nice 15, so a light test beside them takes
    their CPU (CI at 14ff73d, light tests beside them: the learning checks took 1.5 to 2 x as long)."""
    intervals = run_planted(tmp_path)
    (alone,) = [i for i in intervals if i[0] == "alone"]
    (training,) = [i for i in intervals if i[0] == "training"]
    light = [i for i in intervals if i[0] == "light"]
    assert len(light) == 8
    assert not any(overlaps(alone, other) or overlaps(training, other) for other in light), intervals
    assert not overlaps(alone, training)
    assert any(overlaps(a, b) for a in light for b in light if a is not b), intervals
