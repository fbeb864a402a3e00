"""The CPU work a command does on this machine, and the shortest wall time its work allows.

    .venv/bin/python bench/bench_ci_load.py [--interval S] [--per-test FILE] [-- COMMAND ...]   # default: bash .ci/run

Samples the machine's CPU counters (/proc/stat) and memory while the command runs, then prints its
wall time, the CPU-seconds spent (user, nice and kernel time of every process: the command's and
anything beside it), how busy the cores were, the time stolen by the hypervisor, the peak memory in
use, and the floor: CPU-seconds / cores, the wall time no scheduling of the same work can beat. The
command's own output goes to the terminal as usual. A figure against CI's 45-minute goal is printed
last. Run it on a quiet machine: another job's CPU counts as the command's.

``--per-test FILE`` also charges each process's CPU and memory to the test that started it: pytest
sets ``PYTEST_CURRENT_TEST`` while a test runs, and every process the test starts (its commands,
their Ray heads and Ray's workers, the sandboxes) inherits it. The processes are sampled every
interval, so one that lives less than an interval is missed; a pytest-xdist worker's own CPU goes
to the test its process title names (the tests that run in-process), an idle worker's to "(pytest
workers)", and a session fixture's cluster to the test that first asked for it. Memory is the resident set summed over a test's processes at the sample where
it was largest (pages shared between processes counted in each). FILE gets the table as JSON; the
20 costliest tests are printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import threading
import time
from pathlib import Path

from cobalt.common.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 45 * 60  # CI's goal (issue 57)


def cpu_counters() -> dict[str, float]:
    """Seconds since boot, summed over cores: busy (user + nice + system + irq + softirq), idle
    (idle + iowait) and steal."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return {
        "busy": (user + nice + system + irq + softirq) / tick,
        "idle": (idle + iowait) / tick,
        "steal": steal / tick,
    }


def memory_used_gib() -> float:
    """MemTotal - MemAvailable, as ``free`` counts "used"."""
    fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    kib = lambda name: int(fields[name].split()[0])  # noqa: E731
    return (kib("MemTotal") - kib("MemAvailable")) / 2**20


WORKERS, OUTSIDE = "(pytest workers)", "(outside the tests)"


XDIST_TITLE = b"[pytest-xdist running] "  # an xdist worker's process title while it runs a test


def test_of(environ: bytes, cmdline: bytes = b"") -> str:
    """The test a process runs or was started under: a pytest-xdist worker's own, from its title
    (``/proc/PID/cmdline``), else the one in its environment block (``/proc/PID/environ``, which
    holds what the process was started with)."""
    if cmdline.startswith(XDIST_TITLE):
        return cmdline[len(XDIST_TITLE) :].split(b"\0")[0].decode(errors="replace").strip()
    if cmdline.startswith(b"[pytest-xdist"):
        return WORKERS
    variables = dict(item.split(b"=", 1) for item in environ.split(b"\0") if b"=" in item)
    current = variables.get(b"PYTEST_CURRENT_TEST")
    if current:
        return current.decode(errors="replace").rsplit(" (", 1)[0]  # "<node id> (call)"
    return OUTSIDE


@dataclasses.dataclass(frozen=True)
class ProcessSample:
    key: tuple[int, int]  # (pid, start time): a reused pid is another process
    cpu_s: float  # user + system time so far
    rss_bytes: int
    test: str


def sample_processes() -> list[ProcessSample]:
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    samples = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # it ended, or it is not ours to read
            continue
        # after the command name: state is field 3 of stat(5), so field n is fields[n - 3]
        cpu = (int(fields[11]) + int(fields[12])) / tick
        samples.append(
            ProcessSample(
                (int(entry.name), int(fields[19])), cpu, int(fields[21]) * page, test_of(environ, cmdline)
            )
        )
    return samples


class TestLedger:
    """CPU-seconds and peak resident memory per test, from successive samples of every process.
    A process alive at the first sample is charged only what it spends after it."""

    def __init__(self):
        self.baseline: dict[tuple[int, int], float] | None = None
        self.last: dict[tuple[int, int], ProcessSample] = {}
        self.peak_rss: dict[str, int] = {}

    def add(self, samples: list[ProcessSample]) -> None:
        if self.baseline is None:
            self.baseline = {s.key: s.cpu_s for s in samples}
        rss: dict[str, int] = {}
        for s in samples:
            self.last[s.key] = s
            rss[s.test] = rss.get(s.test, 0) + s.rss_bytes
        for test, total in rss.items():
            self.peak_rss[test] = max(self.peak_rss.get(test, 0), total)

    def table(self) -> dict[str, dict[str, float]]:
        """``{test: {"cpu_s", "peak_rss_gib"}}``, costliest first."""
        cpu: dict[str, float] = {}
        for key, s in self.last.items():
            cpu[s.test] = cpu.get(s.test, 0.0) + s.cpu_s - (self.baseline or {}).get(key, 0.0)
        rows = {
            test: {"cpu_s": round(spent, 1), "peak_rss_gib": round(self.peak_rss.get(test, 0) / 2**30, 2)}
            for test, spent in cpu.items()
        }
        return dict(sorted(rows.items(), key=lambda row: -row[1]["cpu_s"]))


class Sampler(threading.Thread):
    def __init__(self, interval_s: float, per_test: bool):
        super().__init__(daemon=True)
        self.interval_s, self.per_test, self.peak_gib = interval_s, per_test, 0.0
        self.ledger, self.done = TestLedger(), threading.Event()

    def run(self):
        while True:
            self.peak_gib = max(self.peak_gib, memory_used_gib())
            if self.per_test:
                self.ledger.add(sample_processes())
            if self.done.wait(self.interval_s):
                return


def measure(command: list[str], interval_s: float, per_test: bool = False) -> tuple[dict, dict]:
    """The command's figures, and the per-test table (empty without ``per_test``)."""
    cores = os.cpu_count() or 1
    sampler = Sampler(interval_s, per_test)
    before, started = cpu_counters(), time.monotonic()
    sampler.start()
    returncode = subprocess.call(command, cwd=ROOT)
    wall = time.monotonic() - started
    after = cpu_counters()
    sampler.done.set()
    sampler.join()
    spent = {key: after[key] - before[key] for key in before}
    return {
        "command": " ".join(command),
        "returncode": returncode,
        "cores": cores,
        "wall_s": round(wall, 1),
        "cpu_s": round(spent["busy"], 1),
        "busy_fraction": round(spent["busy"] / (wall * cores), 3),
        "steal_s": round(spent["steal"], 1),
        "floor_s": round(spent["busy"] / cores, 1),
        "peak_used_gib": round(sampler.peak_gib, 1),
    }, (sampler.ledger.table() if per_test else {})


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between samples")
    parser.add_argument(
        "--per-test", type=Path, metavar="FILE", help="write CPU and memory per test here (JSON)"
    )
    parser.add_argument("command", nargs="*", help="the command (after --; default: bash .ci/run)")
    args = parser.parse_args(argv)
    if args.per_test and args.per_test.exists():
        parser.error(f"--per-test {args.per_test} exists; it is not overwritten")
    if args.per_test and not args.per_test.parent.is_dir():
        parser.error(f"--per-test {args.per_test}: no directory {args.per_test.parent}")
    result, table = measure(args.command or ["bash", ".ci/run"], args.interval, bool(args.per_test))
    print(json.dumps(result, indent=1))
    if args.per_test:
        args.per_test.write_text(json.dumps(table, indent=1))
        print(f"CPU-s and peak memory (GiB) per test, the 20 costliest (all in {args.per_test}):")
        for test, row in list(table.items())[:20]:
            print(f"{row['cpu_s']:9.0f} {row['peak_rss_gib']:6.1f}  {test}")
    print(
        f"{result['wall_s']:.0f} s wall, {result['cpu_s']:.0f} CPU-s on {result['cores']} cores "
        f"({100 * result['busy_fraction']:.0f} % busy): no schedule of this work ends under "
        f"{result['floor_s']:.0f} s; CI's goal is {GOAL_S} s ({result['floor_s'] / GOAL_S:.2f}x of it as a floor, "
        f"{result['wall_s'] / GOAL_S:.2f}x as run)"
    )
    return result["returncode"]


if __name__ == "__main__":
    raise SystemExit(main())
