"""Real APPS problems (from ../shared, when present): every verified solution passes in the sandbox
under the default limits, and a mutated solution fails with the reference feedback layout."""

from __future__ import annotations

import json

import pytest
from conftest import APPS_SAMPLES

from cobalt.sandbox import evaluate

PROBLEMS = sorted(p for p in APPS_SAMPLES.glob("[0-9]*") if p.is_dir()) if APPS_SAMPLES.is_dir() else []


@pytest.mark.skipif(not PROBLEMS, reason=f"{APPS_SAMPLES} is not present (set COBALT_SHARED_DIR)")
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_verified_solutions_pass(problem):
    tests = json.loads((problem / "input_output.json").read_text())
    solutions = json.loads((problem / "solutions.json").read_text())
    for solution in solutions:
        result = evaluate(solution, tests)
        try:
            compile(solution, "solution.py", "exec")
        except SyntaxError as e:  # some APPS "solutions" are not valid programs: python3 agrees
            assert not any(result["passing"]) and f"SyntaxError: {e.msg}" in result["feedback"][0]
            continue
        assert all(result["passing"]), result["feedback"]


@pytest.mark.skipif(not PROBLEMS, reason=f"{APPS_SAMPLES} is not present (set COBALT_SHARED_DIR)")
def test_a_solution_that_prints_nothing_fails_with_expected_output_shown():
    tests = json.loads((PROBLEMS[0] / "input_output.json").read_text())
    result = evaluate("pass\n", tests)
    assert not any(result["passing"])
    assert result["feedback"][0].startswith("Input:\n") and "\nExpected Output:\n" in result["feedback"][0]
