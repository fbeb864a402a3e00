"""Waiting for a condition, and finding live processes, in tests that start and kill processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.2) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout_s`` passes (its last answer)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return bool(condition())


def live_processes(match: Callable[[Path], bool]) -> list[int]:
    """Pids of live processes whose ``/proc/<pid>`` entry ``match`` accepts. Zombies are dead
    already (an orphan killed by a launcher waits for init to reap it), so they do not count."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if match(entry) and "State:\tZ" not in (entry / "status").read_text():
                found.append(int(entry.name))
        except OSError:  # exited meanwhile
            continue
    return found
