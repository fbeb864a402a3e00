"""Calibrate the learning check's margins: runs that cannot learn against runs that do.

    .venv/bin/python bench/calibrate_learning_check.py --out DIR [--seeds 1 2 3 4 5] [--summary-only]
                                                       [--method cobalt|grpo_mt]

For each seed, ``scripts/learning_check.sh`` runs twice into ``DIR``: ``learn<seed>`` as CI runs it
and ``null<seed>`` with ``actor_rollout_ref.actor.optim.lr=0`` (the policy never changes, so any
gain is noise: data order, sampling). A run whose ``verdict.json`` exists is not run again, so an
interrupted calibration resumes. Then, from each run's metrics and rollout dump, it prints both
criteria's gains per run, whether the current margins (``cobalt.train.learning_check.Criteria``)
separate the two groups, and the false-pass and false-fail rates those margins give under a normal
fit of each group (a run passes when its judged gains reach their margins -- the training reward's
only when ``Criteria.margin`` is set; the two gains of a run are treated as independent). Baseline: the margins must fail every null run and pass every learning
run. One pair of runs takes about 20 minutes on 2 cores.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cobalt.common.cli import ArgumentParser  # noqa: E402
from cobalt.train.learning_check import CRITERIA, Criteria, judge, read_metrics, read_rollouts  # noqa: E402

KINDS = {"learn": [], "null": ["actor_rollout_ref.actor.optim.lr=0"]}


def run(out: Path, kind: str, seed: int, method: str = "cobalt") -> None:
    run_dir = out / f"{kind}{seed}"
    if (run_dir / "verdict.json").exists():
        return
    if run_dir.exists():  # an interrupted run: the script wants a new or empty directory
        shutil.rmtree(run_dir)
    env = {**os.environ, "LEARNING_CHECK_SEED": str(seed), "LEARNING_CHECK_DIR": str(run_dir),
           "LEARNING_CHECK_METHOD": method}  # fmt: skip
    with open(out / f"{kind}{seed}.out", "w") as log:
        print(f"running {kind} seed {seed} -> {run_dir}", flush=True)
        subprocess.run(["bash", str(ROOT / "scripts/learning_check.sh"), *KINDS[kind]], env=env, stdout=log,
                       stderr=subprocess.STDOUT)  # fmt: skip


def gains(run_dir: Path) -> tuple[float, float]:
    """(paired reward gain, gain of the reward on the training prompts at temperature 0.6)."""
    zero = Criteria(margin=0.0, val_margin=0.0)
    verdict = judge(read_metrics(run_dir / "metrics.jsonl"), zero, read_rollouts(run_dir / "rollouts"))
    return verdict.gain, verdict.val_gain


def tail(values: list[float], margin: float, above: bool) -> float:
    """P(X >= margin) (above) or P(X < margin) under a normal fit of ``values``."""
    dist = statistics.NormalDist(statistics.mean(values), statistics.stdev(values))
    return 1 - dist.cdf(margin) if above else dist.cdf(margin)


def error_rates(
    val: tuple[float, float], reward: tuple[float, float] | None, either: bool
) -> tuple[float, float]:
    """(false pass, false fail) of the verdict from each judged gain's own (false pass, false fail),
    the gains taken as independent: with ``either`` one gain passes a run, else both must (the
    ``either`` rule's floor on the validation is left out: it only lowers the false-pass rate)."""
    if reward is None:
        return val
    if either:
        return 1 - (1 - val[0]) * (1 - reward[0]), val[1] * reward[1]
    return val[0] * reward[0], 1 - (1 - val[1]) * (1 - reward[1])


def summary(out: Path, seeds: list[int], criteria: Criteria) -> str:
    runs = {kind: {s: gains(out / f"{kind}{s}") for s in seeds if (out / f"{kind}{s}/verdict.json").exists()}
            for kind in KINDS}  # fmt: skip
    lines = [
        "| run | seed | reward gain (paired) | reward on the training prompts, gain | passes |",
        "|---|---:|---:|---:|---|",
    ]
    for kind, by_seed in runs.items():
        for seed, (g, v) in by_seed.items():
            passes = criteria.passes(g, v)
            lines.append(f"| {kind} | {seed} | {g:+.3f} | {v:+.3f} | {'yes' if passes else 'no'} |")
    learn, null = runs["learn"].values(), runs["null"].values()
    if min(len(learn), len(null)) >= 2:
        col = lambda rows, i: [r[i] for r in rows]  # noqa: E731
        false_pass, false_fail = error_rates(
            (tail(col(null, 1), criteria.val_margin, True), tail(col(learn, 1), criteria.val_margin, False)),
            None if criteria.margin is None else
            (tail(col(null, 0), criteria.margin, True), tail(col(learn, 0), criteria.margin, False)),
            criteria.either,
        )  # fmt: skip
        for name, i, margin in (("reward", 0, criteria.margin), ("training prompts", 1, criteria.val_margin)):
            lines.append(f"{name}: null {min(col(null, i)):+.3f}..{max(col(null, i)):+.3f} "
                         f"(mean {statistics.mean(col(null, i)):+.3f}, sd {statistics.stdev(col(null, i)):.3f}), "
                         f"learning {min(col(learn, i)):+.3f}..{max(col(learn, i)):+.3f} "
                         f"(mean {statistics.mean(col(learn, i)):+.3f}, sd {statistics.stdev(col(learn, i)):.3f}), "
                         f"margin {'not judged' if margin is None else margin}")  # fmt: skip
        lines.append(f"false pass (a null run passes) {false_pass:.1e}; false fail (a learning run "
                     f"fails) {false_fail:.1e}  [normal fits; {len(null)} null, {len(learn)} learning runs]")  # fmt: skip
    return "\n".join(lines)


def main(argv=None) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="directory of the runs (kept; resumed)")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--summary-only", action="store_true", help="summarize the runs already in --out")
    p.add_argument("--method", choices=["cobalt", "grpo_mt"], default="cobalt",
                   help="the check's method (LEARNING_CHECK_METHOD); give each its own --out")  # fmt: skip
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        for seed in args.seeds:
            for kind in KINDS:
                run(args.out.resolve(), kind, seed, args.method)
    print(summary(args.out, args.seeds, CRITERIA[args.method]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
