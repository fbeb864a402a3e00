"""The whole data chain on the embedded problem set, in one command (for the CPU smoke runs):

    python -m cobalt.data.demo --out data/demo        # → data/demo/train.parquet, test.parquet

raw (TACO shape) → preprocessed problems (train/dev) → synthetic trajectories on the real
evaluator → bandit prompts (train: max-variance, dev: ``--is_test``) → veRL parquet. The
single-turn parquet files are written too (``single_turn/``). Without ``--model_name`` a tiny
offline tokenizer is built for the 10,000-token limit.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from cobalt.argtypes import fraction, positive_int
from cobalt.data import bandit, cli, taco
from cobalt.data.sources import iter_local
from cobalt.data.synthetic import SyntheticOptions, generate
from cobalt.data.tokens import build_tiny_tokenizer, load_tokenizer, prompt_token_counter
from cobalt.data.verl_rows import convert
from cobalt.jsonl import write_jsonl

FILES = {
    "problems_train": "problems/train.jsonl",
    "problems_dev": "problems/dev.jsonl",
    "traj_train": "trajectories/train.jsonl",
    "traj_dev": "trajectories/dev.jsonl",
    "bandit_train": "bandit/train.jsonl",
    "bandit_test": "bandit/test.jsonl",
    "train": "train.parquet",
    "test": "test.parquet",
    "single_train": "single_turn/train.parquet",
    "single_test": "single_turn/test.parquet",
}


def embedded_raw(out: Path, limit: int | None) -> tuple[Path, dict]:
    """Write the embedded problems as raw TACO rows; returns the file and id → programs."""
    from cobalt.data.embedded import load_problems, to_taco_records

    problems = load_problems()[:limit] if limit else load_problems()
    path = out / "raw" / "taco_embedded.jsonl"
    write_jsonl(path, to_taco_records(problems), overwrite=True)
    programs = {p["id"]: (p["solutions"], [w["code"] for w in p["wrong_solutions"]]) for p in problems}
    return path, programs


def build_demo(
    out,
    *,
    model_name=None,
    evaluator_kind: str = "local",
    limit: int | None = None,
    seed: int = 42,
    dev_ratio: float = 0.2,
    overwrite: bool = False,
    synthetic: SyntheticOptions | None = None,
) -> dict:
    out = Path(out)
    paths = {k: out / v for k, v in FILES.items()}
    cli.refuse_existing(paths.values(), overwrite)
    evaluator = cli.make_evaluator(evaluator_kind)
    raw_path, programs = embedded_raw(out, limit)
    _, train, dev, summary = taco.preprocess_taco(
        iter_local(raw_path), evaluator=evaluator, seed=seed, dev_ratio=dev_ratio, path=raw_path
    )
    print("\n".join(summary.lines()))
    write_jsonl(paths["problems_train"], train, overwrite=True)
    write_jsonl(paths["problems_dev"], dev, overwrite=True)

    synthetic = synthetic or SyntheticOptions(seed=seed)
    for split, problems in (("train", train), ("dev", dev)):
        records = asyncio.run(generate(problems, programs, evaluator, synthetic))
        write_jsonl(paths[f"traj_{split}"], records, overwrite=True)

    if model_name is None:
        model_name = build_tiny_tokenizer(out / "tokenizer")
    count_tokens = prompt_token_counter(load_tokenizer(model_name))
    counts = {}
    for split, name, is_test in (("train", "bandit_train", False), ("dev", "bandit_test", True)):
        records = [r for _, r in bandit_records(paths[f"traj_{split}"])]
        prompts, c = bandit.build_bandit_prompts(records, count_tokens, bandit.BanditOptions(is_test=is_test))
        print(f"[{split}] " + "; ".join(c.lines()))
        write_jsonl(paths[name], prompts, overwrite=True)
        counts[name] = len(prompts)

    counts.update(
        convert(paths["bandit_train"], paths["bandit_test"], out, multi_turn=True, overwrite=overwrite)
    )
    single = convert(
        paths["problems_train"],
        paths["problems_dev"],
        out / "single_turn",
        multi_turn=False,
        overwrite=overwrite,
    )
    counts.update({f"single_{k}": v for k, v in single.items()})
    return counts


def bandit_records(path):
    from cobalt.data.trajectories import read_trajectories

    return read_trajectories(path, need_hidden=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--model_name",
        default=None,
        help="tokenizer (hub name or local dir) for the prompt-length limit; "
        "default: a tiny tokenizer built offline in OUT/tokenizer",
    )
    p.add_argument("--limit", type=positive_int, default=None, help="use only the first N problems")
    p.add_argument("--num_samples", type=positive_int, default=16, help="conversations per problem")
    p.add_argument("--num_turns", type=positive_int, default=2, help="feedback turns after turn 0")
    p.add_argument("--dev_ratio", type=fraction, default=0.2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--evaluator", choices=["local", "serve"], default="local")
    cli.add_overwrite(p)
    args = p.parse_args()
    counts = build_demo(
        args.out,
        model_name=args.model_name,
        evaluator_kind=args.evaluator,
        limit=args.limit,
        seed=args.seed,
        dev_ratio=args.dev_ratio,
        overwrite=args.overwrite,
        synthetic=SyntheticOptions(num_samples=args.num_samples, num_turns=args.num_turns, seed=args.seed),
    )
    print("rows: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"veRL data: {Path(args.out) / 'train.parquet'} and {Path(args.out) / 'test.parquet'}")


if __name__ == "__main__":
    cli.run(main)
