"""TACO-verified → filtered problem records (reference §6).

Raw fields: ``id, question, solutions, input_output, source, difficulty``. A problem is dropped
when it has fewer than 8 tests, non-list or unequal inputs/outputs, non-string items (after list
items are joined with spaces), a question that mentions an image, or fewer than 100 alphanumeric
characters. More than 20 tests: order by input length, keep the 5 shortest and the 15 longest.

Reference solutions (up to 16, shuffled with the seed) are run until one passes every test. The
reference never drops a problem that none passes (**quirk**); ``drop_unsolved`` does, and the
count is reported either way.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from dataclasses import dataclass, field

from tqdm import tqdm

from cobalt.common.errors import DataError
from cobalt.common.prompts import build_instruction
from cobalt.common.testcases import dump_test_cases, failure_result, pass_rate

MIN_TESTS = 8
MAX_TESTS = 20
MIN_ALNUM_CHARS = 100
MAX_SOLUTIONS = 16
NUM_PUBLIC = 4
RAW_FIELDS = ("id", "question", "input_output")


class Dropped(Exception):
    """A raw problem that the filters reject; the message is the reason (counted in the summary)."""


@dataclass
class TacoSummary:
    read: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    checked: int = 0
    unsolved: int = 0
    unsolved_dropped: int = 0
    train: int = 0
    dev: int = 0

    def lines(self) -> list[str]:
        out = [f"read {self.read} raw problems, kept {self.kept} after the filters"]
        out += [f"  dropped {n}: {reason}" for reason, n in sorted(self.dropped.items())]
        out.append(
            f"reference solutions checked on {self.checked} problems: {self.unsolved} "
            f"unsolved ({self.unsolved_dropped} dropped)"
        )
        out.append(f"split: {self.train} train, {self.dev} dev")
        return out


def _as_string(item):
    return " ".join(map(str, item)) if isinstance(item, list) else item


def normalize_tests(input_output: dict) -> tuple[list[str], list[str]]:
    """String inputs/outputs of a raw test set, or :class:`Dropped`."""
    inputs, outputs = input_output.get("inputs"), input_output.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise Dropped("inputs/outputs are not lists")
    if len(inputs) < MIN_TESTS:
        raise Dropped(f"fewer than {MIN_TESTS} tests")
    if len(inputs) != len(outputs):
        raise Dropped("unequal numbers of inputs and outputs")
    inputs, outputs = [_as_string(x) for x in inputs], [_as_string(x) for x in outputs]
    if not all(isinstance(x, str) for x in inputs + outputs):
        raise Dropped("non-string test items")
    return inputs, outputs


def check_question(question: str) -> None:
    if "image" in question.lower() or "\n![" in question:
        raise Dropped("question mentions an image")
    if sum(1 for c in question if c.isalnum()) < MIN_ALNUM_CHARS:
        raise Dropped(f"question has fewer than {MIN_ALNUM_CHARS} alphanumeric characters")


def select_tests(
    inputs: list[str], outputs: list[str], max_tests: int = MAX_TESTS
) -> tuple[list[str], list[str]]:
    """Over ``max_tests``: the quarter shortest then the rest longest, as the reference orders them."""
    if len(inputs) <= max_tests:
        return inputs, outputs
    longest_first = sorted(range(len(inputs)), key=lambda i: len(inputs[i]), reverse=True)
    n_short = max_tests // 4
    chosen = longest_first[-n_short:] + longest_first[: max_tests - n_short]
    return [inputs[i] for i in chosen], [outputs[i] for i in chosen]


def call_expression(input_output: dict, source: object) -> str:
    """How a call-based problem is invoked: ``Solution().name`` for LeetCode, else ``name``."""
    name = input_output.get("fn_name") or ""
    return f"Solution().{name}" if name and source == "leetcode" else name


def _decode(value, what: str, path, line):
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise DataError(f"not valid JSON ({e.msg})", path=path, line=line, field=what) from None


def shipped_tests(raw: dict, *, path=None, line=None) -> tuple[list, list]:
    """Every test of a raw record as the dataset ships it (list items joined as the filters join them)."""
    input_output = _decode(raw["input_output"], "input_output", path, line)
    inputs, outputs = input_output.get("inputs") or [], input_output.get("outputs") or []
    return [_as_string(x) for x in inputs], [_as_string(x) for x in outputs]


def filter_record(raw: dict, *, path=None, line=None, num_public: int = NUM_PUBLIC) -> dict:
    """One raw TACO record → a problem record, or :class:`Dropped` with the reason."""
    for name in RAW_FIELDS:
        if name not in raw:
            raise DataError("missing", path=path, line=line, field=name)
    if not isinstance(raw["question"], str):
        raise DataError("expected a string", path=path, line=line, field="question")
    input_output = _decode(raw["input_output"], "input_output", path, line)
    if not isinstance(input_output, dict):
        raise Dropped("input_output is not an object")
    inputs, outputs = normalize_tests(input_output)
    check_question(raw["question"])
    inputs, outputs = select_tests(inputs, outputs)
    fn_name = call_expression(input_output, raw.get("source"))
    question = raw["question"].strip()
    leetcode_name = input_output.get("fn_name") if raw.get("source") == "leetcode" else None
    return {
        "id": raw["id"],
        "difficulty": raw.get("difficulty"),
        "question": question,
        "instruction": build_instruction(question, fn_name=leetcode_name),
        "test_cases": dump_test_cases(inputs, outputs),
        "public_test_cases": dump_test_cases(inputs[:num_public], outputs[:num_public]),
        "hidden_test_cases": dump_test_cases(inputs[num_public:], outputs[num_public:]),
        "fn_name": fn_name,
    }


def candidate_solutions(raw: dict, seed: int, *, path=None, line=None) -> list[str]:
    """Up to 16 reference solutions, shuffled with a per-problem generator derived from ``seed``."""
    solutions = _decode(raw.get("solutions") or [], "solutions", path, line)
    if not isinstance(solutions, list) or not all(isinstance(s, str) for s in solutions):
        raise DataError("expected a list of strings", path=path, line=line, field="solutions")
    solutions = list(solutions)
    random.Random(f"{seed}:{raw['id']}").shuffle(solutions)
    return solutions[:MAX_SOLUTIONS]


def solution_program(code: str, fn_name: str) -> str:
    program = code.strip()
    return program + f"\nprint({fn_name}(*input().split()))" if fn_name else program


async def any_solution_passes(
    evaluator, solutions: list[str], problem: dict, semaphore: asyncio.Semaphore, timeout: float = 30.0
) -> bool:
    """Run the solutions one after another until one passes every test (as the reference)."""
    for code in solutions:
        async with semaphore:
            try:
                result = await asyncio.wait_for(
                    evaluator.evaluate(solution_program(code, problem["fn_name"]), problem["test_cases"]),
                    timeout=timeout,
                )
            except Exception:  # timeout or evaluator failure: this solution does not count
                result = failure_result("Execution error.")
        if pass_rate(result) == 1.0:
            return True
    return False


async def find_solved(
    evaluator, problems: list[dict], solutions: list[list[str]], concurrency: int = 64
) -> list[bool]:
    """For each problem, whether some reference solution passes all its tests."""
    semaphore = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(problems), desc="checking reference solutions", unit="problem")

    async def check(problem, sols):
        try:
            return await any_solution_passes(evaluator, sols, problem, semaphore)
        finally:
            bar.update(1)

    try:
        return list(await asyncio.gather(*(check(p, s) for p, s in zip(problems, solutions))))
    finally:
        bar.close()


def split_train_dev(problems: list[dict], dev_ratio: float, seed: int) -> tuple[list, list]:
    """Shuffle with ``seed``; the first ``round(n * dev_ratio)`` are dev, the rest train."""
    order = list(problems)
    random.Random(seed).shuffle(order)
    n_dev = round(len(order) * dev_ratio)
    return order[n_dev:], order[:n_dev]


def filter_all(
    records, summary: TacoSummary, seed: int, *, path=None, num_public: int = NUM_PUBLIC
) -> tuple[list[dict], list[list[str]]]:
    """Apply the filters to ``(line, raw)`` pairs; returns the problems and their solutions."""
    problems, solutions = [], []
    for line, raw in tqdm(records, desc="filtering TACO", unit="problem"):
        summary.read += 1
        try:
            problem = filter_record(raw, path=path, line=line, num_public=num_public)
        except Dropped as reason:
            summary.dropped[str(reason)] += 1
            continue
        problems.append(problem)
        solutions.append(candidate_solutions(raw, seed, path=path, line=line))
    summary.kept = len(problems)
    return problems, solutions


def preprocess_taco(
    records,
    *,
    evaluator=None,
    drop_unsolved: bool = False,
    seed: int = 42,
    dev_ratio: float = 0.1,
    path=None,
    num_public: int = NUM_PUBLIC,
) -> tuple[list, list, list, TacoSummary]:
    """Raw ``(line, record)`` pairs → ``(problems, train, dev, summary)``; ``problems`` in input
    order. Without an evaluator the reference solutions are not run."""
    if drop_unsolved and evaluator is None:
        raise ValueError("drop_unsolved needs an evaluator to run the reference solutions")
    summary = TacoSummary()
    problems, solutions = filter_all(records, summary, seed, path=path, num_public=num_public)
    if evaluator is not None:
        solved = asyncio.run(find_solved(evaluator, problems, solutions))
        summary.checked, summary.unsolved = len(problems), solved.count(False)
        if drop_unsolved:
            problems = [p for p, ok in zip(problems, solved) if ok]
            summary.unsolved_dropped = summary.unsolved
    train, dev = split_train_dev(problems, dev_ratio, seed)
    summary.train, summary.dev = len(train), len(dev)
    return problems, train, dev, summary
