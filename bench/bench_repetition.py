"""``has_repetitive_pattern`` on a long non-repetitive response versus the reference's regex loop.

.venv/bin/python bench/bench_repetition.py [--chars 24000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cobalt.common.cli import ArgumentParser
from cobalt.reward.repetition import has_repetitive_pattern, naive_has_repetitive_pattern

WORDS = [
    "the",
    "program",
    "reads",
    "n",
    "then",
    "loops",
    "over",
    "the",
    "array",
    "and",
    "keeps",
    "a",
    "running",
    "maximum",
    "wait",
    "however",
    "we",
    "must",
    "check",
    "the",
    "edge",
    "case",
    "when",
    "n",
    "equals",
    "one",
    "so",
    "let",
    "me",
    "verify",
    "with",
    "an",
    "example",
    "def",
    "solve",
    "return",
    "print",
    "input",
    "split",
    "map",
    "int",
    "range",
    "len",
    "sorted",
    "dp",
    "prefix",
    "sum",
]


def response(chars: int, seed: int = 0) -> str:
    """Reasoning-like text with code, no block repeated 8 times in a row."""
    rng = random.Random(seed)
    parts, size = [], 0
    while size < chars:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) + rng.choice(".\n:,")
        parts.append(line + " ")
        size += len(line) + 1
    return "".join(parts)[:chars]


def best_of(fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=24000)
    args = parser.parse_args()
    text = response(args.chars)
    assert has_repetitive_pattern(text) == naive_has_repetitive_pattern(text) is False
    fast = best_of(has_repetitive_pattern, text, 20)
    naive = best_of(naive_has_repetitive_pattern, text, 2)
    print(f"{args.chars} characters: fast {fast * 1000:.2f} ms, reference regex loop {naive * 1000:.0f} ms")
    print(f"speed-up: {naive / fast:.0f}x (goal >= 100x)")


if __name__ == "__main__":
    main()
