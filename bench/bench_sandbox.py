"""Evaluator throughput (tests/s) versus the reference's one-`python3 -S`-per-test bwrap scheme.

    .venv/bin/python bench/bench_sandbox.py [--programs N] [--workers 2] [--apps [DIR]] [--repeat 3] [--cold] [--profile]
    .venv/bin/python bench/bench_sandbox.py --cgroups-cost [--repeat 3]

Workload: the correct solution of each embedded problem on all its tests (real programs, real
inputs), or with ``--apps`` every accepted solution of the APPS samples beside the checkout
(``../shared/data/apps-samples``: real Codeforces-style problems, real solutions). Every runner uses
the same parallelism (``--workers`` requests at once, up to 4 tests of a request at once); the
runners take turns, ``--repeat`` rounds, and their medians are compared:

* cobalt: ``cobalt.sandbox.evaluate`` (hardened bwrap, warm sandboxes, fork per test); ``--cold``
  adds it with ``warm: false`` (a sandbox started per request);
* reference: one ``bwrap --ro-bind / / --unshare-all ... python3 -S prog.py`` per test (its command
  line), where prog.py starts with the reference's guard (rlimits, destructive functions disabled:
  reference section 2 "before the program runs"); ``--bare-reference`` leaves the guard out;
* unsandboxed: one plain ``python3 -S prog.py`` per test, no guard.

``--cgroups-cost`` measures instead what the kernel's accounting costs: cobalt with ``cgroups: auto``
and with ``cgroups: off``, alternating every few programs, ``--repeat`` runs of each, medians compared.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cobalt.common.cli import ArgumentParser
from cobalt.data.embedded import all_tests, load_problems
from cobalt.sandbox import evaluate
from cobalt.sandbox.config import default_config
from cobalt.sandbox.runner import get_backend, request_cgroups, run_in_sandbox

PYTHON = "/usr/bin/python3"

# What the reference runs inside each test's interpreter before the program (section 2).
REFERENCE_GUARD = """\
import resource, os, builtins, shutil, subprocess, sys, faulthandler
for _limit in (resource.RLIMIT_AS, resource.RLIMIT_DATA, resource.RLIMIT_STACK):
    resource.setrlimit(_limit, (1 << 30, 1 << 30))
os.environ["OMP_NUM_THREADS"] = "1"
faulthandler.disable()
for _name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork",
              "forkpty", "killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod",
              "fchown", "chmod", "chown", "chroot", "lchown", "getcwd", "chdir"):
    setattr(os, _name, None)
shutil.rmtree = shutil.move = shutil.chown = None
subprocess.Popen = None
for _name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
    sys.modules[_name] = None
"""


def reference_command(prog: str, scratch: str) -> list[str]:
    return [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev-bind",
        "/dev",
        "/dev",
        "--bind",
        scratch,
        scratch,
        "--unshare-all",
        "--new-session",
        "--die-with-parent",
        "--proc",
        "/proc",
        "--chdir",
        scratch,
        PYTHON,
        "-S",
        prog,
    ]


def run_per_test(code: str, tests: dict, sandboxed: bool, guard: bool) -> list[bool]:
    """The reference scheme: a fresh interpreter (optionally in its own bwrap) for every test."""
    scratch = tempfile.mkdtemp(prefix="bench-ref-")
    prog = str(Path(scratch) / "prog.py")
    Path(prog).write_text((REFERENCE_GUARD if guard else "") + code)
    cmd = reference_command(prog, scratch) if sandboxed else [PYTHON, "-S", prog]

    def one(pair):
        test_input, expected = pair
        try:
            done = subprocess.run(cmd, input=test_input.encode(), capture_output=True, timeout=4)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0 and done.stdout.decode(errors="replace").strip() == expected.strip()

    try:
        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(one, zip(tests["inputs"], tests["outputs"])))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


ROOT = Path(__file__).resolve().parents[1]
APPS_SAMPLES = Path(os.environ.get("COBALT_SHARED_DIR") or ROOT.parent / "shared") / "data" / "apps-samples"


def apps_workload(directory: Path) -> list[tuple[str, dict]]:
    """Every accepted solution of every APPS problem in ``directory`` with the problem's tests."""
    workload = []
    for problem in sorted(p for p in directory.iterdir() if (p / "solutions.json").is_file()):
        tests = json.loads((problem / "input_output.json").read_text())
        for solution in json.loads((problem / "solutions.json").read_text()):
            workload.append((solution, tests))
    return workload


def measure(name: str, job, workload, workers: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda item: job(*item), workload))
    elapsed = time.perf_counter() - start
    tests = sum(len(r) for r in results)
    passed = sum(sum(r) for r in results)
    rate = tests / elapsed
    print(f"{name:>12}: {tests} tests in {elapsed:6.2f} s = {rate:7.1f} tests/s ({passed} passed)")
    return rate


def main() -> None:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=51, help="how many embedded problems (default all)")
    parser.add_argument("--workers", type=int, default=2, help="requests evaluated at once")
    parser.add_argument(
        "--bare-reference",
        action="store_true",
        help="run the reference scheme without its in-process guard (a lower bound)",
    )
    parser.add_argument(
        "--apps",
        nargs="?",
        type=Path,
        const=APPS_SAMPLES,
        help=f"measure on the accepted solutions of APPS problems instead (default dir: {APPS_SAMPLES})",
    )
    parser.add_argument(
        "--profile", action="store_true", help="then break one request's wall time down (sequential)"
    )
    parser.add_argument(
        "--cgroups-cost",
        action="store_true",
        help="compare cobalt's tests/s with cgroups: auto and off (alternately, --repeat times each)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (medians are compared)")
    parser.add_argument("--cold", action="store_true", help="also measure cobalt with warm: false")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("bwrap is not installed: run scripts/setup.sh")
    if args.apps and not args.apps.is_dir():
        sys.exit(f"{args.apps}: no such directory (COBALT_SHARED_DIR names the shared folder)")
    cfg = default_config()
    get_backend(cfg)  # probe once, outside the timing
    if args.apps:
        workload = apps_workload(args.apps)
    else:
        workload = [(p["solutions"][0], all_tests(p)) for p in load_problems()[: args.programs]]
    print(
        f"workload: {len(workload)} programs, {sum(len(t['inputs']) for _, t in workload)} tests, "
        f"{args.workers} requests at once"
    )
    if args.cgroups_cost:
        return cgroups_cost(workload, cfg, args.workers, args.repeat)
    guard = not args.bare_reference
    sides = {"cobalt": lambda code, tests: evaluate(code, tests, cfg)["passing"]}
    if args.cold:
        cold = dataclasses.replace(cfg, warm=False)
        sides["cobalt, cold"] = lambda code, tests: evaluate(code, tests, cold)["passing"]
    sides["reference"] = lambda c, t: run_per_test(c, t, True, guard)
    sides["unsandboxed"] = lambda c, t: run_per_test(c, t, False, False)
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.repeat):  # the sides in turn, so that each run of each sees the same machine
        for name, job in sides.items():
            rates[name].append(measure(name, job, workload, args.workers))
    median = {name: statistics.median(values) for name, values in rates.items()}
    print(
        f"medians of {args.repeat} runs: " + ", ".join(f"{n} {r:.1f}" for n, r in median.items()) + " tests/s"
    )
    print(f"cobalt against the reference bwrap scheme: {median['cobalt'] / median['reference']:.1f}x faster "
          "(goal >= 20x on short programs)")  # fmt: skip
    print(f"cobalt's time over unsandboxed python3 -S per test: {median['unsandboxed'] / median['cobalt']:.2f}x "
          "(goal <= 1.3x)")  # fmt: skip
    if args.profile:
        profile(workload, cfg)


def cgroups_cost(workload, cfg, workers: int, repeat: int, chunk: int = 6) -> None:
    """Throughput with the kernel's per-request accounting (``cgroups: auto``) against without
    (``off``). Each run goes through the workload once per side, the sides alternating every
    ``chunk`` programs (in turn first), so that both see the same background load; the runs'
    medians are compared."""
    sides = {name: dataclasses.replace(cfg, cgroups=name) for name in ("auto", "off")}
    if request_cgroups(sides["auto"]) is None:
        sys.exit(
            "no usable cgroups here (root and cgroup v2 with pids and memory, or v1): nothing to compare"
        )
    print(f"cgroups: {request_cgroups(sides['auto']).describe()}")
    tests = sum(len(t["inputs"]) for _, t in workload)
    rates: dict[str, list[float]] = {name: [] for name in sides}
    with ThreadPoolExecutor(workers) as pool:
        for run in range(repeat):
            elapsed = dict.fromkeys(sides, 0.0)
            for i, start in enumerate(range(0, len(workload), chunk)):
                for name in sorted(sides, reverse=(run + i) % 2 == 1):
                    began = time.perf_counter()
                    part = workload[start : start + chunk]
                    list(pool.map(lambda item, side=sides[name]: evaluate(*item, side), part))
                    elapsed[name] += time.perf_counter() - began
            for name in sides:
                rates[name].append(tests / elapsed[name])
            print(f"run {run + 1}: " + ", ".join(f"cgroups {n}: {rates[n][-1]:.1f} tests/s" for n in sides))
    on, off = statistics.median(rates["auto"]), statistics.median(rates["off"])
    print(f"median of {repeat}: {on:.1f} tests/s with cgroups, {off:.1f} without: cost {1 - on / off:.1%}")


def profile(workload, cfg) -> None:
    """Where one request's wall time goes, one request at a time: the fixed cost of a sandbox
    (launch, namespaces or Landlock, interpreter, harness, teardown), and, of the rest, the
    programs' own CPU time (the floor no sandbox can beat) against ours (forks, pipes, waits)."""
    empty = []
    for _ in range(10):
        start = time.perf_counter()
        run_in_sandbox("pass", [""], cfg)
        empty.append(time.perf_counter() - start)
    fixed = min(empty)
    wall = program_cpu = 0.0
    tests = 0
    for code, cases in workload:
        start = time.perf_counter()
        runs = run_in_sandbox(code, cases["inputs"], cfg)
        wall += time.perf_counter() - start
        program_cpu += sum(r.get("cpu", 0.0) for r in runs)
        tests += len(runs)
    requests = len(workload)
    ours = wall - requests * fixed - program_cpu
    print(f"profile, one request at a time: {requests} requests, {tests} tests, {wall:.2f} s wall")
    print(f"  fixed cost per request (a 'pass' program, best of 10): {fixed * 1000:.1f} ms")
    print(f"  sandboxes' fixed costs: {requests * fixed:.2f} s ({requests * fixed / wall:.0%})")
    print(f"  programs' own CPU time (the floor): {program_cpu:.2f} s ({program_cpu / wall:.0%})")
    print(f"  the rest (forks, pipes, waits, per-test work): {ours:.2f} s ({ours / wall:.0%})")


if __name__ == "__main__":
    main()
