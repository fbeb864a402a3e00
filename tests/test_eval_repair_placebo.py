"""Repair against a placebo: the three arms' prompts and decoding, and their comparison."""

from __future__ import annotations

import pytest

from cobalt.common.prompts import build_instruction, initial_messages
from cobalt.data.procedural.generate import problem
from cobalt.eval.repair import REPAIR_ARMS, RepairDecoding, placebo_table, repair_arms
from cobalt.sandbox.feedback import feedback_for


def failed_turn_0(name="list_max", seed=400_000):
    """A procedural problem, a wrong answer and its public-test result with real feedback texts."""
    prob = problem(name, seed)
    tests = prob["public_tests"]
    passing, feedback = [], []
    for i, (test_input, expected) in enumerate(zip(tests["inputs"], tests["outputs"])):
        run = {"status": "ok", "rc": 0, "stdout": "-12345\n", "stderr": ""}
        passing.append(i == 0)
        feedback.append(feedback_for(run, test_input, expected, timeout_s=2))
    answer = "```python\nprint(-12345)\n```"
    return prob, build_instruction(prob["question"]), answer, {"passing": passing, "feedback": feedback}


@pytest.mark.parametrize(
    "name,seed", [("list_max", 400_000), ("add_two", 400_001), ("reverse_words", 400_002)]
)
def test_the_placebo_turn_carries_no_test_detail(name, seed):
    prob, instruction, answer, result = failed_turn_0(name, seed)
    arms = {a.name: a for a in repair_arms(instruction, answer, result, RepairDecoding())}
    placebo_turn = arms["placebo"].messages[-1]["content"]
    feedback_turn = arms["feedback"].messages[-1]["content"]
    details = [
        text.strip()
        for tests in (prob["public_tests"], prob["hidden_tests"])
        for text in (*tests["inputs"], *tests["outputs"])
        if len(text.strip()) >= 3  # a one-letter output ("a") is also an English word
    ]
    assert details and not [d for d in details if d in placebo_turn]
    # it does not depend on the failure at all: another problem's failure gives the same turn
    _, other_instruction, other_answer, other_result = failed_turn_0("add_two", 400_100)
    other = repair_arms(other_instruction, other_answer, other_result, RepairDecoding())
    assert other[1].name == "placebo" and other[1].messages[-1]["content"] == placebo_turn
    assert not any(ch.isdigit() for ch in placebo_turn)
    for word in ("Input", "Output", "Expected", "-12345"):
        assert word not in placebo_turn
    # the real feedback does carry the first failing test (so the check above can fail)
    failing = prob["public_tests"]["inputs"][1].strip(), prob["public_tests"]["outputs"][1].strip()
    assert failing[0] in feedback_turn and failing[1] in feedback_turn and "-12345" in feedback_turn


def test_the_arms_share_the_prompt_prefix_and_the_decoding():
    _, instruction, answer, result = failed_turn_0()
    decoding = RepairDecoding(temperature=0.6, top_p=0.95, max_tokens=128, samples=4)
    arms = repair_arms(instruction, answer, result, decoding)
    assert [a.name for a in arms] == list(REPAIR_ARMS)
    by = {a.name: a for a in arms}
    turn_0 = initial_messages(instruction)
    assert by["fresh"].messages == turn_0
    for name in ("feedback", "placebo"):
        assert by[name].messages[:2] == turn_0
        assert by[name].messages[2] == {"role": "assistant", "content": answer}
        assert by[name].messages[3]["role"] == "user" and len(by[name].messages) == 4
    assert by["feedback"].messages[3] != by["placebo"].messages[3]
    assert all(a.decoding == decoding for a in arms)


def test_decoding_samples_at_least_four_times_at_a_positive_temperature():
    with pytest.raises(ValueError, match="at least 4"):
        RepairDecoding(samples=3)
    with pytest.raises(ValueError, match="sample"):
        RepairDecoding(temperature=0.0)


def test_placebo_table_pairs_problems_and_compares_the_arms():
    solved = {
        "feedback": {"p": [1, 1, 1, 1], "q": [1, 1, 0, 0], "r": [1, 0, 0, 0]},
        "placebo": {"p": [1, 1, 0, 0], "q": [0, 0, 0, 0], "r": [1, 0, 0, 0]},
        "fresh": {"p": [1, 0, 0, 0], "q": [0, 0, 0, 0], "r": [0, 0, 0, 0], "only_fresh": [1, 1, 1, 1]},
    }
    table = placebo_table(solved)
    assert table["problems"] == 3
    assert table["rates"]["feedback"]["mean"] == pytest.approx((100 + 50 + 25) / 3)
    assert table["rates"]["placebo"]["mean"] == pytest.approx((50 + 0 + 25) / 3)
    assert table["rates"]["fresh"]["mean"] == pytest.approx(25 / 3)
    assert table["feedback_minus_placebo"]["mean"] == pytest.approx(100 / 3)
    # per-problem differences 50, 50, 0: 4 sign patterns, 2 as far from 0 → p = 0.5
    assert table["feedback_minus_placebo"]["p_value"] == pytest.approx(0.5)
    assert table["placebo_minus_fresh"]["mean"] == pytest.approx((25 + 0 + 25) / 3)
    with pytest.raises(Exception, match="missing: placebo"):
        placebo_table({"feedback": {}, "fresh": {}})
