"""Train / dev / held-out problem files from the procedural families.

Each split draws its seeds from a range of its own (``SPLIT_OFFSETS``), spreads its instances
evenly over its families, and skips an instance whose statement or tests an earlier instance
already has, so the splits are disjoint by seed, by statement text and by test set; the
held-out families (``HELDOUT_FAMILIES`` unless the caller names others) appear only in
``heldout_families.jsonl``.
:func:`check_disjoint` checks all of this on the records themselves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cobalt.common.jsonl import atomic_output, write_jsonl
from cobalt.data.procedural.families import FAMILIES, HELDOUT_FAMILIES
from cobalt.data.procedural.generate import parse_id, problem, reference_solution, to_record

SPLITS = ("train", "dev", "heldout", "heldout_families")
SPLIT_OFFSETS = {"train": 0, "dev": 200_000, "heldout": 400_000, "heldout_families": 600_000}
SEEDS_PER_SPLIT = 200_000  # per family; a split's seeds never reach the next split's
SEED_STRIDE = 1_000_000  # --seed S moves every range by S * SEED_STRIDE
MANIFEST = "manifest.json"
SOLUTIONS = "solutions.jsonl"  # {id, split, solutions}: for the SFT warm-up's --solutions
MAX_MISSES = 2000  # seeds in a row that repeat earlier instances: the family is used up


def held_out(names=None) -> tuple[str, ...]:
    """The held-out families: ``names`` (checked), or ``HELDOUT_FAMILIES`` when None."""
    if names is None:
        return HELDOUT_FAMILIES
    names = tuple(names)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ValueError(f"held-out families: unknown {', '.join(unknown)}; known: {', '.join(FAMILIES)}")
    if not names or len(set(names)) != len(names) or len(names) >= len(FAMILIES):
        raise ValueError(
            f"held-out families: {list(names)}; expected distinct families, at least one left to train"
        )
    return names


def split_families(split: str, heldout: tuple[str, ...] = HELDOUT_FAMILIES) -> tuple[str, ...]:
    """The families a split draws from: the held-out ones, or every other family in FAMILIES' order."""
    if split == "heldout_families":
        return heldout
    return tuple(name for name in FAMILIES if name not in heldout)


def build_splits(
    counts: dict[str, int], seed: int = 0, progress: bool = False, heldout_names=None
) -> dict[str, list[dict]]:
    """``{split: [problem record]}`` with ``counts[split]`` records for each split of ``SPLITS``
    named in ``counts``, the families ``heldout_names`` held out (default ``HELDOUT_FAMILIES``);
    the same arguments give the same records."""
    unknown = set(counts) - set(SPLITS)
    if unknown:
        raise ValueError(f"unknown split(s) {', '.join(sorted(unknown))}; known: {', '.join(SPLITS)}")
    heldout = held_out(heldout_names)
    seen: set[str] = set()  # statements and test sets of every instance so far
    bar = _bar(sum(counts.values()), progress)
    out = {}
    for split in (s for s in SPLITS if s in counts):
        out[split] = _split(split_families(split, heldout), split, counts[split], seed, seen, bar)
    bar.close()
    return out


def _split(families: tuple[str, ...], split: str, count: int, seed: int, seen: set, bar) -> list[dict]:
    start = seed * SEED_STRIDE + SPLIT_OFFSETS[split]
    next_seed = dict.fromkeys(families, start)
    records = []
    for i in range(count):
        name = families[i % len(families)]
        records.append(_next_instance(name, next_seed, start, seen))
        bar.update(1)
    return records


def _next_instance(name: str, next_seed: dict, start: int, seen: set) -> dict:
    """The record of the family's next seed whose statement and tests are new."""
    misses = 0
    while misses < MAX_MISSES and next_seed[name] < start + SEEDS_PER_SPLIT:
        s = next_seed[name]
        next_seed[name] += 1
        try:
            record = to_record(problem(name, s))
        except ValueError:  # too few distinct tests for this seed
            misses += 1
            continue
        keys = (record["question"], record["test_cases"])
        if not seen.intersection(keys):
            seen.update(keys)
            return record
        misses += 1
    raise ValueError(
        f"family {name} has no new instances left ({misses} seeds in a row repeat earlier ones, "
        f"next seed {next_seed[name]}); ask for fewer problems"
    )


def check_disjoint(splits: dict[str, list[dict]], heldout_names=None) -> None:
    """ValueError unless no seed, id, statement or test set occurs twice across (or within) the
    splits and the held-out families occur only in ``heldout_families``."""
    for field in ("id", "question", "test_cases"):
        owner: dict[str, str] = {}
        for split, records in splits.items():
            for r in records:
                if r[field] in owner:
                    raise ValueError(f"{r['id']} ({split}): same {field} as an instance in {owner[r[field]]}")
                owner[r[field]] = split
    for split, records in splits.items():
        allowed = set(split_families(split, held_out(heldout_names)))
        for r in records:
            name, s = parse_id(r["id"])
            if name not in allowed:
                raise ValueError(f"{r['id']}: family {name} does not belong in {split}")
            if not 0 <= s % SEED_STRIDE - SPLIT_OFFSETS[split] < SEEDS_PER_SPLIT:
                raise ValueError(f"{r['id']}: seed {s} is outside the seed range of {split}")


def write_splits(
    out_dir: str | os.PathLike,
    counts: dict[str, int],
    seed: int = 0,
    overwrite: bool = False,
    progress=False,
    heldout_names=None,
) -> dict[Path, int]:
    """Write ``<split>.jsonl`` for each split of ``counts``, ``solutions.jsonl`` (each problem's
    reference solution) and ``manifest.json`` (the settings and families) into ``out_dir``;
    returns path → records written. Refuses (FileExistsError, nothing written) if any of them
    exists, unless ``overwrite``."""
    out_dir = Path(out_dir)
    targets = {split: out_dir / f"{split}.jsonl" for split in SPLITS if split in counts}
    existing = [str(p) for p in [*targets.values(), out_dir / SOLUTIONS, out_dir / MANIFEST] if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"{', '.join(existing)} already exist(s); pass --overwrite to replace")
    heldout = held_out(heldout_names)
    splits = build_splits(counts, seed, progress, heldout)
    check_disjoint(splits, heldout)
    written = {
        targets[s]: write_jsonl(targets[s], records, overwrite=overwrite) for s, records in splits.items()
    }
    solutions = (
        {"id": r["id"], "split": s, "solutions": [reference_solution(r["id"])]}
        for s, records in splits.items()
        for r in records
    )
    written[out_dir / SOLUTIONS] = write_jsonl(out_dir / SOLUTIONS, solutions, overwrite=overwrite)
    manifest = {
        "seed": seed,
        "counts": {s: len(r) for s, r in splits.items()},
        "families": list(split_families("train", heldout)),
        "heldout_families": list(heldout),
        "seed_ranges": {
            s: [
                seed * SEED_STRIDE + SPLIT_OFFSETS[s],
                seed * SEED_STRIDE + SPLIT_OFFSETS[s] + SEEDS_PER_SPLIT,
            ]
            for s in splits
        },
    }
    with atomic_output(out_dir / MANIFEST, overwrite=overwrite) as tmp:
        tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    return written


def _bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc="procedural problems", unit="problem", disable=not enabled)
