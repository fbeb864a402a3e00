"""How many accepted solutions each contest-site judging option rescues.

    .venv/bin/python bench/bench_judging.py [--apps DIR]

Every accepted solution of the APPS samples beside the checkout (``../shared/data/apps-samples``)
and the right program of every embedded problem (both sets) is judged on all its tests with the
evaluator's defaults (the reference's judging), then with each option of ``configs/evaluator.yaml``
alone (``judge: lcb``, ``stdin: file``, ``site: on``) and with all three. Prints, per setting, how
many solutions pass every test and how many of those the defaults failed (the rescued ones).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_sandbox import APPS_SAMPLES, apps_workload

from cobalt.common.cli import ArgumentParser
from cobalt.data.embedded import PROBLEM_SETS, load_problems
from cobalt.sandbox import default_config, evaluate

SETTINGS = {
    "defaults": {},
    "judge: lcb": {"judge": "lcb"},
    "stdin: file": {"stdin": "file"},
    "site: on": {"site": "on"},
    "all three": {"judge": "lcb", "stdin": "file", "site": "on"},
}


def embedded_workload() -> list[tuple[str, dict]]:
    workload = []
    for path in PROBLEM_SETS.values():
        for problem in load_problems(path):
            tests = {
                k: problem["public_tests"][k] + problem["hidden_tests"][k] for k in ("inputs", "outputs")
            }
            workload.append((problem["solutions"][0], tests))
    return workload


def all_pass(workload, cfg) -> list[bool]:
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda item: all(evaluate(item[0], item[1], cfg)["passing"]), workload))


def main() -> None:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", type=Path, default=APPS_SAMPLES, help="APPS problems (skipped if absent)")
    args = parser.parse_args()
    workloads = {"embedded": embedded_workload()}
    if args.apps.is_dir():
        workloads["APPS samples"] = apps_workload(args.apps)
    base = default_config()
    report = {}
    for name, workload in workloads.items():
        baseline = all_pass(workload, base)
        for setting, options in SETTINGS.items():
            passed = baseline if not options else all_pass(workload, dataclasses.replace(base, **options))
            rescued = sum(p and not b for p, b in zip(passed, baseline))
            lost = sum(b and not p for p, b in zip(passed, baseline))
            report[f"{name}, {setting}"] = {
                "solutions": len(workload),
                "pass": sum(passed),
                "rescued": rescued,
                "lost": lost,
            }
            print(
                f"{name:>12} | {setting:<11} | {sum(passed):4d} of {len(workload)} pass | rescued {rescued} | lost {lost}"
            )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
