"""Run an untrusted program on stdin/stdout test cases, safely; verdicts and feedback text.

    from cobalt.sandbox import evaluate
    evaluate("print(int(input()) * 2)", {"inputs": ["2\\n"], "outputs": ["4\\n"]})
    # -> {"passing": [True], "feedback": ["Input:\\n2\\nProgram's Output:\\n4\\nExpected Output:\\n4"]}

Synchronous and importable without Ray. See ``runner.py`` for the isolation and ``harness.py`` for
what runs inside the sandbox.
"""

from __future__ import annotations

import json
import logging

from cobalt.sandbox.config import SandboxConfig, default_config
from cobalt.sandbox.feedback import REQUEST_TIMEOUT_FEEDBACK, exception_feedback, feedback_for, is_pass
from cobalt.sandbox.runner import RequestTimeout, SandboxError, SandboxUnavailable, run_in_sandbox

__all__ = [
    "InvalidRequest",
    "SandboxConfig",
    "SandboxError",
    "SandboxUnavailable",
    "evaluate",
    "failure",
    "parse_test_cases",
]
log = logging.getLogger("cobalt.sandbox")


class InvalidRequest(ValueError):
    """A request the evaluator cannot run (answered with a failing result, never raised out)."""


def parse_test_cases(test_cases) -> tuple[list[str], list[str]]:
    """Inputs and expected outputs from a dict or its JSON string; InvalidRequest if malformed."""
    if isinstance(test_cases, (str, bytes)):
        try:
            test_cases = json.loads(test_cases)
        except ValueError as e:
            raise InvalidRequest(f"test_cases is not valid JSON: {e}") from None
    if not isinstance(test_cases, dict):
        raise InvalidRequest(f"test_cases must be an object, not {type(test_cases).__name__}")
    lists = []
    for field in ("inputs", "outputs"):
        value = test_cases.get(field)
        if not isinstance(value, list):
            raise InvalidRequest(f"test_cases.{field} must be a list, not {type(value).__name__}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise InvalidRequest(f"test_cases.{field}[{i}] must be a string, not {type(item).__name__}")
        lists.append(value)
    inputs, outputs = lists
    if len(inputs) != len(outputs):
        raise InvalidRequest(f"test_cases has {len(inputs)} inputs but {len(outputs)} outputs")
    if not inputs:
        raise InvalidRequest("test_cases is empty")
    return inputs, outputs


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


def failure(message: str) -> dict:
    """A whole-request failure: one failing entry."""
    return {"passing": [False], "feedback": [message]}


def evaluate(code: str, test_cases, config: SandboxConfig | None = None) -> dict:
    """Run ``code`` on each test case in the sandbox: ``{"passing": [bool], "feedback": [str]}``.

    Bad requests and whole-request timeouts give one failing entry with the reason; a machine where
    no sandbox works raises :class:`SandboxUnavailable` (nothing ever runs unsandboxed).
    """
    cfg = config or default_config()
    try:
        inputs, outputs = parse_test_cases(test_cases)
        _check_request(code, inputs, outputs, cfg)
    except InvalidRequest as e:
        return failure(f"Exception: invalid request: {e}")
    try:
        runs = run_in_sandbox(code, inputs, cfg)
    except RequestTimeout:
        return failure(REQUEST_TIMEOUT_FEEDBACK)
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
            passing.append(is_pass(run, expected))
            feedback.append(feedback_for(run, test_input, expected, cfg.test_timeout_s))
    return {"passing": passing, "feedback": feedback}
