"""Section 6: TACO filters and test selection, LiveCodeBench decoding, perturbation."""

from __future__ import annotations

import base64
import json
import os
import pickle
import random
import zlib
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cobalt.common.errors import DataError
from cobalt.data import livecodebench as lcb
from cobalt.data import taco
from cobalt.data.perturb import perturb_records, perturb_tests

QUESTION = "Given an integer n, print twice its value. " * 4


def raw_taco(pid=1, n=10, question=QUESTION, **extra):
    io = {"inputs": [f"{i}\n" for i in range(n)], "outputs": [f"{2 * i}\n" for i in range(n)]}
    rec = {
        "id": pid,
        "question": question,
        "solutions": ["print(int(input())*2)"],
        "input_output": json.dumps(io),
        "source": "codeforces",
        "difficulty": "EASY",
    }
    rec.update(extra)
    return rec


def drop_reason(raw):
    with pytest.raises(taco.Dropped) as e:
        taco.filter_record(raw)
    return str(e.value)


# --- TACO --------------------------------------------------------------------------------------
def test_taco_keeps_a_good_problem_with_instruction_and_tests():
    rec = taco.filter_record(raw_taco())
    tests = json.loads(rec["test_cases"])
    assert tests["inputs"][3] == "3\n" and len(tests["inputs"]) == 10
    assert QUESTION.strip() in rec["instruction"] and rec["question"] == QUESTION.strip()
    assert json.loads(rec["public_test_cases"])["inputs"] == tests["inputs"][:4]
    assert json.loads(rec["hidden_test_cases"])["inputs"] == tests["inputs"][4:]


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"input_output": json.dumps({"inputs": ["1"] * 7, "outputs": ["1"] * 7})}, "fewer than 8"),
        ({"input_output": json.dumps({"inputs": "12345678", "outputs": ["1"] * 8})}, "not lists"),
        ({"input_output": json.dumps({"inputs": ["1"] * 9, "outputs": ["1"] * 8})}, "unequal"),
        ({"input_output": json.dumps({"inputs": [1] * 8, "outputs": ["1"] * 8})}, "non-string"),
        ({"question": QUESTION + " See the Image below."}, "image"),
        ({"question": QUESTION + "\n![fig](a.png)"}, "image"),
        ({"question": "Print n. " * 3 + "!" * 200}, "alphanumeric"),
    ],
)
def test_taco_filters(change, reason):
    assert reason in drop_reason(raw_taco(**change))


def test_taco_list_items_are_joined_with_spaces():
    io = {"inputs": [[1, 2, "x"]] * 8, "outputs": [["3"]] * 8}
    rec = taco.filter_record(raw_taco(input_output=json.dumps(io)))
    assert json.loads(rec["test_cases"])["inputs"][0] == "1 2 x"


def test_taco_question_of_exactly_100_alphanumerics_is_kept():
    q = "a" * 100 + " !!"
    assert taco.filter_record(raw_taco(question=q))["question"] == q.strip()
    assert "alphanumeric" in drop_reason(raw_taco(question="a" * 99 + "!!!"))


def test_taco_over_20_tests_keeps_5_shortest_then_15_longest():
    lengths = list(range(1, 26))
    random.Random(3).shuffle(lengths)
    inputs = ["x" * n for n in lengths]
    outputs = [str(n) for n in lengths]
    kept_in, kept_out = taco.select_tests(inputs, outputs)
    got = [len(s) for s in kept_in]
    assert got == [5, 4, 3, 2, 1] + list(range(25, 10, -1))
    assert kept_out == [str(n) for n in got]
    assert taco.select_tests(inputs[:20], outputs[:20]) == (inputs[:20], outputs[:20])


def test_taco_leetcode_call_expression_and_instruction():
    io = {"inputs": ["1"] * 8, "outputs": ["2"] * 8, "fn_name": "double"}
    rec = taco.filter_record(raw_taco(input_output=json.dumps(io), source="leetcode"))
    assert rec["fn_name"] == "Solution().double" and "double" in rec["instruction"]
    other = taco.filter_record(raw_taco(input_output=json.dumps(io)))
    assert other["fn_name"] == "double"
    assert (
        taco.solution_program(" code ", "Solution().double")
        == "code\nprint(Solution().double(*input().split()))"
    )


def test_taco_missing_field_and_bad_json_name_the_field():
    raw = raw_taco()
    del raw["question"]
    with pytest.raises(DataError, match=r"f\.jsonl:7: field 'question'"):
        taco.filter_record(raw, path="f.jsonl", line=7)
    with pytest.raises(DataError, match="input_output"):
        taco.filter_record(raw_taco(input_output="{oops"), path="f.jsonl", line=2)


class FakeEvaluator:
    """Passes every test for programs containing 'GOOD'; counts calls."""

    def __init__(self):
        self.calls = 0

    async def evaluate(self, code, test_cases):
        self.calls += 1
        n = len(json.loads(test_cases)["inputs"])
        return {"passing": ["GOOD" in code] * n, "feedback": [""] * n}


def test_taco_unsolved_are_kept_by_default_and_dropped_on_request():
    raws = [(i + 1, raw_taco(pid=i, solutions=["GOOD"] if i % 2 else ["bad", "bad2"])) for i in range(6)]
    problems, _, _, summary = taco.preprocess_taco(raws, evaluator=FakeEvaluator(), dev_ratio=0.5)
    assert summary.unsolved == 3 and summary.unsolved_dropped == 0 and len(problems) == 6
    problems, _, _, summary = taco.preprocess_taco(
        raws, evaluator=FakeEvaluator(), drop_unsolved=True, dev_ratio=0.5
    )
    assert summary.unsolved_dropped == 3 and {p["id"] for p in problems} == {1, 3, 5}


def test_taco_solution_check_stops_at_the_first_passing_solution():
    ev = FakeEvaluator()
    raws = [(1, raw_taco(solutions=["GOOD"] * 16 + ["GOOD"] * 4))]
    taco.preprocess_taco(raws, evaluator=ev)
    assert ev.calls == 1
    ev = FakeEvaluator()
    taco.preprocess_taco([(1, raw_taco(solutions=["bad"] * 20))], evaluator=ev)
    assert ev.calls == 16


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 40), st.floats(0, 1), st.integers(0, 5))
def test_train_dev_split_loses_and_duplicates_nothing(n, ratio, seed):
    problems = [{"id": i} for i in range(n)]
    train, dev = taco.split_train_dev(problems, ratio, seed)
    assert sorted(p["id"] for p in train + dev) == list(range(n))
    assert len(dev) == round(n * ratio)
    assert (train, dev) == taco.split_train_dev(problems, ratio, seed)


# --- LiveCodeBench -----------------------------------------------------------------------------
def encode(obj) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(obj))).decode()


def raw_lcb(private, question="Find the sum.\nExample 1:\n\nInput: 1 2"):
    return {
        "question_id": "abc301_a",
        "question_content": question,
        "difficulty": "easy",
        "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
        "private_test_cases": encode(json.dumps(private)),
        "contest_date": "2024-09-01",
    }


def test_lcb_record_has_public_hidden_and_combined_tests():
    private = [{"input": "x" * n, "output": str(n)} for n in (3, 1, 2)]
    rec = lcb.convert_record(raw_lcb(private))
    hidden = json.loads(rec["hidden_test_cases"])
    assert hidden["inputs"] == ["x", "xx", "xxx"]  # sorted by input length
    assert json.loads(rec["public_test_cases"]) == {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    combined = json.loads(rec["test_cases"])
    assert combined["inputs"] == ["1 2\n", "x", "xx", "xxx"]
    assert rec["id"] == "abc301_a" and rec["contest_date"] == "2024-09-01"
    assert rec["question"] == "Find the sum." and "private_test_cases" not in rec


def test_lcb_keeps_4_shortest_and_16_longest_hidden_tests():
    private = [{"input": "x" * n, "output": str(n)} for n in range(1, 31)]
    hidden = json.loads(lcb.convert_record(raw_lcb(private))["hidden_test_cases"])
    assert [len(s) for s in hidden["inputs"]] == [1, 2, 3, 4] + list(range(15, 31))


@pytest.mark.parametrize(
    "question, cut",
    [
        ("Do A.\nExample 1:\n\nInput", "Do A."),
        ("Do B.\nSample Input 1\n\n3", "Do B."),
        ("Do C.\nExample 1:\nno blank line", "Do C.\nExample 1:\nno blank line"),
    ],
)
def test_lcb_question_cut(question, cut):
    assert lcb.cut_question(question) == cut


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/cobalt-pwned-by-pickle",))


def test_lcb_malicious_pickle_is_refused_not_executed(tmp_path):
    marker = "/tmp/cobalt-pwned-by-pickle"
    if os.path.exists(marker):
        os.unlink(marker)
    raw = raw_lcb([])
    raw["private_test_cases"] = base64.b64encode(zlib.compress(pickle.dumps(Boom()))).decode()
    with pytest.raises(lcb.UnsafePickleError, match=r"t6\.jsonl:4: field 'private_test_cases'.*refused"):
        lcb.convert_record(raw, path="t6.jsonl", line=4)
    assert not os.path.exists(marker)


def test_lcb_non_string_pickle_is_refused():
    raw = raw_lcb([])
    raw["private_test_cases"] = encode([{"input": "1", "output": "1"}])
    with pytest.raises(lcb.UnsafePickleError, match="expected a string"):
        lcb.convert_record(raw)


def test_lcb_garbage_and_missing_fields_name_the_field():
    raw = raw_lcb([])
    raw["private_test_cases"] = "not base64!!"
    with pytest.raises(DataError, match=r"private_test_cases.*cannot decode"):
        lcb.convert_record(raw, path="t6.jsonl", line=1)
    raw = raw_lcb([])
    del raw["question_content"]
    with pytest.raises(DataError, match="question_content"):
        lcb.convert_record(raw, path="t6.jsonl", line=1)


# --- perturbation ------------------------------------------------------------------------------
def test_perturbation_swaps_two_distinct_outputs():
    public = {"inputs": ["a", "b", "c", "d"], "outputs": ["1", "2", "1 ", "3"]}
    modified, perturbed = map(json.loads, perturb_tests(public, random.Random(0)))
    assert len(modified["inputs"]) == 2
    truth = dict(zip(public["inputs"], public["outputs"]))
    for i, o in zip(modified["inputs"], modified["outputs"]):
        assert truth[i].strip() != o.strip()  # the expected output is wrong
    assert perturbed["inputs"][:2] == modified["inputs"] and perturbed["outputs"][:2] == modified["outputs"]
    assert sorted(perturbed["inputs"]) == sorted(public["inputs"])
    assert Counter(perturbed["outputs"]) == Counter(public["outputs"])
    # the rest are unchanged pairs
    assert all(truth[i] == o for i, o in zip(perturbed["inputs"][2:], perturbed["outputs"][2:]))


def test_perturbation_skips_fewer_than_two_distinct_outputs():
    assert perturb_tests({"inputs": ["a", "b"], "outputs": ["1", " 1\n"]}, random.Random(0)) is None


def test_perturbation_duplicates_go_last():
    public = {"inputs": ["a", "b", "c"], "outputs": ["1", "1", "2"]}
    for seed in range(10):
        _, perturbed = map(json.loads, perturb_tests(public, random.Random(seed)))
        assert perturbed["outputs"][-1] == "1" and sorted(perturbed["outputs"][:2]) == ["1", "2"]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["1", "2", "3", " 1"]), min_size=0, max_size=6), min_size=0, max_size=8
    ),
    st.integers(0, 3),
)
def test_perturbation_properties(outputs_per_problem, seed):
    records = [
        (
            i + 1,
            {
                "id": i,
                "public_test_cases": json.dumps(
                    {"inputs": [f"in{j}" for j in range(len(outs))], "outputs": outs}
                ),
            },
        )
        for i, outs in enumerate(outputs_per_problem)
    ]
    out, skipped = perturb_records(records, seed=seed)
    assert len(out) + skipped == len(records)
    assert out == perturb_records(records, seed=seed)[0]
    expected_ids = [
        r["id"]
        for _, r in records
        if len({o.strip() for o in json.loads(r["public_test_cases"])["outputs"]}) >= 2
    ]
    assert [r["id"] for r in out] == expected_ids


def test_perturbation_missing_field_is_named():
    with pytest.raises(DataError, match=r"p\.jsonl:3: field 'public_test_cases': missing"):
        perturb_records([(3, {"id": 1})], path="p.jsonl")
