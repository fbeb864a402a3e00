"""The paper chain's decontamination check at TACO-verified's size: seconds before the first stage.

    .venv/bin/python bench/bench_overlap.py [--train 10000] [--eval 1000] [--words 300]

Writes a raw TACO-verified file of ``--train`` problems and a LiveCodeBench file of ``--eval``
(statements of ``--words`` words drawn from a 5,000-word Zipf vocabulary, each with two shared
boilerplate sentences; 20 tests each, 30 for LiveCodeBench), 10 LiveCodeBench problems planted in
the TACO file (5 statements with other sample sections, 5 reworded with every test), then times
``chain_problems`` (reading both files as the chain does) and ``find_overlap``. Baseline: the
same check with whole statements and test sets only (no 13-gram rule), on the same problems.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from cobalt.common.cli import ArgumentParser
from cobalt.data import overlap
from cobalt.data.embedded.problems import encode_private_tests

BOILERPLATE = (
    "The first line of the input contains a single integer t the number of test cases.",
    "It is guaranteed that the sum of n over all test cases does not exceed two hundred thousand.",
)


def statement(rng: random.Random, vocabulary: list[str], weights: list[float], words: int) -> str:
    body = rng.choices(vocabulary, weights, k=words)
    return (
        f"{' '.join(body[: words // 2])}\n\n{BOILERPLATE[0]} {' '.join(body[words // 2 :])} {BOILERPLATE[1]}"
    )


def tests(rng: random.Random, n: int) -> dict:
    inputs = [f"{rng.randrange(10**6)} {rng.randrange(10**6)}\n" for _ in range(n)]
    return {"inputs": inputs, "outputs": [f"{rng.randrange(10**6)}\n" for _ in range(n)]}


def write_files(out: Path, n_train: int, n_eval: int, words: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(5000)]
    weights = [1 / (i + 1) for i in range(5000)]
    lcb = []
    for i in range(n_eval):
        shipped = tests(rng, 30)
        public = [{"input": x, "output": y} for x, y in zip(shipped["inputs"][:1], shipped["outputs"][:1])]
        private = [{"input": x, "output": y} for x, y in zip(shipped["inputs"][1:], shipped["outputs"][1:])]
        lcb.append({"question_id": f"lcb-{i}", "question_content": statement(rng, vocabulary, weights, words)
                    + "\n\nSample Input 1\n\n3 4\n\nSample Output 1\n\n7", "public_test_cases": json.dumps(public),
                    "private_test_cases": encode_private_tests(private), "shipped": shipped})  # fmt: skip
    taco = []
    for i in range(n_train):
        question, shipped = statement(rng, vocabulary, weights, words), tests(rng, 20)
        if i < 5:  # another sample section
            question = lcb[i]["question_content"].split("Sample Input 1")[0] + "\n-----Example-----\n1 1\n2"
        elif i < 10:  # reworded, every shipped test
            shipped = lcb[i]["shipped"]
        taco.append(
            {"id": f"taco-{i}", "question": question, "solutions": "[]", "input_output": json.dumps(shipped)}
        )
    for row in lcb:
        del row["shipped"]
    for name, rows in (("taco.jsonl", taco), ("test6.jsonl", lcb)):
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def main(argv=None) -> dict:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", type=int, default=10_000, help="TACO-verified problems (train and dev)")
    p.add_argument("--eval", type=int, default=1_000, help="LiveCodeBench problems")
    p.add_argument("--words", type=int, default=300, help="words per statement")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        write_files(Path(tmp), args.train, args.eval, args.words)
        started = time.perf_counter()
        train, evaluations = overlap.chain_problems(Path(tmp) / "taco.jsonl", Path(tmp) / "test6.jsonl")
        read = time.perf_counter() - started
    started = time.perf_counter()
    found = overlap.find_overlap(train, evaluations)
    check = time.perf_counter() - started
    planted = {f"taco-{i}" for i in range(10)}
    trained = len(planted & {problem.id for problem in train})
    caught = len(planted & {o.train_id for o in found if o.eval_set == "LiveCodeBench"})
    ngram = overlap.NGRAM
    overlap.NGRAM = 10**9  # no statement has an n-gram: whole statements and test sets only
    started = time.perf_counter()
    exact = overlap.find_overlap(train, evaluations)
    baseline = time.perf_counter() - started
    overlap.NGRAM = ngram
    result = {"train": len(train), "evaluated": {k: len(v) for k, v in evaluations.items()},
              "read_s": round(read, 2), "check_s": round(check, 2), "exact_only_s": round(baseline, 2),
              "planted_trained": trained, "planted_found": caught, "found": len(found), "exact_only_found": len(exact)}  # fmt: skip
    print(json.dumps(result))
    print(f"decontamination of {len(train):,} training problems against {sum(result['evaluated'].values()):,}: "
          f"read {read:.1f} s + check {check:.1f} s (exact-only baseline {baseline:.1f} s, "
          f"{check / baseline:.1f}x); planted problems found {caught} of the {trained} trained on "
          f"(pairs: {len(found)}, {len(exact)} without the 13-gram rule)")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
