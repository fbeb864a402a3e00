"""Procedural problem families: seeded stdin/stdout problems small enough for a 135M model.

    from cobalt.data.procedural import FAMILIES, record, build_splits
    record("list_sum", 12)        # one problem record, id fam-list_sum-000012
    python -m cobalt.data.procedural --out DIR --train N --dev N --heldout N   # the split files

Families are data (``families.py``), instances are made from a seed (``generate.py``), and the
train / dev / held-out / held-out-family files are written by ``splits.py``.
"""

from cobalt.data.procedural.families import FAMILIES, HELDOUT_FAMILIES, IN_FAMILIES, Family
from cobalt.data.procedural.generate import (
    SOURCE,
    parse_id,
    problem,
    problem_id,
    record,
    reference_solution,
    to_record,
)

__all__ = [
    "FAMILIES",
    "HELDOUT_FAMILIES",
    "IN_FAMILIES",
    "SOURCE",
    "Family",
    "parse_id",
    "problem",
    "problem_id",
    "record",
    "reference_solution",
    "to_record",
]
