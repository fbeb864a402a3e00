"""The whole request's bound, counted on the reference's schedule replayed in CPU time, and the
wall-clock backstop that ends programs that block."""

from __future__ import annotations

import dataclasses
import time

import pytest

from cobalt.sandbox import default_config
from cobalt.sandbox.evaluation import REQUEST_OUTCOMES, judge
from cobalt.sandbox.feedback import REQUEST_TIMEOUT_FEEDBACK
from cobalt.sandbox.harness import charged_seconds, replayed_seconds
from cobalt.sandbox.runner import run_in_sandbox

WHOLE_REQUEST_FAILURE = {"passing": [False], "feedback": [REQUEST_TIMEOUT_FEEDBACK]}
DOUBLES = {"inputs": [str(i) for i in range(8)], "outputs": [str(2 * i) for i in range(8)]}


def cpu_then_double(seconds: float) -> str:
    """Uses ``seconds`` of CPU, then prints twice its input."""
    return (
        "import time\nstart = time.process_time()\n"
        f"while time.process_time() - start < {seconds}:\n    pass\nprint(2 * int(input()))\n"
    )


def test_the_replay_runs_tests_in_order_on_free_lanes():
    assert replayed_seconds([], 4) == 0.0
    assert replayed_seconds([4.0] * 8, 4) == 8.0  # two rounds
    assert replayed_seconds([0.0, 4.0] * 4, 4) == 4.0  # the loops run side by side
    assert replayed_seconds([3.0, 1.0, 1.0, 1.0], 2) == 3.0  # the short ones share a lane
    assert replayed_seconds([4.0] * 28, 4) == 28.0  # the smallest all-timeout request over 27 s


def test_a_timeout_counts_its_whole_limit_and_nothing_counts_more():
    assert charged_seconds("timeout", 0.01, 4.0) == 4.0  # ended by the wall backstop while asleep
    assert charged_seconds("exit", 5.2, 4.0) == 4.0
    assert charged_seconds("exit", 0.3, 4.0) == 0.3


def test_slow_answers_beyond_the_replayed_bound_fail_as_a_whole():
    # Two rounds of 0.4 s: 0.8 s on the reference's schedule, over a 0.7 s bound.
    cfg = dataclasses.replace(default_config(), test_timeout_s=0.5, request_timeout_s=0.7)
    before = REQUEST_OUTCOMES.snapshot()
    assert judge(cpu_then_double(0.4), DOUBLES, cfg) == (WHOLE_REQUEST_FAILURE, "over_bound")
    after = REQUEST_OUTCOMES.snapshot()
    assert after["over_bound"] == before["over_bound"] + 1


def test_slow_answers_within_the_replayed_bound_pass_whatever_the_wall_clock():
    # Two rounds of 0.3 s: 0.6 s replayed. On 2 cores, 4 at once take twice that in wall time.
    cfg = dataclasses.replace(default_config(), test_timeout_s=0.5, request_timeout_s=0.7)
    result, outcome = judge(cpu_then_double(0.3), DOUBLES, cfg)
    assert (result["passing"], outcome) == ([True] * 8, "judged")


def test_the_harness_stops_a_request_that_cannot_fit_its_bound_any_more():
    # (request_cpu_s: by default, 0.7 s x 4 tests at once of CPU would end the request first)
    cfg = dataclasses.replace(default_config(), test_timeout_s=0.5, request_timeout_s=0.7, request_cpu_s=100)
    runs = run_in_sandbox("while True:\n    pass\n", [""] * 12, cfg)
    statuses = [run["status"] for run in runs]
    # Stopped once a test of the second round ended (1 s on the replayed schedule): the rest of
    # that round and the third round never ran to their end.
    assert statuses[:4] == ["timeout"] * 4 and set(statuses[4:8]) <= {"timeout", "over_bound"}
    assert statuses[8:] == ["over_bound"] * 4


@pytest.mark.parametrize(
    "program",
    [
        "import time\ntime.sleep(600)\n",
        "import os\nos.read(os.pipe()[0], 1)\n",  # waits for input that never comes
    ],
    ids=["sleeps", "waits-for-input"],
)
@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_a_program_that_blocks_ends_at_the_request_wall_backstop(program):
    cfg = dataclasses.replace(default_config(), request_wall_timeout_s=3.0, wall_timeout_s=60)
    before = REQUEST_OUTCOMES.snapshot()
    start = time.monotonic()
    assert judge(program, {"inputs": ["1"], "outputs": ["1"]}, cfg) == (
        WHOLE_REQUEST_FAILURE,
        "wall_backstop",
    )
    assert 3.0 <= time.monotonic() - start < 10.0
    after = REQUEST_OUTCOMES.snapshot()
    assert after["wall_backstop"] == before["wall_backstop"] + 1
    assert after["over_bound"] == before["over_bound"]
