"""The embedded problem set: validation, sandbox verdicts of every solution, raw-record round trips."""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import pickle
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from cobalt.common.errors import DataError
from cobalt.common.jsonl import load_jsonl
from cobalt.data import embedded
from cobalt.data.embedded.__main__ import main as cli_main

PROBLEMS = embedded.load_problems()
BY_ID = {p["id"]: p for p in PROBLEMS}
TIMEOUT_MARK = "TimeoutError: Program timed out"


def n_tests(problem):
    return len(embedded.all_tests(problem)["inputs"])


def is_too_slow(wrong):
    return wrong["bug"].startswith("too slow")


# ------------------------------------------------------------------------- the set itself


def test_problem_set_has_the_required_shape():
    assert len(PROBLEMS) >= 40
    assert len(BY_ID) == len(PROBLEMS)
    assert {p["difficulty"] for p in PROBLEMS} == {"EASY", "MEDIUM", "HARD"}
    assert all(n_tests(p) >= 8 for p in PROBLEMS)
    assert all(2 <= len(p["public_tests"]["inputs"]) <= 4 for p in PROBLEMS)
    assert all(p["solutions"] and p["wrong_solutions"] for p in PROBLEMS)
    # Some problems exercise the ">20 tests: keep 5 shortest + 15 longest" rule downstream.
    assert 3 <= sum(n_tests(p) > 20 for p in PROBLEMS) <= 5
    assert 3 <= sum(any(map(is_too_slow, p["wrong_solutions"])) for p in PROBLEMS) <= 5
    assert embedded.PROBLEMS_PATH.stat().st_size < 600_000


def test_example_in_the_statement_is_the_first_public_test():
    for p in PROBLEMS:
        example = (
            f"\nSample Input 1\n\n{p['public_tests']['inputs'][0].rstrip()}\n\n"
            f"Sample Output 1\n\n{p['public_tests']['outputs'][0].rstrip()}\n"
        )
        assert p["question"].endswith(example), p["id"]


def _drop_last_output(p):
    p["hidden_tests"]["outputs"].pop()


def _number_as_input(p):
    p["public_tests"]["inputs"][0] = 5


def _too_few_tests(p):
    p["hidden_tests"] = {"inputs": ["1\n"], "outputs": ["1\n"]}


def _mentions_image(p):
    p["question"] += "\nSee the image below."


def _no_wrong_solution(p):
    p["wrong_solutions"] = []


@pytest.mark.parametrize(
    "corrupt, field",
    [
        (_drop_last_output, "hidden_tests"),
        (_number_as_input, "public_tests"),
        (_too_few_tests, "hidden_tests"),
        (_mentions_image, "question"),
        (_no_wrong_solution, "wrong_solutions"),
    ],
)
def test_load_names_the_problem_and_field_of_a_defect(tmp_path, corrupt, field):
    problems = copy.deepcopy(PROBLEMS)
    corrupt(problems[7])
    path = tmp_path / "problems.json"
    path.write_text(json.dumps(problems))
    with pytest.raises(DataError) as info:
        embedded.load_problems(path)
    assert info.value.field == field
    assert PROBLEMS[7]["id"] in str(info.value)


def test_load_rejects_duplicate_ids(tmp_path):
    path = tmp_path / "problems.json"
    path.write_text(json.dumps(PROBLEMS[:2] + PROBLEMS[:1]))
    with pytest.raises(DataError, match="duplicate id"):
        embedded.load_problems(path)


# ------------------------------------------------------------------------- sandbox verdicts


@pytest.fixture(scope="module")
def verdicts():
    """``(problem id, "solution"|"wrong", index) -> evaluate() result`` for every program.

    Two requests at a time, one test at a time each: at most two programs run at once.
    """
    from cobalt.sandbox import evaluate
    from cobalt.sandbox.config import default_config

    config = dataclasses.replace(default_config(), test_concurrency=1)
    slow_jobs, jobs = {}, {}
    for p in PROBLEMS:
        for i, code in enumerate(p["solutions"]):
            jobs[(p["id"], "solution", i)] = code
        for i, wrong in enumerate(p["wrong_solutions"]):
            (slow_jobs if is_too_slow(wrong) else jobs)[(p["id"], "wrong", i)] = wrong["code"]
    jobs = slow_jobs | jobs  # the long ones first, so they overlap with the many short ones
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            key: pool.submit(evaluate, code, embedded.all_tests(BY_ID[key[0]]), config)
            for key, code in jobs.items()
        }
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.parametrize("pid", sorted(BY_ID))
def test_solutions_pass_and_wrong_solutions_fail_in_the_sandbox(verdicts, pid):
    problem = BY_ID[pid]
    total = n_tests(problem)
    for i in range(len(problem["solutions"])):
        result = verdicts[(pid, "solution", i)]
        failing = [fb for ok, fb in zip(result["passing"], result["feedback"]) if not ok]
        assert len(result["passing"]) == total and not failing, failing[:1]
    for i, wrong in enumerate(problem["wrong_solutions"]):
        result = verdicts[(pid, "wrong", i)]
        assert len(result["passing"]) == total
        failing = [fb for ok, fb in zip(result["passing"], result["feedback"]) if not ok]
        assert failing, f"wrong solution {i} ({wrong['bug']}) passes every test"
        if is_too_slow(wrong):
            # Right answers, but one or two tests are too large for it.
            assert 1 <= len(failing) <= 2
            assert all(TIMEOUT_MARK in fb for fb in failing), failing


# ------------------------------------------------------------------------- raw records


def test_taco_records_round_trip():
    records = embedded.to_taco_records(PROBLEMS)
    assert [r["id"] for r in records] == [p["id"] for p in PROBLEMS]
    for record, problem in zip(records, PROBLEMS):
        assert {"id", "question", "solutions", "input_output", "source", "difficulty"} <= set(record)
        assert json.loads(record["input_output"]) == embedded.all_tests(problem)
        assert json.loads(record["solutions"]) == problem["solutions"]
        assert record["source"] == embedded.SOURCE and record["starter_code"] == ""


def test_lcb_records_round_trip():
    records = embedded.to_lcb_records(PROBLEMS)
    for record, problem in zip(records, PROBLEMS):
        assert record["question_id"] == problem["id"]
        assert record["difficulty"] == problem["difficulty"].lower()
        public = json.loads(record["public_test_cases"])
        assert [t["input"] for t in public] == problem["public_tests"]["inputs"]
        assert [t["output"] for t in public] == problem["public_tests"]["outputs"]
        assert {t["testtype"] for t in public} == {"stdin"}
        raw = pickle.loads(zlib.decompress(base64.b64decode(record["private_test_cases"])))
        hidden = json.loads(raw)
        assert [t["input"] for t in hidden] == problem["hidden_tests"]["inputs"]
        assert [t["output"] for t in hidden] == problem["hidden_tests"]["outputs"]
        assert "\nSample Input 1\n\n" in record["question_content"]


def test_cli_writes_both_files_and_refuses_to_overwrite(tmp_path, capsys):
    assert cli_main(["--out", str(tmp_path)]) == 0
    taco = load_jsonl(tmp_path / embedded.TACO_FILE)
    lcb = load_jsonl(tmp_path / embedded.LCB_FILE)
    assert [r["id"] for r in taco] == [r["question_id"] for r in lcb] == list(BY_ID)
    assert f"wrote {len(PROBLEMS)} records" in capsys.readouterr().out

    (tmp_path / embedded.LCB_FILE).write_text("keep me\n")
    assert cli_main(["--out", str(tmp_path)]) == 1
    assert (tmp_path / embedded.LCB_FILE).read_text() == "keep me\n"
    assert cli_main(["--out", str(tmp_path), "--overwrite"]) == 0
    assert len(load_jsonl(tmp_path / embedded.LCB_FILE)) == len(PROBLEMS)
