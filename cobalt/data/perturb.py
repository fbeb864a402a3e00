"""Perturbed public tests for the in-context reward-hacking study (reference §6).

Shuffle the public ``(input, output)`` pairs; keep the first pair of each distinct stripped
output (the later ones are "duplicates"); skip a problem with fewer than 2 distinct outputs;
swap the outputs of the first two kept pairs. ``modified_test_cases`` are those two wrong pairs;
``perturbed_public_test_cases`` = the two swapped pairs + the other kept pairs + the duplicates.
The reference shuffles unseeded (**quirk**); here one generator seeded with ``seed`` is used for
the whole file, in record order.
"""

from __future__ import annotations

import random

from cobalt.common.errors import DataError
from cobalt.common.testcases import dump_test_cases, parse_test_cases


def perturb_tests(public: dict, rng: random.Random) -> tuple[str, str] | None:
    """``(modified_test_cases, perturbed_public_test_cases)`` JSON strings, or None to skip."""
    pairs = list(zip(public["inputs"], public["outputs"]))
    rng.shuffle(pairs)
    seen, kept, duplicates = set(), [], []
    for inp, out in pairs:
        if out.strip() in seen:
            duplicates.append((inp, out))
        else:
            seen.add(out.strip())
            kept.append((inp, out))
    if len(kept) < 2:
        return None
    (in0, out0), (in1, out1) = kept[0], kept[1]
    swapped = [(in0, out1), (in1, out0)]
    final = swapped + kept[2:] + duplicates
    return (dump_test_cases(*_columns(swapped)), dump_test_cases(*_columns(final)))


def _columns(pairs):
    return [p[0] for p in pairs], [p[1] for p in pairs]


def perturb_records(records, seed: int = 42, *, path=None) -> tuple[list[dict], int]:
    """``(line, record)`` pairs → (perturbed records, number skipped)."""
    rng = random.Random(seed)
    out, skipped = [], 0
    for line, record in records:
        if "public_test_cases" not in record:
            raise DataError("missing", path=path, line=line, field="public_test_cases")
        public = parse_test_cases(
            record["public_test_cases"], path=path, line=line, field="public_test_cases", allow_empty=True
        )
        perturbed = perturb_tests(public, rng)
        if perturbed is None:
            skipped += 1
            continue
        out.append(
            {**record, "modified_test_cases": perturbed[0], "perturbed_public_test_cases": perturbed[1]}
        )
    return out, skipped
