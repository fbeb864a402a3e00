#!/usr/bin/env python3
"""TACO-verified → filtered problem records, split into train and dev (reference §6)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

import os

from cobalt.common.argtypes import fraction, non_negative_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.jsonl import write_jsonl
from cobalt.data import cli, taco
from cobalt.data.sources import iter_records

OUTPUT_NAMES = {
    "all": "taco_verified_filtered.jsonl",
    "train": "taco_verified_filtered_train.jsonl",
    "dev": "taco_verified_filtered_dev.jsonl",
}


def parse_args():
    p = ArgumentParser(description=__doc__)
    p.add_argument(
        "--input-file",
        default="likaixin/TACO-verified",
        help="a local file (taco_verified.json as it ships, a JSON array; or JSONL, parquet), or a dataset name on the hub (needs network)",
    )
    p.add_argument("--split", default="train", help="hub split to read")
    p.add_argument("--output-dir", default="data", help="where the three JSONL files are written")
    p.add_argument(
        "--drop-unsolved",
        action="store_true",
        help="drop problems that no reference solution passes (the reference keeps them)",
    )
    p.add_argument("--dev-ratio", type=fraction, default=0.1, help="fraction of problems for dev")
    p.add_argument(
        "--num-public",
        type=non_negative_int,
        default=taco.NUM_PUBLIC,
        help="the first N selected tests become public_test_cases, the rest hidden",
    )
    p.add_argument("--seed", type=int, default=42)
    cli.add_evaluator(p, allow_none=True)
    cli.add_overwrite(p)
    args = p.parse_args()
    if args.drop_unsolved and args.evaluator == "none":
        p.error("--drop-unsolved needs an evaluator to run the reference solutions")
    return args


def main():
    args = parse_args()
    outputs = {k: os.path.join(args.output_dir, name) for k, name in OUTPUT_NAMES.items()}
    cli.refuse_existing(outputs.values(), args.overwrite)
    records = iter_records(args.input_file, split=args.split)
    problems, train, dev, summary = taco.preprocess_taco(
        records,
        evaluator=cli.make_evaluator(args.evaluator),
        drop_unsolved=args.drop_unsolved,
        seed=args.seed,
        dev_ratio=args.dev_ratio,
        path=args.input_file,
        num_public=args.num_public,
    )
    write_jsonl(outputs["all"], problems, args.overwrite)
    write_jsonl(outputs["train"], train, args.overwrite)
    write_jsonl(outputs["dev"], dev, args.overwrite)
    print("\n".join(summary.lines()))
    print(f"wrote {', '.join(outputs.values())}")


if __name__ == "__main__":
    cli.run(main)
