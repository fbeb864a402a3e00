"""cobalt.data.overlap: training problems found in an evaluation set, compared as each dataset
ships them (whole statements, their 13-grams, every test)."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import APPS_SAMPLES
from data_fixtures import REWORDED_CLOCK, apps_problems, lcb_file, lcb_layout, respaced, taco_file

from cobalt.common.errors import DataError
from cobalt.common.jsonl import write_jsonl
from cobalt.data.embedded import load_problems
from cobalt.data.overlap import (
    OverlapError,
    find_overlap,
    normalized,
    read_problems,
    refuse_overlap,
    statement_words,
)


def record(pid, question, pairs):
    inputs, outputs = zip(*pairs, strict=True) if pairs else ((), ())
    return {
        "id": pid,
        "question": question,
        "instruction": question,
        "test_cases": json.dumps({"inputs": list(inputs), "outputs": list(outputs)}),
    }


def files(tmp_path, train, **evals):
    write_jsonl(tmp_path / "train.jsonl", train, overwrite=True)
    paths = {}
    for name, records in evals.items():
        write_jsonl(tmp_path / f"{name}.jsonl", records, overwrite=True)
        paths[name] = read_problems(tmp_path / f"{name}.jsonl")
    return read_problems(tmp_path / "train.jsonl"), paths


def found_pairs(train, evaluations) -> set:
    return {(o.eval_set, o.train_id, o.eval_id, o.how) for o in find_overlap(train, evaluations)}


def test_statements_equal_up_to_case_spacing_punctuation_and_latex_are_one_problem_digits_are_kept():
    assert statement_words("  Sum  the\nNumbers\t$1..N$ ") == statement_words("sum the numbers 1 . . n")
    assert statement_words("$1 \\le n \\le 10^5$") == statement_words("1 ≤ n ≤ 10^5")
    assert statement_words("n <= 10") != statement_words("n <= 100")
    assert normalized(" 1  2\n3 ") == "1 2 3"  # a test's input or output: whitespace only


def test_a_statement_or_a_test_set_shared_names_both_ids(tmp_path):
    train = [record("t1", "Add two numbers.", [("1 2", "3")]),
             record("t2", "Reverse a string.", [("ab", "ba"), ("abc", "cba")]),
             record("t3", "Count vowels.", [("aei", "3")])]  # fmt: skip
    dev = [record("d1", "  ADD two\n numbers. ", [("5 5", "10")]),  # same statement, other tests
           record("d2", "Print the reverse of the input.", [("abc ", " cba"), ("ab", "ba")]),  # same tests, reordered
           record("d3", "Count consonants.", [("aei", "0")])]  # fmt: skip
    lcb = [record("l1", "Count vowels.", [("aei", "3")])]
    train, evals = files(tmp_path, train, dev=dev, lcb=lcb)
    assert found_pairs(train, evals) == {("dev", "t1", "d1", "statement"), ("dev", "t2", "d2", "tests"),
                                         ("lcb", "t3", "l1", "statement+tests")}  # fmt: skip


def test_livecodebench_statements_as_shipped_match_verbatim_respaced_and_with_other_samples(tmp_path):
    """LiveCodeBench's whole question_content (with its Sample Input sections), not the cut text
    the evaluation prompts with: a TACO copy carrying it verbatim, re-spaced, or with other
    sample sections matches by statement, its own few tests notwithstanding."""
    problems = load_problems()
    shipped = problems[2]
    lcb_file(tmp_path / "test6.jsonl", problems=[shipped, problems[3]])
    question = shipped["question"]
    narrative, samples = question.split("Sample Input 1")
    assert len(samples) > 20  # the cut the evaluation makes drops a real part
    other_samples = narrative + "Example\n\nInput\n\naeiou xyz\n\nOutput\n\n5\n\nAll five vowels of the word."
    tests = {"inputs": ["zzz\n"] * 8, "outputs": ["0\n"] * 8}
    copies = [{**shipped, "question": q, "public_tests": tests, "hidden_tests": {"inputs": [], "outputs": []}}
              for q in (question, respaced(question), other_samples)]  # fmt: skip
    taco_file(tmp_path / "taco.jsonl", problems=copies)
    found = found_pairs(
        read_problems(tmp_path / "taco.jsonl"), {"lcb": read_problems(tmp_path / "test6.jsonl")}
    )
    hows = {train_id: how for _, train_id, _, how in found}
    assert {eval_id for _, _, eval_id, _ in found} == {"lcb-0000"} and len(found) == 3, found
    assert hows["taco-00000"] == hows["taco-00001"] == "statement"
    assert hows["taco-00002"].startswith("statement ") and hows["taco-00002"].endswith("% alike")


def test_every_shipped_test_is_compared_not_the_evaluations_twenty(tmp_path):
    """A problem shipping 26 tests (3 public, 23 private): a copy with all 26 (shuffled) has the
    same tests; one with the 20 the TACO filters keep is contained in them; a problem sharing 3
    of its tests is another problem."""
    problems = {p["id"]: p for p in load_problems()}
    shipped = problems["cobalt-005"]
    lcb_file(tmp_path / "test6.jsonl", problems=[shipped])
    tests = {k: shipped["public_tests"][k] + shipped["hidden_tests"][k] for k in ("inputs", "outputs")}
    assert len(tests["inputs"]) == 26
    reworded = "Advance a 24-hour clock reading by a number of minutes and print the new reading."
    copies = [
        {**shipped, "question": reworded, "public_tests": {k: v[::-1] for k, v in tests.items()},
         "hidden_tests": {"inputs": [], "outputs": []}},
        {**problems["cobalt-001"], "public_tests": {k: v[:3] for k, v in tests.items()}},
    ]  # fmt: skip
    taco_file(tmp_path / "taco.jsonl", problems=copies)
    taco_file(tmp_path / "kept20.jsonl", problems=[{**copies[0], "question": REWORDED_CLOCK}])
    lcb = {"lcb": read_problems(tmp_path / "test6.jsonl")}
    assert found_pairs(read_problems(tmp_path / "taco.jsonl"), lcb) == {
        ("lcb", "taco-00000", "lcb-0000", "tests")
    }
    # the filtered problem record keeps 20 of the 26 tests: all of them are LiveCodeBench's
    from cobalt.data.taco import filter_record

    trimmed = filter_record(json.loads((tmp_path / "kept20.jsonl").read_text()))
    assert len(json.loads(trimmed["test_cases"])["inputs"]) == 20
    write_jsonl(tmp_path / "trimmed.jsonl", [trimmed])
    assert found_pairs(read_problems(tmp_path / "trimmed.jsonl"), lcb) == {
        ("lcb", "taco-00000", "lcb-0000", "tests contained")
    }


def test_distinct_real_problems_do_not_match_and_each_matches_its_livecodebench_layout(tmp_path):
    """The real APPS problems and the embedded ones, every pair of distinct problems compared in
    both directions: none matches (related problems share boilerplate, under half of their
    13-grams); each APPS problem as TACO ships it matches itself laid out as LiveCodeBench ships
    AtCoder's (other headers and sample sections)."""
    if not APPS_SAMPLES.is_dir():
        pytest.skip(f"no real problems at {APPS_SAMPLES}")
    apps = apps_problems(APPS_SAMPLES)
    problems = apps + load_problems()
    taco_file(tmp_path / "taco.jsonl", problems=problems, id_prefix="t-")
    lcb_file(tmp_path / "test6.jsonl", problems=problems, id_prefix="l-")
    found = find_overlap(
        read_problems(tmp_path / "taco.jsonl"), {"lcb": read_problems(tmp_path / "test6.jsonl")}
    )
    distinct = [(o.train_id, o.eval_id) for o in found if o.train_id[2:] != o.eval_id[2:].zfill(5)]
    assert distinct == [] and len(found) == len(problems)
    assert all(a["id"] != b["id"] for a, b in itertools.combinations(problems, 2))
    laid_out = [{**p, "question": lcb_layout(p["question"])} for p in apps]
    assert all("Sample Input 1" in p["question"] for p in laid_out)
    lcb_file(tmp_path / "apps_lcb.jsonl", problems=laid_out, id_prefix="l-")
    taco_file(tmp_path / "apps_taco.jsonl", problems=[{**p, "hidden_tests": {"inputs": [], "outputs": []},
              "public_tests": {"inputs": ["0\n"] * 8, "outputs": ["0\n"] * 8}} for p in apps], id_prefix="t-")  # fmt: skip
    found = find_overlap(
        read_problems(tmp_path / "apps_taco.jsonl"), {"lcb": read_problems(tmp_path / "apps_lcb.jsonl")}
    )
    assert sorted((o.train_id, o.eval_id) for o in found) == [
        (f"t-{i:05d}", f"l-{i:04d}") for i in range(len(apps))
    ]
    assert all(o.how.endswith("% alike") for o in found)


def test_every_pair_is_written_before_the_refusal_whose_line_names_the_file(tmp_path):
    train = [
        record(f"t{i}", f"Problem number {i} asks for something of its own.", [(str(i), "x")])
        for i in range(11)
    ]
    dev = [
        record(f"d{i}", f"problem number {i} asks for something of its own.", [("y", "z")]) for i in range(11)
    ]
    train, evals = files(tmp_path, train, dev=dev)
    out = tmp_path / "overlap.json"
    with pytest.raises(OverlapError) as e:
        refuse_overlap(train, evals, allow=False, record=out, source="train.jsonl")
    line = str(e.value)
    assert "\n" not in line and line.startswith(
        "11 training problem(s) of train.jsonl are also evaluation problems"
    )
    assert (
        "dev: train t7 = d7 (statement)" in line
        and "; and 3 more" in line
        and f"all 11 pair(s) in {out}" in line
    )
    written = json.loads(out.read_text())
    assert written["allowed"] is False and sorted(o["train_id"] for o in written["overlaps"]) == sorted(
        f"t{i}" for i in range(11)
    )
    assert [o.eval_id for o in refuse_overlap(train, evals, allow=True, record=out, source="t")][:1] == ["d0"]
    assert json.loads(out.read_text())["allowed"] is True


def test_disjoint_sets_pass(tmp_path):
    train, evals = files(
        tmp_path, [record("t1", "Add.", [("1 2", "3")])], dev=[record("d1", "Subtract.", [("1 2", "-1")])]
    )
    assert refuse_overlap(train, evals, allow=False, record=tmp_path / "o.json", source="t") == []
    assert json.loads((tmp_path / "o.json").read_text()) == {"allowed": False, "overlaps": []}


def test_a_record_without_an_id_or_with_broken_tests_is_named_with_file_line_and_field(tmp_path):
    (tmp_path / "train.jsonl").write_text('{"id": "a", "instruction": "q", "test_cases": "{}"}\n')
    with pytest.raises(DataError, match=r"train.jsonl:1: field 'test_cases'"):
        read_problems(tmp_path / "train.jsonl")
    write_jsonl(tmp_path / "dev.jsonl", [record("a", "q", [("1", "1")]), {"instruction": "q"}])
    with pytest.raises(DataError, match=r"dev.jsonl:2: field 'id'"):
        read_problems(tmp_path / "dev.jsonl")


def test_the_chains_problems_read_alike_from_each_file_format_taco_verified_comes_in(tmp_path):
    from cobalt.data.overlap import chain_problems

    problems = load_problems()[:6]
    lcb_file(tmp_path / "test6.jsonl", limit=2, start=20)
    names = ("taco.jsonl", "taco.json", "taco.parquet")  # JSONL, one JSON array (as shipped), parquet
    for name in names:
        taco_file(tmp_path / name, problems=problems)
    jsonl, array, parquet = (
        chain_problems(tmp_path / n, tmp_path / "test6.jsonl", dev_ratio=0.5) for n in names
    )
    assert jsonl == array == parquet and [len(jsonl[0]), len(jsonl[1]["TACO-dev"])] == [3, 3]
