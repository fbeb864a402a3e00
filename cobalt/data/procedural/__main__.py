"""``python -m cobalt.data.procedural --out DIR --train N --dev N --heldout N [--seed S]``: write
procedural problems as train / dev / held-out problem records (JSONL)."""

from __future__ import annotations

import argparse
import sys

from cobalt.common.cli import ArgumentParser
from cobalt.data.procedural.families import FAMILIES, HELDOUT_FAMILIES
from cobalt.data.procedural.splits import MANIFEST, SOLUTIONS, held_out, write_splits


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0, got {value}")
    return value


def family_names(text: str) -> tuple[str, ...]:
    try:
        return held_out(name.strip() for name in text.split(",") if name.strip())
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="python -m cobalt.data.procedural",
        description=f"Write seeded problems of the {len(FAMILIES)} procedural families as problem records: "
        "DIR/train.jsonl, dev.jsonl and heldout.jsonl (disjoint by seed, statement and tests), and "
        "heldout_families.jsonl with the families kept out of the other files (by default "
        f"{', '.join(HELDOUT_FAMILIES)}); DIR/{SOLUTIONS} holds the reference solutions (for "
        f"python -m cobalt.train.sft --solutions) and DIR/{MANIFEST} the settings.",
    )
    parser.add_argument("--out", required=True, help="output directory (created if missing)")
    parser.add_argument("--train", type=count, required=True, help="training problems")
    parser.add_argument("--dev", type=count, required=True, help="dev problems")
    parser.add_argument(
        "--heldout", type=count, required=True, help="held-out problems of the training families"
    )
    parser.add_argument(
        "--heldout-families", type=count, help="problems of the held-out families (default: as --heldout)"
    )
    parser.add_argument(
        "--heldout-family-names",
        type=family_names,
        default=None,
        help="comma-separated families to hold out instead of the default six",
    )
    parser.add_argument(
        "--seed", type=count, default=0, help="another seed gives other instances (default 0)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace existing output files")
    args = parser.parse_args(argv)
    counts = {
        "train": args.train,
        "dev": args.dev,
        "heldout": args.heldout,
        "heldout_families": args.heldout if args.heldout_families is None else args.heldout_families,
    }
    try:
        written = write_splits(
            args.out,
            counts,
            args.seed,
            args.overwrite,
            progress=True,
            heldout_names=args.heldout_family_names,
        )
    except (FileExistsError, NotADirectoryError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path, n in written.items():
        print(f"wrote {n} {'solutions' if path.name == SOLUTIONS else 'problems'} to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
