"""Waiting for a condition, and finding live processes, in tests that start and kill processes."""

from __future__ import annotations

import os
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


def processes_using(path: str) -> list[int]:
    """Live processes whose command line names ``path`` or that hold a file open under it. Ray
    renames its workers and agents (``ray::WorkerDict``), so only their open logs under the
    head's temp dir tell whose they are."""

    def uses(entry: Path) -> bool:
        if path in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
            return True
        for fd in (entry / "fd").iterdir():
            try:
                if os.readlink(fd).startswith(path):
                    return True
            except OSError:
                continue
        return False

    return live_processes(uses)
