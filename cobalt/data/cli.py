"""What every ``preproc/*.py`` entry point shares: common flags, error reporting, safe outputs."""

from __future__ import annotations

import argparse
import os

from cobalt.common.cli import ArgumentParser, run  # noqa: F401 (run: the entry points' error reporting)
from cobalt.common.errors import ConfigError


def add_overwrite(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace existing output files (by default an existing output is an error)",
    )


def add_evaluator(parser: argparse.ArgumentParser, allow_none: bool = False) -> None:
    choices = ["serve", "local"] + (["none"] if allow_none else [])
    parser.add_argument(
        "--evaluator",
        choices=choices,
        default="serve",
        help="'serve': the Ray Serve Evaluator deployment (start it first); "
        "'local': the sandbox in this process" + ("; 'none': skip code execution" if allow_none else ""),
    )


SERVE_HINT = (
    "start the evaluator first with `python remote_reward_server.py` and export the RAY_ADDRESS "
    "(and RAY_AUTH_*) variables it prints, or use --evaluator local"
)


def make_evaluator(kind: str):
    if kind == "none":
        return None
    from cobalt.serve.client import get_evaluator

    if kind == "serve":
        join_evaluator_cluster()
    return get_evaluator(kind)


def join_evaluator_cluster() -> None:
    """Connect to ``$RAY_ADDRESS``, failing within seconds when nothing answers there (``ray.init``
    would retry for minutes, deaf to SIGTERM). No guessing: another user's cluster on this machine
    is never joined by accident."""
    from cobalt.serve import cluster

    address = os.environ.get("RAY_ADDRESS")
    if not address:
        raise ConfigError(f"--evaluator serve: RAY_ADDRESS is not set; {SERVE_HINT}")
    os.environ.update(cluster.join_env(address))
    try:
        cluster.connect(address)
    except ConnectionError as e:
        raise ConfigError(f"--evaluator serve: {str(e).split(';')[0]}; {SERVE_HINT}") from None


def refuse_existing(paths, overwrite: bool) -> None:
    """Check every output before any work, so nothing is half-done when one already exists."""
    for path in paths:
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"{path} already exists; pass --overwrite to replace it")


def verl_preproc(description: str, multi_turn: bool, make=None) -> None:
    """The ``preproc/verl_preproc_*.py`` command lines: JSONL → train/test parquet (rows made by
    ``make``, e.g. :func:`cobalt.data.verl_rows.online_row`; default: the multi- or single-turn row)."""
    from cobalt.data.verl_rows import convert

    p = ArgumentParser(description=description)
    p.add_argument("--local-dir", required=True, help="the save directory for the parquet files")
    p.add_argument("--train-data-file", default="data/taco_verified_filtered_train.jsonl")
    p.add_argument("--val-data-file", default="data/taco_verified_filtered_dev.jsonl")
    add_overwrite(p)
    args = p.parse_args()
    counts = convert(
        args.train_data_file,
        args.val_data_file,
        args.local_dir,
        multi_turn=multi_turn,
        overwrite=args.overwrite,
        make=make,
    )
    print(f"wrote {counts['train']} train and {counts['test']} test rows to {args.local_dir}")
