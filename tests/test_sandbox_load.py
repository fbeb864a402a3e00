"""Verdicts do not depend on machine load: the per-test limit counts CPU time, and the whole
request's bound counts its tests' CPU times replayed on the reference's schedule, not wall time."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time

import pytest

from cobalt.sandbox import default_config, evaluate

# Uses exactly 1 s of CPU, then answers: correct, but slow in wall time on a busy machine.
BUSY_BUT_CORRECT = (
    "import time\nstart = time.process_time()\n"
    "while time.process_time() - start < 1.0:\n    pass\n"
    "print(sum(map(int, input().split())))\n"
)
# Passes the even tests of DOUBLES, loops on the odd ones.
LOOPS_ON_ODD = "n = int(input())\nif n % 2:\n    while True:\n        pass\nprint(2 * n)\n"
DOUBLES = {"inputs": [str(i) for i in range(8)], "outputs": [str(2 * i) for i in range(8)]}
# The default limits scaled down 16x (0.25 CPU-s per test, 27/16 s per request), so that the
# tests stay short: on an idle machine the reference's schedule takes 0.25 s (4 loops at once) and
# 0.5 s (8 loops), well within the bound; at 4x oversubscription the wall clock takes many times it.
SCALED = dataclasses.replace(default_config(), test_timeout_s=0.25, request_timeout_s=27 / 16)


def start_hogs(count: int, own_sessions: bool = False) -> list[subprocess.Popen]:
    """``count`` CPU-burning processes; ``own_sessions``: each in a session (and so a scheduler
    autogroup) of its own, as the requests of other sandboxes are."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=own_sessions)
        for _ in range(count)
    ]
    time.sleep(0.5)
    return hogs


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        hog.kill()
        hog.wait()


@pytest.fixture
def machine_fully_loaded():
    hogs = start_hogs(2 * (os.cpu_count() or 2))
    yield
    stop_hogs(hogs)


@pytest.fixture
def oversubscribed_4x():
    """4 busy processes per core (8 on 2 cores), each as busy as a request of its own."""
    hogs = start_hogs(4 * (os.cpu_count() or 2), own_sessions=True)
    yield
    stop_hogs(hogs)


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


def timeout_feedback(test_input: str) -> str:
    return f"Input:\n{test_input}\nTimeoutError: Program timed out after 0.25 seconds."


@pytest.mark.slow
def test_partial_credit_survives_4x_oversubscription(oversubscribed_4x):
    start = time.monotonic()
    result = evaluate(LOOPS_ON_ODD, DOUBLES, SCALED)
    wall = time.monotonic() - start
    assert result["passing"] == [True, False] * 4, result["feedback"]
    assert result["feedback"][1::2] == [timeout_feedback(str(i)) for i in range(1, 8, 2)]
    assert wall > SCALED.request_timeout_s  # the load was real: past the bound in wall time


@pytest.mark.slow
def test_looping_on_every_test_gives_per_test_timeouts_under_4x_oversubscription(oversubscribed_4x):
    start = time.monotonic()
    result = evaluate("input()\nwhile True:\n    pass\n", DOUBLES, SCALED)
    wall = time.monotonic() - start
    assert result == {"passing": [False] * 8, "feedback": [timeout_feedback(str(i)) for i in range(8)]}
    assert wall > SCALED.request_timeout_s
