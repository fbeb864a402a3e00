"""One request: check it, run its program on each test case in the sandbox, give verdicts and feedback.

    from cobalt.sandbox import evaluate
    evaluate("print(int(input()) * 2)", {"inputs": ["2\\n"], "outputs": ["4\\n"]})
    # -> {"passing": [True], "feedback": ["Input:\\n2\\nProgram's Output:\\n4\\nExpected Output:\\n4"]}

Synchronous and importable without Ray. See ``runner.py`` for the isolation and ``harness.py`` for
what runs inside the sandbox.
"""

from __future__ import annotations

import logging

from cobalt.errors import DataError
from cobalt.sandbox.config import SandboxConfig, default_config
from cobalt.sandbox.feedback import REQUEST_TIMEOUT_FEEDBACK, exception_feedback, feedback_for, is_pass
from cobalt.sandbox.runner import RequestTimeout, SandboxError, SandboxUnavailable, run_in_sandbox
from cobalt.testcases import failure_result, parse_test_cases

log = logging.getLogger("cobalt.sandbox")


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
    cfg = config or default_config()
    try:
        tests = parse_test_cases(test_cases)
        inputs, outputs = tests["inputs"], tests["outputs"]
        _check_request(code, inputs, outputs, cfg)
    except (InvalidRequest, DataError) as e:
        return failure_result(f"Exception: invalid request: {e}")
    try:
        runs = run_in_sandbox(code, inputs, cfg)
    except RequestTimeout:
        return failure_result(REQUEST_TIMEOUT_FEEDBACK)
    except SandboxUnavailable:
        raise
    except SandboxError as e:
        log.error("sandbox error: %s", e)
        return {
            "passing": [False] * len(inputs),
            "feedback": [exception_feedback(inp, str(e)) for inp in inputs],
        }
    passing, feedback = [], []
    for run, test_input, expected in zip(runs, inputs, outputs):
        if run["status"] == "crashed":
            passing.append(False)
            feedback.append(exception_feedback(test_input, run["message"]))
        else:
            passing.append(is_pass(run, expected, cfg.judge))
            feedback.append(feedback_for(run, test_input, expected, cfg.test_timeout_s))
    return {"passing": passing, "feedback": feedback}
