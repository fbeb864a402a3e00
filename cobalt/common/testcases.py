"""Test-case sets and execution results (reference section 1).

A test-case set is the JSON string ``{"inputs": [str, ...], "outputs": [str, ...]}``; an execution
result is ``{"passing": [bool, ...], "feedback": [str, ...]}``. Every reader of a set, the sandbox
included, goes through :func:`parse_test_cases`, so a malformed set stops with a
:class:`DataError` naming the file, line and field instead of failing deep inside a step.
"""

from __future__ import annotations

import json

from cobalt.common.errors import DataError


def dump_test_cases(inputs: list[str], outputs: list[str]) -> str:
    """The JSON string form of a test-case set."""
    return json.dumps({"inputs": list(inputs), "outputs": list(outputs)})


def parse_test_cases(
    value: object, *, path=None, line=None, field: str = "test_cases", allow_empty: bool = False
) -> dict:
    """Decode and validate a test-case set (a JSON string or an already decoded dict).

    An empty set is refused unless ``allow_empty``: it can decide no program (its pass rate is
    0/0), and scoring against it would make a data bug look like a wrong program. Only a step that
    merely selects problems by their tests (perturbation skips sets with fewer than two distinct
    outputs, as the reference) allows it."""

    def fail(problem: str):
        raise DataError(problem, path=path, line=line, field=field)

    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as e:
            fail(f"not valid JSON ({e})")
    if not isinstance(value, dict):
        fail(f"expected an object with 'inputs' and 'outputs', got {type(value).__name__}")
    for key in ("inputs", "outputs"):
        items = value.get(key)
        if not isinstance(items, list):
            fail(f"'{key}' must be a list, not {type(items).__name__}")
        for i, item in enumerate(items):
            if not isinstance(item, str):
                fail(f"'{key}'[{i}] must be a string, not {type(item).__name__}")
    n_inputs, n_outputs = len(value["inputs"]), len(value["outputs"])
    if n_inputs != n_outputs:
        fail(f"{n_inputs} inputs but {n_outputs} outputs")
    if not n_inputs and not allow_empty:
        fail("has no test cases")
    return value


def failure_result(message: str) -> dict:
    """An execution result for a request that failed as a whole (one failing entry)."""
    return {"passing": [False], "feedback": [message]}


def pass_rate(result: dict) -> float:
    """Fraction of passing entries of an execution result (a whole-suite failure counts as one)."""
    passing = result["passing"]
    return sum(1 for p in passing if p) / len(passing) if passing else 0.0
