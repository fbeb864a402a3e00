"""The two workers' plugin (tests/run_alone.py) on planted tests: light tests run beside a training
run, never beside a test that runs alone. Each case is a pytest run of its own on two workers."""

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


def test_light_tests_run_beside_a_training_run_but_never_beside_an_alone_test(tmp_path):
    intervals = run_planted(tmp_path)
    (alone,) = [i for i in intervals if i[0] == "alone"]
    (training,) = [i for i in intervals if i[0] == "training"]
    light = [i for i in intervals if i[0] == "light"]
    assert len(light) == 8
    assert not any(overlaps(alone, other) for other in light + [training]), intervals
    assert any(overlaps(training, other) for other in light), intervals
