"""One request: check it, run its program on each test case in the sandbox, give verdicts and feedback.

    from cobalt.sandbox import evaluate
    evaluate("print(int(input()) * 2)", {"inputs": ["2\\n"], "outputs": ["4\\n"]})
    # -> {"passing": [True], "feedback": ["Input:\\n2\\nProgram's Output:\\n4\\nExpected Output:\\n4"]}

Synchronous and importable without Ray. See ``runner.py`` for the isolation and ``harness.py`` for
what runs inside the sandbox.
"""

from __future__ import annotations

import collections
import logging
import threading

from cobalt.common.errors import DataError
from cobalt.common.testcases import failure_result, parse_test_cases
from cobalt.sandbox.config import SandboxConfig, default_config
from cobalt.sandbox.feedback import REQUEST_TIMEOUT_FEEDBACK, exception_feedback, feedback_for, is_pass
from cobalt.sandbox.harness import charged_seconds, replayed_seconds
from cobalt.sandbox.runner import RequestTimeout, SandboxError, SandboxUnavailable, run_in_sandbox

log = logging.getLogger("cobalt.sandbox")

# How a request ended: judged test by test; over its bound (``request_timeout_s``) on the replayed
# schedule; ended by the wall backstop (``request_wall_timeout_s``: a program that blocks, or a
# machine too busy); refused as invalid; or the sandbox failed.
OUTCOMES = ("judged", "over_bound", "wall_backstop", "invalid_request", "sandbox_error")


class OutcomeCounts:
    """How many requests of this process ended each way (the evaluator's metrics)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = collections.Counter(dict.fromkeys(OUTCOMES, 0))

    def add(self, outcome: str) -> None:
        with self._lock:
            self._counts[outcome] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


REQUEST_OUTCOMES = OutcomeCounts()


class InvalidRequest(ValueError):
    """A request the evaluator cannot run (answered with a failing result, never raised out)."""


def _check_request(code, inputs, outputs, cfg: SandboxConfig) -> None:
    if not isinstance(code, str):
        raise InvalidRequest(f"code must be a string, not {type(code).__name__}")
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > cfg.max_code_bytes:
        raise InvalidRequest(f"program is too large ({size} bytes; the limit is {cfg.max_code_bytes})")
    data = sum(len(s) for s in inputs) + sum(len(s) for s in outputs)
    if data > cfg.max_input_bytes:
        raise InvalidRequest(
            f"test data is too large ({data} characters; the limit is {cfg.max_input_bytes})"
        )


def evaluate(code: str, test_cases, config: SandboxConfig | None = None) -> dict:
    """Run ``code`` on each test case in the sandbox: ``{"passing": [bool], "feedback": [str]}``.

    Bad requests and whole-request timeouts give one failing entry with the reason; a machine where
    no sandbox works raises :class:`SandboxUnavailable` (nothing ever runs unsandboxed).
    """
    return judge(code, test_cases, config)[0]


def judge(code: str, test_cases, config: SandboxConfig | None = None) -> tuple[dict, str]:
    """:func:`evaluate`'s result and how the request ended (one of ``OUTCOMES``, also counted in
    ``REQUEST_OUTCOMES``)."""
    result, outcome = _judge(code, test_cases, config or default_config())
    REQUEST_OUTCOMES.add(outcome)
    return result, outcome


def over_request_bound(runs: list[dict], cfg: SandboxConfig) -> bool:
    """Whether the request outlasts ``request_timeout_s`` on the reference's schedule replayed in
    CPU time: ``test_concurrency`` tests at once, in order, each taking its CPU time (its whole
    limit if it timed out). So the verdict is the one an idle machine gives, however busy this one."""
    if any(run["status"] == "over_bound" for run in runs):  # the harness stopped it early
        return True
    charged = [charged_seconds(run["status"], run.get("cpu", 0.0), cfg.test_timeout_s) for run in runs]
    return replayed_seconds(charged, cfg.test_concurrency) > cfg.request_timeout_s


def _judge(code: str, test_cases, cfg: SandboxConfig) -> tuple[dict, str]:
    try:
        tests = parse_test_cases(test_cases)
        inputs, outputs = tests["inputs"], tests["outputs"]
        _check_request(code, inputs, outputs, cfg)
    except (InvalidRequest, DataError) as e:
        return failure_result(f"Exception: invalid request: {e}"), "invalid_request"
    try:
        runs = run_in_sandbox(code, inputs, cfg)
    except RequestTimeout as e:
        log.warning("%s: a program that blocks, or a machine too busy for it", e)
        return failure_result(REQUEST_TIMEOUT_FEEDBACK), "wall_backstop"
    except SandboxUnavailable:
        raise
    except SandboxError as e:
        log.error("sandbox error: %s", e)
        return {
            "passing": [False] * len(inputs),
            "feedback": [exception_feedback(inp, str(e)) for inp in inputs],
        }, "sandbox_error"
    if over_request_bound(runs, cfg):
        return failure_result(REQUEST_TIMEOUT_FEEDBACK), "over_bound"
    passing, feedback = [], []
    for run, test_input, expected in zip(runs, inputs, outputs):
        if run["status"] == "crashed":
            passing.append(False)
            feedback.append(exception_feedback(test_input, run["message"]))
        else:
            passing.append(is_pass(run, expected, cfg.judge))
            feedback.append(feedback_for(run, test_input, expected, cfg.test_timeout_s))
    return {"passing": passing, "feedback": feedback}, "judged"
