"""Do two training runs end sooner side by side than one after the other on this machine?

    .venv/bin/python bench/bench_checks_side_by_side.py [--out DIR]

CI's wall time is its slow tests' time, one after the other (tests/run_alone.py). Whether two of
them may overlap is a question of the machine: if a training run left a core idle, two would end
sooner together. This bench runs COBALT's and GRPO-MT's learning checks (bash
scripts/learning_check.sh, GRPO-MT from COBALT's demo data and policy, as
tests/test_learning_check.py runs them) twice in one sitting, each time in a fresh ``HOME``:

* one after the other (the baseline, as CI runs them);
* side by side: GRPO-MT's check starts as soon as COBALT's has prepared its inputs.

It prints each arm's wall time, CPU-seconds, how busy the cores were and the peak memory
(bench/bench_ci_load.py), each check's verdict, and the side-by-side arm against the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_ci_load import measure

from cobalt.common.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[1]
ARMS = ("serial", "side")  # one after the other (the baseline), side by side
PREPARED = "main_ppo on"  # the launcher's line once the data and policy exist and the head is up


def check(out: Path, method: str, inputs: Path | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_TOKEN"))}
    env |= {"LEARNING_CHECK_DIR": str(out), "LEARNING_CHECK_METHOD": method, "LEARNING_CHECK_SEED": "1"}
    env |= {"WANDB_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    if inputs:
        env["LEARNING_CHECK_INPUTS"] = str(inputs)
    log = open(out.with_suffix(".out"), "w")  # noqa: SIM115 (the child holds it)
    return subprocess.Popen(["bash", "scripts/learning_check.sh"], cwd=ROOT, env=env, stdout=log, stderr=log)


def wait_for_inputs(out: Path, process: subprocess.Popen) -> None:
    log = out / "train.log"
    while process.poll() is None:
        if log.exists() and PREPARED in log.read_text(errors="replace"):
            return
        time.sleep(2)
    raise SystemExit(f"COBALT's check ended ({process.returncode}) before its inputs were ready; see {log}")


def run_arm(arm: str, work: Path) -> int:
    """One arm, in ``work``: both checks, one after the other or side by side."""
    cobalt, grpo_mt = work / "cobalt", work / "grpo_mt"
    first = check(cobalt, "cobalt")
    if arm == "serial":
        first.wait()
    else:
        try:
            wait_for_inputs(cobalt, first)
        except BaseException:  # nothing of the arm outlives it (the script stops its own head)
            first.terminate()
            raise
    second = check(grpo_mt, "grpo_mt", inputs=cobalt)
    return max(first.wait(), second.wait())


def verdict(out: Path) -> str:
    path = out / "verdict.json"
    if not path.exists():
        return f"no verdict (see {out.with_suffix('.out')})"
    found = json.loads(path.read_text())
    return f"passed {found['passed']}, training prompts {found['val_gain']:+.3f}"


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="where the runs go (default: a temp dir)")
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.arm:  # one arm, run by the parent under bench_ci_load's sampler
        return run_arm(args.arm, args.out)
    if args.out and args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} is a file; give a directory")
    if args.out and any((args.out / arm).exists() for arm in ARMS):
        parser.error(f"--out {args.out} holds an earlier run's checks; they are not overwritten")
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-checks-side-by-side-"))
    work.mkdir(parents=True, exist_ok=True)
    results = {}
    for arm in ARMS:
        arm_dir = work / arm
        arm_dir.mkdir()
        home = tempfile.mkdtemp(dir=work, prefix="home-")
        command = ["env", f"HOME={home}", sys.executable, __file__, "--arm", arm, "--out", str(arm_dir)]
        figures, _ = measure(command, interval_s=2.0)
        figures["verdicts"] = {method: verdict(arm_dir / method) for method in ("cobalt", "grpo_mt")}
        results[arm] = figures
        print(f"{arm}: {json.dumps(figures)}", flush=True)
    (work / "results.json").write_text(json.dumps(results, indent=1))
    serial, side = results["serial"], results["side"]
    print(
        f"one after the other {serial['wall_s']:.0f} s ({100 * serial['busy_fraction']:.0f} % busy, peak "
        f"{serial['peak_used_gib']} GiB); side by side {side['wall_s']:.0f} s ({100 * side['busy_fraction']:.0f} % "
        f"busy, peak {side['peak_used_gib']} GiB): {side['wall_s'] / serial['wall_s']:.2f}x the baseline"
    )
    return max(serial["returncode"], side["returncode"])


if __name__ == "__main__":
    raise SystemExit(main())
