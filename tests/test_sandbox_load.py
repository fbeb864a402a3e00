"""Verdicts do not depend on machine load: the 4 s limit counts CPU time, not wall time."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from cobalt.sandbox import evaluate

# Uses exactly 1 s of CPU, then answers: correct, but slow in wall time on a busy machine.
BUSY_BUT_CORRECT = (
    "import time\nstart = time.process_time()\n"
    "while time.process_time() - start < 1.0:\n    pass\n"
    "print(sum(map(int, input().split())))\n"
)


@pytest.fixture
def machine_fully_loaded():
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 2))
    ]
    time.sleep(0.5)
    yield
    for hog in hogs:
        hog.kill()
        hog.wait()


@pytest.mark.slow
def test_correct_programs_pass_on_a_fully_loaded_machine(machine_fully_loaded):
    tests = {"inputs": [f"{i} {i}" for i in range(8)], "outputs": [str(2 * i) for i in range(8)]}
    start = time.monotonic()
    result = evaluate(BUSY_BUT_CORRECT, tests)
    wall = time.monotonic() - start
    assert result["passing"] == [True] * 8, result["feedback"]
    # The load was real: 8 s of CPU on a shared machine took longer than a wall-clock limit allows.
    assert wall > 4.0


@pytest.mark.slow
def test_infinite_loop_still_times_out_under_load(machine_fully_loaded):
    result = evaluate("while True:\n    pass\n", {"inputs": ["1"], "outputs": ["1"]})
    assert result["feedback"] == ["Input:\n1\nTimeoutError: Program timed out after 4 seconds."]
