#!/usr/bin/env python3
"""Perturb the public tests of a problem file: swap the outputs of two of them (§6)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()


from cobalt.common.cli import ArgumentParser
from cobalt.common.jsonl import write_jsonl
from cobalt.data import cli
from cobalt.data.perturb import perturb_records
from cobalt.data.sources import iter_local


def parse_args():
    p = ArgumentParser(description=__doc__)
    p.add_argument("--input-file", "-i", required=True, help="problems with public_test_cases")
    p.add_argument("--output-file", "-o", required=True)
    p.add_argument(
        "--seed", type=int, default=42, help="shuffle seed (the reference does not seed its shuffle)"
    )
    cli.add_overwrite(p)
    return p.parse_args()


def main():
    args = parse_args()
    cli.refuse_existing([args.output_file], args.overwrite)
    records, skipped = perturb_records(iter_local(args.input_file), seed=args.seed, path=args.input_file)
    write_jsonl(args.output_file, records, args.overwrite)
    print(
        f"perturbed {len(records)} problems, skipped {skipped} with fewer than 2 distinct "
        f"public outputs → {args.output_file}"
    )


if __name__ == "__main__":
    cli.run(main)
