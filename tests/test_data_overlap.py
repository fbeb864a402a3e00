"""cobalt.data.overlap: training problems found in an evaluation set, by statement or by tests."""

from __future__ import annotations

import json

import pytest

from cobalt.data.overlap import OverlapError, find_overlap, normalized, refuse_overlap
from cobalt.errors import DataError
from cobalt.jsonl import write_jsonl


def record(pid, question, pairs):
    inputs, outputs = zip(*pairs, strict=True) if pairs else ((), ())
    return {
        "id": pid,
        "question": question,
        "test_cases": json.dumps({"inputs": list(inputs), "outputs": list(outputs)}),
    }


def files(tmp_path, train, **evals):
    write_jsonl(tmp_path / "train.jsonl", train, overwrite=True)
    paths = {}
    for name, records in evals.items():
        write_jsonl(tmp_path / f"{name}.jsonl", records, overwrite=True)
        paths[name] = tmp_path / f"{name}.jsonl"
    return tmp_path / "train.jsonl", paths


def test_statements_equal_up_to_case_and_whitespace_are_one_problem_digits_are_kept():
    assert normalized("  Sum  the\nNumbers\t1..N ") == normalized("sum the numbers 1..n")
    assert normalized("n <= 10") != normalized("n <= 100")


def test_a_statement_or_a_test_set_shared_names_both_ids(tmp_path):
    train = [record("t1", "Add two numbers.", [("1 2", "3")]),
             record("t2", "Reverse a string.", [("ab", "ba"), ("abc", "cba")]),
             record("t3", "Count vowels.", [("aei", "3")])]  # fmt: skip
    dev = [record("d1", "  ADD two\n numbers. ", [("5 5", "10")]),  # same statement, other tests
           record("d2", "Print the reverse of the input.", [("abc ", " cba"), ("ab", "ba")]),  # same tests, reordered
           record("d3", "Count consonants.", [("aei", "0")])]  # fmt: skip
    lcb = [record("l1", "Count vowels.", [("aei", "3")])]
    train_file, evals = files(tmp_path, train, dev=dev, lcb=lcb)
    found = {(o.eval_set, o.train_id, o.eval_id, o.how) for o in find_overlap(train_file, evals)}
    assert found == {("dev", "t1", "d1", "statement"), ("dev", "t2", "d2", "tests"),
                     ("lcb", "t3", "l1", "statement+tests")}  # fmt: skip


def test_disjoint_sets_pass_and_an_overlap_is_refused_in_one_line_unless_allowed(tmp_path):
    train_file, evals = files(tmp_path, [record("t1", "Add.", [("1 2", "3")])],
                              dev=[record("d1", "Subtract.", [("1 2", "-1")])])  # fmt: skip
    assert refuse_overlap(train_file, evals, allow=False) == []
    train_file, evals = files(tmp_path, [record("t1", "Add.", [("1 2", "3")])],
                              dev=[record("d9", "add.", [("1 2", "-1")])])  # fmt: skip
    with pytest.raises(OverlapError) as e:
        refuse_overlap(train_file, evals, allow=False)
    assert "\n" not in str(e.value) and "dev: train t1 = d9 (statement)" in str(e.value)
    assert [o.eval_id for o in refuse_overlap(train_file, evals, allow=True)] == ["d9"]


def test_a_record_without_an_id_or_with_broken_tests_is_named_with_file_line_and_field(tmp_path):
    (tmp_path / "train.jsonl").write_text('{"id": "a", "question": "q", "test_cases": "{}"}\n')
    write_jsonl(tmp_path / "dev.jsonl", [{"question": "q"}])
    with pytest.raises(DataError, match=r"train.jsonl:1: field 'test_cases'"):
        find_overlap(tmp_path / "train.jsonl", {"dev": tmp_path / "dev.jsonl"})
    write_jsonl(tmp_path / "train.jsonl", [record("a", "q", [("1", "1")])], overwrite=True)
    with pytest.raises(DataError, match=r"dev.jsonl:1: field 'id'"):
        find_overlap(tmp_path / "train.jsonl", {"dev": tmp_path / "dev.jsonl"})
