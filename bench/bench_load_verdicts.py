"""Verdicts under load: every request judged on an idle machine, then again beside busy processes
(4 per core by default, each in a session and so a scheduler autogroup of its own, as other
requests are); how many verdict lists differ between the two runs (goal: 0) and each run's wall time.

    .venv/bin/python bench/bench_load_verdicts.py [--load 4] [--workers 2] [--apps DIR] [--no-real]

Workload, with the default evaluator config:

* the correct solution of each embedded problem on all its tests, and every accepted solution of
  the APPS samples beside the checkout (``../shared/data/apps-samples``, skipped if absent);
* programs written for this benchmark, on an 8-test problem: loops on half the tests, loops on every
  test, loops on the first test only, slow but correct (1 CPU-s per test, and 3 CPU-s per test on 4
  tests), sleeps 0.5 s and answers.

A verdict list is a request's ``passing``; the feedback lists are compared too. Also printed: how
the requests ended in each run (``cobalt.sandbox.evaluation.OUTCOMES``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_sandbox import APPS_SAMPLES, apps_workload

from cobalt.common.cli import ArgumentParser
from cobalt.data.embedded import all_tests, load_problems
from cobalt.sandbox.config import default_config
from cobalt.sandbox.evaluation import REQUEST_OUTCOMES, evaluate
from cobalt.sandbox.runner import get_backend

DOUBLES = {"inputs": [str(i) for i in range(8)], "outputs": [str(2 * i) for i in range(8)]}


def cpu_then_double(seconds: float) -> str:
    return (
        "import time\nstart = time.process_time()\n"
        f"while time.process_time() - start < {seconds}:\n    pass\nprint(2 * int(input()))\n"
    )


def loops_when(condition: str) -> str:
    return f"n = int(input())\nif {condition}:\n    while True:\n        pass\nprint(2 * n)\n"


def written_programs() -> list[tuple[str, str, dict]]:
    """(name, program, tests) of the programs written for this benchmark, the longest first."""
    four = {"inputs": DOUBLES["inputs"][:4], "outputs": DOUBLES["outputs"][:4]}
    return [
        ("loops on every test", loops_when("True"), DOUBLES),
        ("loops on half the tests", loops_when("n % 2"), DOUBLES),
        ("slow but correct, 3 CPU-s a test", cpu_then_double(3.0), four),
        ("slow but correct, 1 CPU-s a test", cpu_then_double(1.0), DOUBLES),
        ("loops on the first test", loops_when("n == 0"), DOUBLES),
        ("sleeps 0.5 s, then answers", "import time\ntime.sleep(0.5)\nprint(2 * int(input()))\n", DOUBLES),
    ]


def workload(apps: Path | None, real: bool) -> list[tuple[str, str, dict]]:
    items = written_programs()
    if real:
        items += [(f"embedded {p['id']}", p["solutions"][0], all_tests(p)) for p in load_problems()]
        if apps and apps.is_dir():
            items += [
                (f"APPS solution {i}", code, tests) for i, (code, tests) in enumerate(apps_workload(apps))
            ]
        else:
            print(f"no APPS samples at {apps}: left out")
    return items


def judge_all(items, cfg, workers: int) -> tuple[list[dict], float, dict]:
    """Every request's result, the run's wall time and how the requests ended."""
    before = REQUEST_OUTCOMES.snapshot()
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda item: evaluate(item[1], item[2], cfg), items))
    wall = time.perf_counter() - start
    after = REQUEST_OUTCOMES.snapshot()
    return results, wall, {k: after[k] - before[k] for k in after if after[k] != before[k]}


def busy_processes(count: int) -> list[subprocess.Popen]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(count)
    ]


def main() -> None:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=int, default=4, help="busy processes per core in the loaded run")
    parser.add_argument("--workers", type=int, default=2, help="requests evaluated at once")
    parser.add_argument(
        "--apps", type=Path, default=APPS_SAMPLES, help=f"APPS samples (default {APPS_SAMPLES})"
    )
    parser.add_argument("--no-real", action="store_true", help="only the programs written for the benchmark")
    args = parser.parse_args()
    cfg = default_config()
    get_backend(cfg)  # probe once, outside the timing
    items = workload(args.apps, not args.no_real)
    cores = os.cpu_count() or 1
    print(f"workload: {len(items)} requests, {sum(len(t['inputs']) for _, _, t in items)} tests, "
          f"{args.workers} at once; loaded run: {args.load * cores} busy processes on {cores} cores")  # fmt: skip
    idle, idle_wall, idle_outcomes = judge_all(items, cfg, args.workers)
    print(f"idle:   {idle_wall:7.1f} s wall; requests {idle_outcomes}")
    hogs = busy_processes(args.load * cores)
    try:
        time.sleep(0.5)
        loaded, loaded_wall, loaded_outcomes = judge_all(items, cfg, args.workers)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    print(f"loaded: {loaded_wall:7.1f} s wall; requests {loaded_outcomes}")
    verdicts = [name for (name, _, _), a, b in zip(items, idle, loaded) if a["passing"] != b["passing"]]
    feedback = [name for (name, _, _), a, b in zip(items, idle, loaded) if a != b]
    for (name, _, _), result in zip(items[: len(written_programs())], idle):
        print(f"  {name}: {sum(result['passing'])}/{len(result['passing'])} passing (idle)")
    print(
        f"verdict lists that differ, idle against loaded: {len(verdicts)} of {len(items)} (goal 0) {verdicts}"
    )
    print(f"results (verdicts or feedback) that differ: {len(feedback)} of {len(items)} {feedback}")


if __name__ == "__main__":
    main()
