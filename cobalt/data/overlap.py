"""Training problems that are also evaluation problems.

Two problems are the same when their statements are equal once normalized (lower case, every run
of whitespace one space, ends stripped: digits and punctuation are kept, so "n ≤ 10" and
"n ≤ 100" differ) or when their test sets are equal (the set of (input, output) pairs of
``test_cases``, each side's whitespace normalized the same way, order and duplicates ignored).
The paper's chain refuses to train on a problem it evaluates (``--allow_overlap`` runs anyway)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from cobalt.errors import DataError
from cobalt.jsonl import read_numbered_jsonl

_SPACE = re.compile(r"\s+")


class OverlapError(ValueError):
    """Training problems found in an evaluation set."""


@dataclasses.dataclass(frozen=True)
class Overlap:
    eval_set: str
    train_id: str
    eval_id: str
    how: str  # "statement", "tests" or "statement+tests"


def normalized(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def statement_key(record: dict) -> str | None:
    question = record.get("question")
    if not isinstance(question, str):
        return None
    return normalized(question) or None


def tests_key(record: dict, path=None, line=None) -> frozenset | None:
    """The normalized (input, output) pairs of ``test_cases``; ``None`` without tests."""
    raw = record.get("test_cases")
    if raw is None:
        return None
    try:
        tests = json.loads(raw) if isinstance(raw, str) else raw
        pairs = zip(tests["inputs"], tests["outputs"], strict=True)
        key = frozenset((normalized(str(i)), normalized(str(o))) for i, o in pairs)
    except (ValueError, TypeError, KeyError) as e:
        raise DataError(f"not a test-case set ({e})", path=path, line=line, field="test_cases") from e
    return key or None


def keyed(path: str | Path) -> list[tuple[str, str | None, frozenset | None]]:
    """``(id, statement key, tests key)`` of every problem record of a file."""
    out = []
    for line, record in read_numbered_jsonl(path):
        if "id" not in record:
            raise DataError("a problem record needs an id", path=path, line=line, field="id")
        out.append((str(record["id"]), statement_key(record), tests_key(record, path, line)))
    return out


def find_overlap(train: str | Path, evaluations: dict[str, str | Path]) -> list[Overlap]:
    """Every (evaluation set, training id, evaluation id) pair that is the same problem."""
    by_statement: dict[str, list[str]] = {}
    by_tests: dict[frozenset, list[str]] = {}
    for problem_id, statement, tests in keyed(train):
        if statement:
            by_statement.setdefault(statement, []).append(problem_id)
        if tests:
            by_tests.setdefault(tests, []).append(problem_id)
    found = []
    for name, path in evaluations.items():
        for eval_id, statement, tests in keyed(path):
            hows: dict[str, list[str]] = {}
            for train_id in by_statement.get(statement, []) if statement else []:
                hows.setdefault(train_id, []).append("statement")
            for train_id in by_tests.get(tests, []) if tests else []:
                hows.setdefault(train_id, []).append("tests")
            found += [Overlap(name, train_id, eval_id, "+".join(how)) for train_id, how in hows.items()]
    return found


def describe(found: list[Overlap], shown: int = 8) -> str:
    """One line naming the ids on each side (the first ``shown`` pairs, then a count)."""
    pairs = [f"{o.eval_set}: train {o.train_id} = {o.eval_id} ({o.how})" for o in found[:shown]]
    more = f"; and {len(found) - shown} more" if len(found) > shown else ""
    return "; ".join(pairs) + more


def refuse_overlap(train: str | Path, evaluations: dict[str, str | Path], allow: bool) -> list[Overlap]:
    """The overlaps; with any and not ``allow``, an :class:`OverlapError` of one line."""
    found = find_overlap(train, evaluations)
    if found and not allow:
        raise OverlapError(
            f"{len(found)} training problem(s) of {train} are also evaluation problems: "
            f"{describe(found)} (remove them from training, or pass --allow_overlap to run anyway)"
        )
    return found
