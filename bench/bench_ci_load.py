"""The CPU work a command does on this machine, and the shortest wall time its work allows.

    .venv/bin/python bench/bench_ci_load.py [--interval S] [-- COMMAND ...]   # default: bash .ci/run

Samples the machine's CPU counters (/proc/stat) and memory while the command runs, then prints its
wall time, the CPU-seconds spent (user, nice and kernel time of every process: the command's and
anything beside it), how busy the cores were, the time stolen by the hypervisor, the peak memory in
use, and the floor: CPU-seconds / cores, the wall time no scheduling of the same work can beat. The
command's own output goes to the terminal as usual. A figure against CI's 45-minute goal is printed
last. Run it on a quiet machine: another job's CPU counts as the command's.
"""

from __future__ import annotations

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


class PeakMemory(threading.Thread):
    def __init__(self, interval_s: float):
        super().__init__(daemon=True)
        self.interval_s, self.peak_gib, self.done = interval_s, 0.0, threading.Event()

    def run(self):
        while not self.done.wait(self.interval_s):
            self.peak_gib = max(self.peak_gib, memory_used_gib())


def measure(command: list[str], interval_s: float) -> dict:
    cores = os.cpu_count() or 1
    memory = PeakMemory(interval_s)
    before, started = cpu_counters(), time.monotonic()
    memory.start()
    returncode = subprocess.call(command, cwd=ROOT)
    wall = time.monotonic() - started
    after = cpu_counters()
    memory.done.set()
    memory.join()
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
        "peak_used_gib": round(memory.peak_gib, 1),
    }


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=2.0, help="seconds between memory samples")
    parser.add_argument("command", nargs="*", help="the command (after --; default: bash .ci/run)")
    args = parser.parse_args(argv)
    result = measure(args.command or ["bash", ".ci/run"], args.interval)
    print(json.dumps(result, indent=1))
    print(
        f"{result['wall_s']:.0f} s wall, {result['cpu_s']:.0f} CPU-s on {result['cores']} cores "
        f"({100 * result['busy_fraction']:.0f} % busy): no schedule of this work ends under "
        f"{result['floor_s']:.0f} s; CI's goal is {GOAL_S} s ({result['floor_s'] / GOAL_S:.2f}x of it as a floor, "
        f"{result['wall_s'] / GOAL_S:.2f}x as run)"
    )
    return result["returncode"]


if __name__ == "__main__":
    raise SystemExit(main())
