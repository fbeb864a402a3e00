"""Test-case sets: the JSON string ``{"inputs": [str, ...], "outputs": [str, ...]}`` (reference §1).

Every reader of our own files goes through :func:`parse_test_cases`, so a malformed set stops with
a :class:`DataError` naming the file, line and field instead of failing deep inside a step.
"""

from __future__ import annotations

import json

from cobalt.errors import DataError


def dump_test_cases(inputs: list[str], outputs: list[str]) -> str:
    """The JSON string form of a test-case set."""
    return json.dumps({"inputs": list(inputs), "outputs": list(outputs)})


def parse_test_cases(value: object, *, path=None, line=None, field: str = "test_cases") -> dict:
    """Decode and validate a test-case set (a JSON string or an already decoded dict)."""

    def fail(problem: str):
        raise DataError(problem, path=path, line=line, field=field)

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            fail(f"not valid JSON ({e.msg})")
    if not isinstance(value, dict):
        fail(f"expected an object with 'inputs' and 'outputs', got {type(value).__name__}")
    inputs, outputs = value.get("inputs"), value.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        fail("'inputs' and 'outputs' must both be lists")
    if len(inputs) != len(outputs):
        fail(f"{len(inputs)} inputs but {len(outputs)} outputs")
    if not all(isinstance(x, str) for x in inputs + outputs):
        fail("every input and output must be a string")
    return value


def count_tests(value: object, **where) -> int:
    return len(parse_test_cases(value, **where)["inputs"])


def pass_rate(result: dict) -> float:
    """Fraction of passing entries of an execution result (a whole-suite failure counts as one)."""
    passing = result["passing"]
    return sum(1 for p in passing if p) / len(passing) if passing else 0.0
