"""The embedded problem set: stdin/stdout problems written for COBALT, the default data offline.

``problems.json`` holds every problem (statement, public and hidden tests, correct solutions and
labelled wrong solutions). This module validates it and converts it to the two raw shapes the
preprocessing reads, so the pipeline runs unchanged without TACO or LiveCodeBench downloads:

    problems = load_problems()
    to_taco_records(problems)   # TACO-verified rows: input_output / solutions as JSON strings
    to_lcb_records(problems)    # LiveCodeBench test6 rows: private tests pickled + zlib + base64
    write_raw("data/raw")       # both, as JSONL (python -m cobalt.data.embedded --out data/raw)
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import zlib
from pathlib import Path

from cobalt.common.errors import DataError
from cobalt.common.jsonl import write_jsonl
from cobalt.common.testcases import parse_test_cases

PROBLEMS_PATH = Path(__file__).with_name("problems.json")
# Very simple problems (sum of two numbers, reverse a string, ...) on which a 135M model solves
# some at turn 0: the learn profile's set (configs/learn.yaml). Same format, ids easy-NNN.
EASY_PROBLEMS_PATH = Path(__file__).with_name("easy_problems.json")
PROBLEM_SETS = {"embedded": PROBLEMS_PATH, "embedded_easy": EASY_PROBLEMS_PATH}
SOURCE = "cobalt-embedded"
TACO_FILE = "taco_embedded.jsonl"
LCB_FILE = "lcb_test6_embedded.jsonl"
DIFFICULTIES = ("EASY", "MEDIUM", "HARD")
MIN_TESTS = 8
PUBLIC_RANGE = (2, 4)
MIN_QUESTION_ALNUM = 100
LCB_CONTEST_DATE = "2025-01-01T00:00:00"


def load_problems(path: str | os.PathLike = PROBLEMS_PATH) -> list[dict]:
    """All problems, validated; a DataError names the problem id and the offending field."""
    path = Path(path)
    try:
        problems = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"cannot read the problem set ({e})", path=path) from None
    if not isinstance(problems, list):
        raise DataError("expected a JSON list of problems", path=path)
    seen = set()
    for index, problem in enumerate(problems):
        pid = _validate(problem, index, path)
        if pid in seen:
            raise DataError(f"problem {pid!r}: duplicate id", path=path, field="id")
        seen.add(pid)
    return problems


def all_tests(problem: dict) -> dict:
    """``{"inputs", "outputs"}``: the public tests followed by the hidden ones."""
    public, hidden = problem["public_tests"], problem["hidden_tests"]
    return {"inputs": public["inputs"] + hidden["inputs"], "outputs": public["outputs"] + hidden["outputs"]}


def to_taco_records(problems: list[dict]) -> list[dict]:
    """Rows in the raw TACO-verified shape (``solutions`` and ``input_output`` are JSON strings)."""
    return [
        {
            "id": p["id"],
            "name": p["title"],
            "question": p["question"],
            "solutions": json.dumps(p["solutions"]),
            "starter_code": "",
            "input_output": json.dumps(all_tests(p)),
            "difficulty": p["difficulty"],
            "source": SOURCE,
            "tags": [],
            "skill_types": [],
            "url": "",
        }
        for p in problems
    ]


def to_lcb_records(problems: list[dict]) -> list[dict]:
    """Rows in the raw LiveCodeBench ``test6.jsonl`` shape (stdin tests only)."""
    return [
        {
            "question_id": p["id"],
            "question_title": p["title"],
            "question_content": p["question"],
            "platform": "cobalt",
            "contest_id": SOURCE,
            "contest_date": LCB_CONTEST_DATE,
            "starter_code": "",
            "difficulty": p["difficulty"].lower(),
            "public_test_cases": json.dumps(_lcb_tests(p["public_tests"])),
            "private_test_cases": encode_private_tests(_lcb_tests(p["hidden_tests"])),
            "metadata": "{}",
        }
        for p in problems
    ]


def encode_private_tests(tests: list[dict]) -> str:
    """LiveCodeBench's storage of private tests: JSON string → pickle → zlib → base64."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode("ascii")


def write_raw(
    out_dir: str | os.PathLike, overwrite: bool = False, path: str | os.PathLike = PROBLEMS_PATH
) -> dict[Path, int]:
    """Write the TACO and LiveCodeBench JSONL files of the set at ``path`` into ``out_dir``;
    returns path → record count. The easy set's files are named ``*_embedded_easy.jsonl``.

    Refuses (FileExistsError, nothing written) if either file exists, unless ``overwrite``.
    """
    out_dir = Path(out_dir)
    suffix = "_easy" if Path(path) == EASY_PROBLEMS_PATH else ""
    targets = {
        out_dir / TACO_FILE.replace(".jsonl", f"{suffix}.jsonl"): to_taco_records,
        out_dir / LCB_FILE.replace(".jsonl", f"{suffix}.jsonl"): to_lcb_records,
    }
    existing = [str(p) for p in targets if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"{', '.join(existing)} already exist(s); pass --overwrite to replace")
    problems = load_problems(path)
    return {
        path: write_jsonl(path, convert(problems), overwrite=overwrite) for path, convert in targets.items()
    }


def _lcb_tests(tests: dict) -> list[dict]:
    return [{"input": i, "output": o, "testtype": "stdin"} for i, o in zip(tests["inputs"], tests["outputs"])]


def _validate(problem, index: int, path: Path) -> str:
    """Check one problem's fields; returns its id."""
    if not isinstance(problem, dict):
        raise DataError(f"problem #{index}: expected an object", path=path)
    pid = problem.get("id")
    if not isinstance(pid, str) or not pid:
        raise DataError(f"problem #{index}: missing or empty", path=path, field="id")

    def fail(field: str, what: str):
        raise DataError(f"problem {pid!r}: {what}", path=path, field=field)

    for field in ("title", "question"):
        if not isinstance(problem.get(field), str) or not problem[field].strip():
            fail(field, "expected a non-empty string")
    if problem.get("difficulty") not in DIFFICULTIES:
        fail("difficulty", f"expected one of {', '.join(DIFFICULTIES)}")
    question = problem["question"]
    if sum(ch.isalnum() for ch in question) < MIN_QUESTION_ALNUM:
        fail("question", f"fewer than {MIN_QUESTION_ALNUM} alphanumeric characters")
    if "image" in question.lower():
        fail("question", "mentions 'image' (such problems are dropped by preprocessing)")
    n_public = _check_tests(problem.get("public_tests"), "public_tests", fail)
    n_hidden = _check_tests(problem.get("hidden_tests"), "hidden_tests", fail)
    if not PUBLIC_RANGE[0] <= n_public <= PUBLIC_RANGE[1]:
        fail("public_tests", f"expected {PUBLIC_RANGE[0]} to {PUBLIC_RANGE[1]} tests, got {n_public}")
    if n_public + n_hidden < MIN_TESTS:
        fail("hidden_tests", f"expected at least {MIN_TESTS} tests in all, got {n_public + n_hidden}")
    solutions = problem.get("solutions")
    if not (isinstance(solutions, list) and solutions and all(isinstance(s, str) for s in solutions)):
        fail("solutions", "expected a non-empty list of code strings")
    wrong = problem.get("wrong_solutions")
    if not (
        isinstance(wrong, list)
        and wrong
        and all(
            isinstance(w, dict) and isinstance(w.get("code"), str) and isinstance(w.get("bug"), str)
            for w in wrong
        )
    ):
        fail("wrong_solutions", 'expected a non-empty list of {"code": str, "bug": str}')
    return pid


def _check_tests(tests, field: str, fail) -> int:
    """Check one ``{"inputs", "outputs"}`` block; returns its number of tests."""
    try:
        return len(parse_test_cases(tests, field=field)["inputs"])
    except DataError as e:
        fail(field, e.problem)


def problem_records(ids: list[str] | None = None, path: str | os.PathLike = PROBLEMS_PATH) -> list[dict]:
    """Problem records of the embedded problems (all, or those in ``ids``), exactly as
    ``preproc/preproc_lcb_test6.py`` makes them from the LiveCodeBench-shaped rows. ``path``: the
    set (default the embedded set; :data:`EASY_PROBLEMS_PATH` the easy one)."""
    from cobalt.data.livecodebench import convert_record

    chosen = [p for p in load_problems(path) if ids is None or p["id"] in ids]
    return [convert_record(raw) for raw in to_lcb_records(chosen)]
