"""One test-case parser for data files and the sandbox, one pass-rate helper, and one place that
resolves the evaluator kind."""

from __future__ import annotations

import json

import pytest

from cobalt.common.errors import ConfigError, DataError
from cobalt.common.testcases import dump_test_cases, failure_result, parse_test_cases, pass_rate
from cobalt.reward.config import RewardConfig
from cobalt.reward.score import default_evaluator
from cobalt.sandbox import evaluate
from cobalt.serve.client import LocalEvaluator, evaluator_kind, get_evaluator


def test_a_valid_set_round_trips_from_its_json_string():
    tests = parse_test_cases(dump_test_cases(["1\n", "2\n"], ["2", "4"]))
    assert tests == {"inputs": ["1\n", "2\n"], "outputs": ["2", "4"]}


@pytest.mark.parametrize("empty", [dump_test_cases([], []), {"inputs": [], "outputs": []}])
def test_an_empty_set_is_refused_naming_file_line_and_field(empty):
    with pytest.raises(DataError) as info:
        parse_test_cases(empty, path="problems.jsonl", line=3, field="public_test_cases")
    assert str(info.value) == "problems.jsonl:3: field 'public_test_cases': has no test cases"


def test_a_step_that_only_selects_problems_may_allow_an_empty_set():
    assert parse_test_cases(dump_test_cases([], []), allow_empty=True) == {"inputs": [], "outputs": []}


@pytest.mark.parametrize(
    "value, problem",
    [
        ("{not json", "not valid JSON"),
        (b"[1]", "expected an object with 'inputs' and 'outputs', got list"),
        ({"inputs": ["1"]}, "'outputs' must be a list, not NoneType"),
        ({"inputs": ["1", 2], "outputs": ["1", "2"]}, "'inputs'[1] must be a string, not int"),
        ({"inputs": ["1", "2"], "outputs": ["1"]}, "2 inputs but 1 outputs"),
    ],
)
def test_the_sandbox_refuses_what_a_data_reader_refuses_in_the_same_words(value, problem):
    with pytest.raises(DataError, match=problem.replace("[", r"\[").replace("(", r"\(")):
        parse_test_cases(value)
    result = evaluate("print(1)", value)  # refused before anything runs
    assert result["passing"] == [False]
    assert result["feedback"][0].startswith("Exception: invalid request: field 'test_cases': ")
    assert problem in result["feedback"][0]


def test_the_sandbox_refuses_an_empty_set():
    result = evaluate("print(1)", json.dumps({"inputs": [], "outputs": []}))
    assert result == failure_result("Exception: invalid request: field 'test_cases': has no test cases")


def test_pass_rate_counts_a_whole_suite_failure_as_one_failing_test():
    assert pass_rate({"passing": [True, False, True, True]}) == 0.75
    assert pass_rate(failure_result("TimeoutError")) == 0.0
    assert pass_rate({"passing": []}) == 0.0


def test_the_environment_overrides_the_configured_evaluator_kind(monkeypatch):
    monkeypatch.delenv("COBALT_EVALUATOR", raising=False)
    assert evaluator_kind() == "serve" and evaluator_kind("local") == "local"
    monkeypatch.setenv("COBALT_EVALUATOR", "local")
    assert evaluator_kind("serve") == "local"
    assert isinstance(get_evaluator(), LocalEvaluator)
    assert isinstance(default_evaluator(RewardConfig(evaluator="serve")), LocalEvaluator)


def test_an_unknown_evaluator_kind_is_named_with_its_source(monkeypatch):
    monkeypatch.setenv("COBALT_EVALUATOR", "remote")
    with pytest.raises(ConfigError, match=r"\$COBALT_EVALUATOR: unknown evaluator kind 'remote'"):
        default_evaluator(RewardConfig())
    monkeypatch.delenv("COBALT_EVALUATOR")
    with pytest.raises(ConfigError, match="the configured evaluator: unknown evaluator kind 'lcoal'"):
        default_evaluator(RewardConfig(evaluator="lcoal"))
