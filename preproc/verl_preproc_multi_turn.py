"""Bandit prompts (process_multi_turn_taco output) → veRL train.parquet / test.parquet (reference §1)."""

import argparse

from cobalt.data import cli
from cobalt.data.verl_rows import convert


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--local_dir", required=True, help="the save directory for the parquet files")
    p.add_argument("--train_data_file", default="data/taco_verified_filtered_train.jsonl")
    p.add_argument("--val_data_file", default="data/taco_verified_filtered_dev.jsonl")
    cli.add_overwrite(p)
    return p.parse_args()


def main():
    args = parse_args()
    counts = convert(args.train_data_file, args.val_data_file, args.local_dir,
                     multi_turn=True, overwrite=args.overwrite)
    print(f"wrote {counts['train']} train and {counts['test']} test rows to {args.local_dir}")


if __name__ == "__main__":
    cli.run(main)
