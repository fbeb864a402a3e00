#!/usr/bin/env python3
"""Trajectories → one-step bandit prompts: dynamic sampling, max-variance down-sampling, turn
cuts and the prompt-length limit (reference §7)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

from tqdm import tqdm

from cobalt.common.argtypes import positive_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.jsonl import write_jsonl
from cobalt.data import bandit, cli
from cobalt.data.tokens import load_tokenizer, prompt_token_counter
from cobalt.data.trajectories import read_trajectories


def parse_args():
    p = ArgumentParser(description=__doc__)
    p.add_argument(
        "--input-file",
        "-i",
        required=True,
        help="trajectories with all_pass_rates (multi-turn inference + evaluation)",
    )
    p.add_argument("--output-file", "-o", required=True)
    p.add_argument(
        "--model-name",
        default="Qwen/Qwen3-8B",
        help="hub name or local directory of the tokenizer used for the length limit",
    )
    p.add_argument(
        "--is-test",
        action="store_true",
        help="validation data: one lowest-spread conversation per problem, cut to 8 messages",
    )
    p.add_argument("--seed", type=int, default=bandit.SHUFFLE_SEED, help="shuffle seed")
    p.add_argument(
        "--num-turns",
        type=positive_int,
        default=bandit.NUM_TURNS,
        help="cuts after 4, 6, ... 2 + 2*num_turns messages",
    )
    p.add_argument("--max-prompt-tokens", type=positive_int, default=bandit.MAX_PROMPT_TOKENS)
    p.add_argument(
        "--actual-public-count",
        action="store_true",
        help="weight public pass rates by the real number of public tests instead of "
        "the reference's assumed 4 (quirk)",
    )
    p.add_argument(
        "--strict-subset-size",
        action="store_true",
        help="with more than 16 candidate conversations consider only the 16 lowest "
        "(the reference's slice can keep more than 4; quirk)",
    )
    cli.add_overwrite(p)
    return p.parse_args()


def main():
    args = parse_args()
    cli.refuse_existing([args.output_file], args.overwrite)
    count_tokens = prompt_token_counter(load_tokenizer(args.model_name))
    opts = bandit.BanditOptions(
        is_test=args.is_test,
        num_turns=args.num_turns,
        max_prompt_tokens=args.max_prompt_tokens,
        seed=args.seed,
        actual_public_count=args.actual_public_count,
        strict_subset_size=args.strict_subset_size,
    )
    records = (
        r
        for _, r in tqdm(
            read_trajectories(args.input_file, need_hidden=True), desc="cutting trajectories", unit="problem"
        )
    )
    prompts, counts = bandit.build_bandit_prompts(records, count_tokens, opts)
    print("\n".join(counts.lines()))
    write_jsonl(args.output_file, prompts, args.overwrite)


if __name__ == "__main__":
    cli.run(main)
