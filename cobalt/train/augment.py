"""Perturbed-trajectory augmentation: mix bandit prompts built from trajectories whose feedback came
from perturbed public tests (reference section 6) into the training set, so the policy learns not
to trust wrong feedback (in-context reward hacking).

    python -m cobalt.train.augment --base data/multi_turn/train.parquet \\
        --perturbed data/multi_turn_perturbed/train.parquet --ratio 0.25 --out data/mixed/train.parquet

Both inputs are veRL parquet files written by the data chain. The perturbed rows keep their
``reward_model.ground_truth`` -- the problem's true tests, as the data chain writes them (the
perturbation only changes the feedback the trajectories saw) -- and are marked
``extra_info.perturbed = True``; base rows get ``False``. ``ratio`` is the fraction of perturbed
rows in the output.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd

from cobalt.common.cli import ArgumentParser, run
from cobalt.common.errors import DataError


def perturbed_count(n_base: int, n_perturbed: int, ratio: float) -> int:
    """Perturbed rows so that they make up ``ratio`` of base + perturbed (at most all of them)."""
    if not 0 <= ratio < 1:
        raise ValueError(f"ratio must be in [0, 1), got {ratio}")
    return min(n_perturbed, math.floor(ratio / (1 - ratio) * n_base + 0.5))


def _mark(frame: pd.DataFrame, perturbed: bool) -> pd.DataFrame:
    frame = frame.copy()
    frame["extra_info"] = [{**(info or {}), "perturbed": perturbed} for info in frame["extra_info"]]
    return frame


def mix(base: pd.DataFrame, perturbed: pd.DataFrame, ratio: float, seed: int = 42) -> pd.DataFrame:
    """Base rows plus a seeded sample of perturbed rows, shuffled with the same seed."""
    for name, frame in (("base", base), ("perturbed", perturbed)):
        missing = {"data_source", "prompt", "reward_model", "extra_info"} - set(frame.columns)
        if missing:
            raise ValueError(f"{name} rows lack veRL column(s) {sorted(missing)}")
    k = perturbed_count(len(base), len(perturbed), ratio)
    sample = perturbed.sample(n=k, random_state=seed) if k else perturbed.iloc[:0]
    mixed = pd.concat([_mark(base, False), _mark(sample, True)], ignore_index=True)
    return mixed.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise ValueError(text)
    return value


def read_rows(path: str) -> pd.DataFrame:
    """A veRL parquet; DataError naming the file when it is no parquet (a missing one: OSError)."""
    import pyarrow

    try:
        return pd.read_parquet(path)
    except pyarrow.ArrowInvalid as e:
        raise DataError(f"not a veRL parquet: {e}", path=path) from None


def main(argv=None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="veRL train.parquet from regular trajectories")
    parser.add_argument(
        "--perturbed", required=True, help="veRL parquet from perturbed-feedback trajectories"
    )
    parser.add_argument(
        "--ratio",
        type=fraction,
        required=True,
        help="fraction of perturbed rows in the output (0 to 1, 1 excluded)",
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    mixed = mix(read_rows(args.base), read_rows(args.perturbed), args.ratio, args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    mixed.to_parquet(args.out)
    n_perturbed = sum(bool(info.get("perturbed")) for info in mixed["extra_info"])
    print(json.dumps({"rows": len(mixed), "perturbed": n_perturbed, "out": args.out}))


if __name__ == "__main__":
    sys.exit(run(main))
