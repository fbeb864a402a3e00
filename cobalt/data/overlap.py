"""Training problems that are also evaluation problems (decontamination), found before any
expensive stage of the paper's chain.

Every problem is compared as its dataset ships it, never as the evaluation cuts it: the whole
statement (LiveCodeBench's ``question_content``, TACO's ``question``, a problem record's
``question``) and every test (LiveCodeBench's public and all private tests, TACO's whole
``input_output``, a problem record's ``test_cases``). Two problems are the same when

- their statements are equal once normalized (lower case; LaTeX commands, punctuation and
  spacing dropped: the words one space apart; digits are kept, so "n ≤ 10" and "n ≤ 100"
  differ): ``statement``;
- at least half of the shorter statement's word 13-grams are also the other's: ``statement N%
  alike`` (a copy with other sample sections or headers still matches; shared boilerplate such as
  "the input is given from standard input in the following format" does not);
- their test sets are equal, each (input, output) pair's whitespace collapsed, order and
  duplicates ignored (``tests``), or every test of the smaller set, of at least 8, is in the
  other (``tests contained``: a copy carrying a trimmed or extended test set).

The paper's chain refuses to train on a problem it evaluates (``--allow-overlap`` runs anyway);
every pair found is written to a file before it refuses. docs/data.md gives the rule's reasons."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path

from cobalt.common.errors import DataError
from cobalt.data import livecodebench, taco
from cobalt.data.sources import file_shape, iter_local

NGRAM = 13  # words: long enough that a shared one is rarely chance (GPT-3's decontamination)
ALIKE = 0.5  # of the shorter statement's n-grams
COMMON = 10  # an n-gram in more evaluation statements is boilerplate: not counted as shared
MIN_CONTAINED = 8  # tests: TACO-verified's least per problem
SHOWN = 8  # pairs named in the error line; every one is in the record file

_SPACE = re.compile(r"\s+")
_LATEX = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"\w+")


class OverlapError(ValueError):
    """Training problems found in an evaluation set."""


@dataclasses.dataclass(frozen=True)
class Problem:
    id: str
    statement: str  # its words, lower case, one space apart ("": no statement)
    tests: frozenset  # hashes of its (input, output) pairs, whitespace collapsed


@dataclasses.dataclass(frozen=True)
class Overlap:
    eval_set: str
    train_id: str
    eval_id: str
    how: str  # "statement", "statement N% alike", "tests", "tests contained", joined by "+"


def normalized(text: str) -> str:
    """Whitespace runs one space, ends stripped, lower case (a test's input or output)."""
    return _SPACE.sub(" ", text).strip().lower()


def statement_words(text: str) -> str:
    return " ".join(_WORD.findall(_LATEX.sub(" ", text.lower())))


def ngrams(statement: str) -> set[int]:
    words = statement.split()
    return {hash(" ".join(words[i : i + NGRAM])) for i in range(len(words) - NGRAM + 1)}


def test_pairs(inputs: list, outputs: list) -> frozenset:
    return frozenset(
        hash((normalized(str(i)), normalized(str(o)))) for i, o in zip(inputs, outputs, strict=True)
    )


def keyed(record: dict, shape: str, path=None, line=None) -> Problem:
    """One record of a ``taco``, ``lcb`` or ``problems`` file (:func:`file_shape`) as shipped."""
    id_field, text_field = {"lcb": ("question_id", "question_content")}.get(shape, ("id", "question"))
    if id_field not in record:
        raise DataError("a problem record needs an id", path=path, line=line, field=id_field)
    text = record.get(text_field)
    if not isinstance(text, str) and (text is not None or shape != "problems"):
        raise DataError("expected a string", path=path, line=line, field=text_field)
    try:
        if shape == "taco":
            tests = test_pairs(*taco.shipped_tests(record, path=path, line=line))
        elif shape == "lcb":
            shipped = livecodebench.shipped_tests(record, path=path, line=line)
            tests = test_pairs([t["input"] for t in shipped], [t["output"] for t in shipped])
        else:
            tests = _record_tests(record)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        if isinstance(e, DataError):
            raise
        field = {"taco": "input_output", "lcb": "public_test_cases"}.get(shape, "test_cases")
        raise DataError(f"not a test-case set ({e})", path=path, line=line, field=field) from e
    return Problem(str(record[id_field]), statement_words(text or ""), tests)


def _record_tests(record: dict) -> frozenset:
    raw = record.get("test_cases")
    if raw is None:
        return frozenset()
    tests = json.loads(raw) if isinstance(raw, str) else raw
    return test_pairs(tests["inputs"], tests["outputs"])


def read_problems(path: str | Path, kept_by_taco_filters: bool = False) -> list[Problem]:
    """Every problem of a file of any shape; with ``kept_by_taco_filters``, of a raw TACO file
    only those ``preproc_taco.py``'s filters keep (in file order, as it splits them)."""
    shape = file_shape(path)
    columns = list(taco.RAW_FIELDS) if shape == "taco" else None  # not the solutions: the bulk
    out = []
    for line, record in iter_local(path, columns=columns):
        if kept_by_taco_filters and shape == "taco":
            try:
                taco.filter_record(record, path=path, line=line)
            except taco.Dropped:
                continue
        out.append(keyed(record, shape, path, line))
    return out


def chain_problems(
    taco_file: str | Path,
    lcb_file: str | Path,
    *,
    taco_dev: str | Path | None = None,
    dev_ratio: float = 0.1,
    max_problems: int | None = None,
    seed: int = 42,
) -> tuple[list[Problem], dict[str, list[Problem]]]:
    """The chain's training problems and its evaluation sets, the very problems
    ``cobalt.recipes.paper.reproduce.problems`` trains on and evaluates, read from the input files as they
    ship (raw TACO-verified: those its filters keep, split with the seed; processed records: split
    the same way, or all trained on with ``taco_dev``; the first ``max_problems`` of each set but
    ``taco_dev``). Reading them costs seconds; no stage has to run first."""
    released = file_shape(taco_file) == "problems"
    problems = read_problems(taco_file, kept_by_taco_filters=True)
    train, dev = (problems, []) if released and taco_dev else taco.split_train_dev(problems, dev_ratio, seed)

    def first(problems: list[Problem]) -> list[Problem]:
        return problems[:max_problems] if max_problems else problems

    evaluations = {
        "TACO-dev": read_problems(taco_dev) if taco_dev else first(dev),
        "LiveCodeBench": first(read_problems(lcb_file)),
    }
    return first(train), evaluations


class _Index:
    """Evaluation problems by statement, statement n-gram and test."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        self.by_statement: dict[str, list[int]] = {}
        self.by_tests: dict[frozenset, list[int]] = {}
        by_gram: dict[int, list[int]] = {}
        self.by_test: dict[int, list[int]] = {}
        self.n_grams = []
        for i, problem in enumerate(problems):
            if problem.statement:
                self.by_statement.setdefault(problem.statement, []).append(i)
            grams = ngrams(problem.statement)
            self.n_grams.append(len(grams))
            for gram in grams:
                by_gram.setdefault(gram, []).append(i)
            if problem.tests:
                self.by_tests.setdefault(problem.tests, []).append(i)
            for test in problem.tests:
                self.by_test.setdefault(test, []).append(i)
        self.by_gram = {gram: ids for gram, ids in by_gram.items() if len(ids) <= COMMON}
        # each set of at least MIN_CONTAINED tests under its rarest test: a training set holding
        # the whole set holds that one
        self.by_rarest: dict[int, list[int]] = {}
        for i, problem in enumerate(problems):
            if len(problem.tests) >= MIN_CONTAINED:
                rarest = min(problem.tests, key=lambda test: len(self.by_test[test]))
                self.by_rarest.setdefault(rarest, []).append(i)

    def matches(self, problem: Problem, grams: set[int]) -> dict[int, list[str]]:
        """Evaluation problem index → how ``problem`` (its statement's n-grams ``grams``) is the
        same problem."""
        hows: dict[int, list[str]] = {}
        for i in self.by_statement.get(problem.statement, []) if problem.statement else []:
            hows.setdefault(i, []).append("statement")
        for i, shared in Counter(i for gram in grams for i in self.by_gram.get(gram, [])).items():
            alike = shared / min(len(grams), self.n_grams[i])
            if alike >= ALIKE and i not in hows:
                hows[i] = [f"statement {alike:.0%} alike"]
        for i in self.by_tests.get(problem.tests, []) if problem.tests else []:
            hows.setdefault(i, []).append("tests")
        for i in self._containing(problem.tests):
            hows.setdefault(i, []).append("tests contained")
        return hows

    def _containing(self, tests: frozenset) -> set[int]:
        """Evaluation problems whose test set holds ``tests``, or is held in it (not equal; the
        smaller of at least MIN_CONTAINED tests)."""
        candidates = {i for test in tests for i in self.by_rarest.get(test, [])}
        if len(tests) >= MIN_CONTAINED:
            candidates |= set(self.by_test.get(min(tests, key=lambda t: len(self.by_test.get(t, []))), []))
        sets = {i: self.problems[i].tests for i in candidates}
        return {i for i, other in sets.items() if other != tests and (tests < other or other < tests)
                and min(len(tests), len(other)) >= MIN_CONTAINED}  # fmt: skip


def find_overlap(train: list[Problem], evaluations: dict[str, list[Problem]]) -> list[Overlap]:
    """Every (evaluation set, training id, evaluation id) pair that is the same problem."""
    indexes = {name: _Index(problems) for name, problems in evaluations.items()}
    found = []
    for problem in train:
        grams = ngrams(problem.statement)
        for name, index in indexes.items():
            for i, hows in index.matches(problem, grams).items():
                found.append(Overlap(name, problem.id, index.problems[i].id, "+".join(hows)))
    return found


def describe(found: list[Overlap], shown: int = SHOWN) -> str:
    """The first ``shown`` pairs, naming the ids on each side, then a count."""
    pairs = [f"{o.eval_set}: train {o.train_id} = {o.eval_id} ({o.how})" for o in found[:shown]]
    more = f"; and {len(found) - shown} more" if len(found) > shown else ""
    return "; ".join(pairs) + more


def refuse_overlap(
    train: list[Problem], evaluations: dict[str, list[Problem]], allow: bool, record: Path, source: object
) -> list[Overlap]:
    """The overlaps, every one written to ``record`` (JSON) first; with any and not ``allow``, an
    :class:`OverlapError` of one line naming ``record``."""
    found = find_overlap(train, evaluations)
    record.write_text(
        json.dumps({"allowed": allow, "overlaps": [dataclasses.asdict(o) for o in found]}, indent=1)
    )
    if found and not allow:
        trained = len({o.train_id for o in found})
        raise OverlapError(
            f"{trained} training problem(s) of {source} are also evaluation problems: {describe(found)} "
            f"(all {len(found)} pair(s) in {record}; remove them from the training file, or pass "
            "--allow-overlap to run anyway)"
        )
    return found
