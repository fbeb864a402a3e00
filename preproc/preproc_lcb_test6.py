#!/usr/bin/env python3
"""LiveCodeBench test6.jsonl → problem records with public, hidden and combined tests (§6)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

from tqdm import tqdm

from cobalt.common.argtypes import non_negative_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.jsonl import write_jsonl
from cobalt.data import cli, livecodebench
from cobalt.data.sources import iter_local


def parse_args():
    p = ArgumentParser(description=__doc__)
    p.add_argument("--input-file", default="test6.jsonl", help="LiveCodeBench test6.jsonl (local)")
    p.add_argument("--output-file", default="data/lcb_v6.jsonl")
    p.add_argument(
        "--max-hidden",
        type=non_negative_int,
        default=livecodebench.MAX_HIDDEN,
        help="over this many hidden tests keep the 4 shortest and 16 longest (0: keep all)",
    )
    cli.add_overwrite(p)
    return p.parse_args()


def main():
    args = parse_args()
    cli.refuse_existing([args.output_file], args.overwrite)
    records = [
        livecodebench.convert_record(raw, path=args.input_file, line=line, max_hidden=args.max_hidden)
        for line, raw in tqdm(iter_local(args.input_file), desc="decoding LiveCodeBench")
    ]
    n = write_jsonl(args.output_file, records, args.overwrite)
    print(f"Processed {n} problems → {args.output_file}")


if __name__ == "__main__":
    cli.run(main)
