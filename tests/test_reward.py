"""Every branch of the COBALT reward (reference section 4) with exact values."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from cobalt.common.config import config_dir, load_config
from cobalt.reward import compute_score, format_reward, score_details
from cobalt.reward.config import reward_config
from cobalt.reward.score import correctness_reward, with_improvement
from cobalt.reward.tokens import token_counter
from cobalt.train.reward_manager import RewardManagerSettings

ITEM_TIMEOUT = "reward.reward_kwargs.cobalt.timeout_s"

CFG = reward_config()
count = token_counter("o200k_base")
GROUND_TRUTH = json.dumps({"inputs": ["1 2", "3 4"], "outputs": ["3", "7"]})
CODE = "a, b = map(int, input().split())\nprint(a + b)"


def response(think="Let me add the numbers.", code=CODE, explanation="It adds a and b."):
    return f"{think}\n</think>\n\n```python\n{code}\n```\n{explanation}"


class FixedEvaluator:
    """Returns a preset pass pattern (a unit test of the reward logic around the evaluator)."""

    def __init__(self, passing=None, error=None, delay=0.0):
        self.passing, self.error, self.delay, self.calls = passing, error, delay, []

    async def evaluate(self, code, test_cases):
        self.calls.append((code, test_cases))
        await asyncio.sleep(self.delay)
        if self.error:
            raise self.error
        return {"passing": self.passing, "feedback": [""] * len(self.passing)}


def details(passing, extra=None, text=None, **kw):
    evaluator = FixedEvaluator(passing, **kw)
    return asyncio.run(
        score_details("code_taco_verified", text or response(), GROUND_TRUTH, extra, evaluator=evaluator)
    )


@pytest.mark.parametrize(
    "pass_rate, expected", [(1.0, 1.0), (0.75, 0.2), (0.5, 0.2), (0.25, 0.0), (0.0, -0.1)]
)
def test_correctness_ladder(pass_rate, expected):
    assert correctness_reward(pass_rate, CFG) == expected


def test_improvement_adds_relative_progress():
    assert with_improvement(0.2, 0.75, 0.5, CFG) == pytest.approx(0.2 + 0.25 / 0.5 * 0.1)


def test_no_improvement_replaces_the_reward():
    assert with_improvement(0.2, 0.5, 0.5, CFG) == pytest.approx(-0.1)
    assert with_improvement(0.0, 0.25, 0.5, CFG) == pytest.approx(-0.1 + (0.25 - 0.5) / 0.5 * 0.1)
    assert with_improvement(-0.1, 0.0, 1.0, CFG) == pytest.approx(-0.2)


def test_improvement_ignored_when_solved_or_no_previous_best():
    assert with_improvement(1.0, 1.0, 0.5, CFG) == 1.0
    assert with_improvement(0.2, 0.5, 0.0, CFG) == 0.2


def test_no_program_scores_minus_one_in_training_and_zero_in_validation():
    text = "I could not solve it.\n</think>\nSorry."
    evaluator = FixedEvaluator([True])
    assert asyncio.run(score_details("d", text, GROUND_TRUTH, {}, evaluator=evaluator))["score"] == -1.0
    assert (
        asyncio.run(score_details("d", text, GROUND_TRUTH, {"is_val": True}, evaluator=evaluator))["score"]
        == 0.0
    )
    assert evaluator.calls == []


def test_full_pass_well_formed_scores_one():
    result = details([True, True], {"prev_best_pass_rate": 0.5})
    assert result["score"] == 1.0 and result["format_reward"] == 0.0 and result["improvement"] == 0.0


def test_partial_pass_with_improvement_exact():
    result = details([True, True, True, False], {"prev_best_pass_rate": 0.5})
    assert result["pass_rate"] == 0.75
    assert result["score"] == pytest.approx(0.2 + 0.05)


def test_regression_below_previous_best_exact():
    think = "Short."
    result = details([True, False, False, False], {"prev_best_pass_rate": 0.5}, text=response(think=think))
    reward = -0.1 + (0.25 - 0.5) / 0.5 * 0.1
    fmt = math.tanh(count(think) / 1024) * 0.075
    assert result["format_reward"] == pytest.approx(fmt)
    assert result["score"] == pytest.approx(reward + fmt)


def test_validation_is_binary_and_skips_format():
    bad_format = "```python\nprint(1)\n```"  # no </think>
    assert details([True, True], {"is_val": True}, text=bad_format)["score"] == 1.0
    assert details([True, False], {"is_val": True, "prev_best_pass_rate": 0.9})["score"] == 0.0


def test_evaluator_error_or_timeout_counts_as_one_failing_test(caplog):
    result = details(None, {"prev_best_pass_rate": 0.0}, error=RuntimeError("replica died"))
    assert result["pass_rate"] == 0.0 and "replica died" in result["evaluator_error"]
    assert result["score"] == pytest.approx(-0.1 + result["format_reward"])

    from dataclasses import replace

    quick = replace(CFG, call_timeout_s=0.05)
    slow = FixedEvaluator([True], delay=1.0)
    with caplog.at_level("WARNING", logger="cobalt.reward"):
        timed_out = asyncio.run(
            score_details("d", response(), GROUND_TRUTH, {}, evaluator=slow, config=quick)
        )
    assert timed_out["pass_rate"] == 0.0 and "exceeded" in timed_out["evaluator_error"]
    assert "evaluator call exceeded 0.05 s" in caplog.text  # a timeout is logged, as an error is


@pytest.mark.parametrize(
    "ground_truth",
    [None, {}, json.dumps({"inputs": [], "outputs": []}), '{"inputs": ["1"', [["1"], ["2"]]],
    ids=["None", "empty-object", "empty-lists", "bad-json", "a-list"],
)
def test_a_broken_ground_truth_is_an_evaluation_failure_not_a_wrong_program(ground_truth, caplog):
    evaluator = FixedEvaluator([False])
    with caplog.at_level("WARNING", logger="cobalt.reward"):
        result = asyncio.run(score_details("d", response(), ground_truth, {}, evaluator=evaluator))
    assert result["evaluator_error"] and "broken ground truth" in result["evaluator_error"]
    assert "broken ground truth" in caplog.text and evaluator.calls == []
    assert result["pass_rate"] == 0.0 and result["has_code"]


@pytest.mark.parametrize(
    "solution, extra, error, message",
    [
        (None, {}, TypeError, "solution_str must be a string, got NoneType"),
        (b"bytes", {}, TypeError, "solution_str must be a string, got bytes"),
        (
            response(),
            {"prev_best_pass_rate": "0.5"},
            TypeError,
            "prev_best_pass_rate must be a number, got str",
        ),
        (
            response(),
            {"prev_best_pass_rate": [0.5]},
            TypeError,
            "prev_best_pass_rate must be a number, got list",
        ),
        (response(), {"prev_best_pass_rate": 1.5}, ValueError, "prev_best_pass_rate must be between 0 and 1"),
    ],
)
def test_bad_arguments_name_the_field_and_the_type(solution, extra, error, message):
    with pytest.raises(error, match=message):
        asyncio.run(score_details("d", solution, GROUND_TRUTH, extra, evaluator=FixedEvaluator([True])))


def test_prev_best_may_be_missing_none_or_an_integer():
    assert details([True, False], {"prev_best_pass_rate": None})["score"] == details([True, False])["score"]
    assert details([True, False], {"prev_best_pass_rate": 0})["improvement"] == 0.0


def test_score_is_clipped_to_minus_one():
    looping = "abcdefghijklmnopqrstuvwxyz0123456789" * 10
    text = f"{looping}\n</think>\n```python\nprint(1)\n```"
    result = details([False], {"prev_best_pass_rate": 1.0}, text=text)
    assert result["score"] == -1.0  # -0.2 - 0.9 before clipping


# --- format reward ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "no think end ```python\nx\n```",
        "a</think>b</think>\n```python\nx\n```",
        "t</think>\n```\nx\n```",  # no ```python
        "t</think>\n```python\nx\n```\n```python\ny\n```",  # two openings
        "t</think>\n```python\nx```",  # no closing \n```
        "t</think>\n```python\nx\n```\nmore\n```",  # two closings
        "t</think>\n```python\nprint(`x`)\n```",  # backtick in the body
        "q" * 32 * 8 + "</think>\n```python\nx\n```",  # repetition
    ],
)
def test_format_violations(text):
    assert format_reward(text, 1.0) == -0.9
    assert format_reward(text, -0.1) == -0.9


def test_length_limits_when_correct():
    assert format_reward(response(), 0.2) == 0.0
    long_think = " ".join(f"w{i}" for i in range(5000))
    assert count(long_think) > 4096
    assert format_reward(response(think=long_think), 0.0) == -0.01
    long_expl = " ".join(f"e{i}" for i in range(600))
    assert format_reward(response(explanation=long_expl), 1.0) == -0.01


def test_length_and_reflection_terms_when_wrong():
    think = "Wait, that is wrong. However I can verify: wait again. But error error error error error."
    words = think.lower()
    # wait(2) wrong(1) however(1) verify(1) but(1) -> 5 keywords; error appears 5 times -> no bonus.
    assert "error" in words
    expected = math.tanh(count(think) / 1024) * 0.075 + 0.025
    assert format_reward(response(think=think), -0.1) == pytest.approx(expected)
    three = "wait. however. verify."
    assert format_reward(response(think=three), -0.1) == pytest.approx(
        math.tanh(count(three) / 1024) * 0.075 + 0.015
    )


def test_keywords_match_whole_words_only():
    think = "awaited butter errors"
    assert format_reward(response(think=think), -0.1) == pytest.approx(math.tanh(count(think) / 1024) * 0.075)


def test_overlong_parts_when_wrong():
    long_think = " ".join(f"w{i}" for i in range(5000))
    long_code = "\n".join(f"x{i} = {i}" for i in range(1000))
    long_expl = " ".join(f"e{i}" for i in range(600))
    assert format_reward(response(think=long_think), -0.1) == pytest.approx(-0.1)
    text = response(think="ok", code=long_code, explanation=long_expl)
    assert format_reward(text, -0.1) == pytest.approx(math.tanh(count("ok") / 1024) * 0.075 - 0.2)


def test_o200k_counts_offline():
    assert count("hello world") == 2
    assert count("<|endoftext|>") > 1  # special-token text counts as ordinary text


# --- end to end through the real sandbox ----------------------------------------------------------


def test_compute_score_with_the_real_sandbox(monkeypatch):
    monkeypatch.setenv("COBALT_EVALUATOR", "local")
    right = asyncio.run(
        compute_score("code_taco_verified", response(), GROUND_TRUTH, {"prev_best_pass_rate": 0.5})
    )
    wrong = asyncio.run(
        compute_score(
            "code_taco_verified",
            response(code=CODE.replace("+", "*")),
            GROUND_TRUTH,
            {"prev_best_pass_rate": 0.0},
        )
    )
    assert right == 1.0
    assert wrong == pytest.approx(-0.1 + math.tanh(count("Let me add the numbers.") / 1024) * 0.075)


@pytest.mark.parametrize("evaluator", sorted(p.stem for p in config_dir().glob("evaluator*.yaml")))
def test_the_evaluators_verdict_arrives_before_any_callers_clock_runs_out(evaluator):
    """Verdicts do not depend on load only if no caller gives up first: the evaluator's wall
    backstop ends a request before the reward's call times out (a failing test), and that before the
    reward manager's per-item timeout (-1.0). A caller cutting a loaded request short would let one
    sample's load lower its neighbours' rewards."""
    from cobalt.serve.evaluator import load_evaluator_config
    from cobalt.train.profile import load_profile, override_value

    sandbox, _ = load_evaluator_config(evaluator)
    profiles = [p.stem for p in (config_dir() / "train").glob("*.yaml") if p.stem != "common"]
    item_timeouts = [override_value(load_profile(p).overrides, ITEM_TIMEOUT) for p in profiles]
    shortest_item = min(float(t or RewardManagerSettings().timeout_s) for t in item_timeouts)
    assert sandbox.request_wall_timeout_s < reward_config().call_timeout_s < shortest_item
    assert sandbox.request_wall_timeout_s < load_config("inference")["evaluator_timeout_s"]
