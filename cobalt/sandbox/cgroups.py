"""The kernel's count and ceilings for everything one request starts: a cgroup per sandbox slot.

The harness sums CPU time and memory over a request's processes from /proc (harness.py:
``ProcessWatch``), but polling misses what lives and dies between two polls, and a child reaped
by the kernel itself (its parent ignores SIGCHLD) reaches nobody's ``RUSAGE_CHILDREN``. A cgroup
counts every process it ever held, reaped or not: the launcher reads its CPU counter while the
request runs and ends the request at its CPU bound (runner.py), and the kernel enforces the memory
and process ceilings between two polls, whatever the programs do to their process groups.

Where the host allows it (we are root and the hierarchy is writable), each slot ``k`` has
``<our own cgroup>/cobalt-sandbox-<euid>/slot-<k>``, made once and reused by every request on the
slot (the request's CPU time is the counter's rise while it runs):

* cgroup v2, where ``pids`` and ``memory`` are available to our cgroup's children (``cpu.stat``
  counts CPU time without the ``cpu`` controller);
* else cgroup v1, where the ``pids``, ``memory`` and ``cpuacct`` hierarchies are mounted and
  writable (this project's machines: v2 is mounted without controllers);
* else none: the harness's polling and the per-process rlimits are the bound.

Not the ``cpu`` controller: measured here, a sandbox in a CPU cgroup of its own took 40 ms more
per request on an idle machine and 100-300 ms more on a busy one (the group competes as a single
entity with every process of the host), more than the whole request costs otherwise.

The sandbox joins the slot's groups before it starts (a ``sh`` prefix moves itself, then execs the
sandbox command), so nothing it forks escapes them. It writes ``0`` (itself) into v1's ``tasks``:
moving a thread that way skips the kernel's global lock for moving a whole process, whose RCU
grace period cost ~10 ms per request here (``cgroup.procs``); v2 has no such door.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("cobalt.sandbox")

CONTROLLERS = ("pids", "memory")  # delegated in v2; v1 also needs cpuacct (CPU_V1)
CPU_V1 = "cpuacct"
# Move this (single-threaded) shell into every group file given before "--", then become the
# sandbox command.
JOIN = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 126; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class Limits:
    max_processes: int
    memory_bytes: int


class RequestCgroups:
    """The slot cgroups of one cgroup version: ``bases`` maps each controller (v1: pids, memory,
    cpuacct; v2: the same directory for all) to the directory under which the slots' groups are."""

    def __init__(self, version: str, bases: dict[str, Path]):
        self.version, self.bases = version, bases

    def describe(self) -> str:
        return f"cgroup {self.version} per slot (CPU time counted; {', '.join(CONTROLLERS)} ceilings)"

    def slot_dirs(self, slot: int) -> list[Path]:
        return sorted({base / f"slot-{slot}" for base in self.bases.values()})

    def prepare(self, slot: int, limits: Limits) -> list[str]:
        """The slot's groups (made once, reused), emptied, with the request's limits (another
        process's config may have set others); the files to join them by."""
        for path in self.slot_dirs(slot):
            path.mkdir(parents=True, exist_ok=True)
        memory = self.bases["memory"] / f"slot-{slot}"
        _write(self.bases["pids"] / f"slot-{slot}" / "pids.max", limits.max_processes)
        if self.version == "v2":
            _write(memory / "memory.max", limits.memory_bytes)
            with contextlib.suppress(OSError):
                _write(memory / "memory.swap.max", 0)
        else:
            _write(memory / "memory.limit_in_bytes", limits.memory_bytes)
        self.kill(slot)  # left by a launcher killed mid-request
        join = "cgroup.procs" if self.version == "v2" else "tasks"
        return [str(path / join) for path in self.slot_dirs(slot)]

    def command_prefix(self, join_files: list[str]) -> list[str]:
        return ["/bin/sh", "-c", JOIN, "cobalt-join", *join_files, "--"]

    def cpu_seconds(self, slot: int) -> float:
        """CPU time every process the slot ever held has used (it only grows)."""
        if self.version == "v2":
            stat = (self.bases["pids"] / f"slot-{slot}" / "cpu.stat").read_text()
            return int(stat.split("usage_usec", 1)[1].split()[0]) / 1e6
        return int((self.bases[CPU_V1] / f"slot-{slot}" / "cpuacct.usage").read_text()) / 1e9

    def release(self, slot: int) -> None:
        """End whatever the request left in its groups (a process that escaped everything else)."""
        if left := self.kill(slot):
            log.warning("ended %d process(es) left in sandbox slot %d's cgroup: %s", len(left), slot, left)

    def kill(self, slot: int) -> list[int]:
        """End every process in the slot's groups, whatever its process group, session or parent."""
        killed: list[int] = []
        for attempt in range(100):
            members = self.members(slot)
            if not members:
                return killed
            if attempt == 0 and self.version == "v2":  # all at once, forks included (Linux 5.14)
                with contextlib.suppress(OSError):
                    _write(self.bases["pids"] / f"slot-{slot}" / "cgroup.kill", 1)
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed += [pid for pid in members if pid not in killed]
            os.sched_yield()
        return killed

    def members(self, slot: int) -> list[int]:
        procs = self.bases["pids"] / f"slot-{slot}" / "cgroup.procs"
        with contextlib.suppress(FileNotFoundError):
            return [int(line) for line in procs.read_text().split()]
        return []


def _write(path: Path, value) -> None:
    path.write_text(f"{value}\n")


def detect(proc: Path = Path("/proc/self")) -> RequestCgroups | None:
    """The cgroups this process may use for requests (v2, else v1), or None. ``proc``: where
    ``cgroup`` and ``mountinfo`` are read (tests give their own)."""
    if os.geteuid() != 0:
        return None
    memberships = _own_cgroups((proc / "cgroup").read_text())
    mounts = _mounts((proc / "mountinfo").read_text())
    name = f"cobalt-sandbox-{os.geteuid()}"
    for version, bases in (
        ("v2", _v2_bases(mounts, memberships, name)),
        ("v1", _v1_bases(mounts, memberships, name)),
    ):
        if bases and _usable(bases):
            return RequestCgroups(version, bases)
    return None


def _own_cgroups(text: str) -> dict[str, str]:
    """Our cgroup per v1 controller, and under "" the v2 one (the format of /proc/self/cgroup)."""
    found = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _mounts(text: str) -> list[tuple[str, str, set[str]]]:
    """(filesystem type, mount point, options) of the cgroup filesystems in a mountinfo text."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        separator = fields.index("-")
        fstype, options = fields[separator + 1], fields[separator + 3]
        if fstype in ("cgroup", "cgroup2"):
            found.append((fstype, fields[4], set(options.split(","))))
    return found


def _v2_bases(mounts, memberships: dict[str, str], name: str) -> dict[str, Path] | None:
    for fstype, mount_point, _ in mounts:
        if fstype != "cgroup2" or "" not in memberships:
            continue
        own = Path(mount_point) / memberships[""].lstrip("/")
        available = (own / "cgroup.controllers").read_text().split() if own.is_dir() else []
        if not set(CONTROLLERS) <= set(available):
            return None
        base = own / name
        with contextlib.suppress(OSError):
            base.mkdir(exist_ok=True)
            _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
            return dict.fromkeys((*CONTROLLERS, CPU_V1), base)
        return None
    return None


def _v1_bases(mounts, memberships: dict[str, str], name: str) -> dict[str, Path] | None:
    bases, wanted = {}, (*CONTROLLERS, CPU_V1)
    for fstype, mount_point, options in mounts:
        for controller in wanted:
            if fstype == "cgroup" and controller in options and controller in memberships:
                bases[controller] = Path(mount_point) / memberships[controller].lstrip("/") / name
    return bases if set(bases) == set(wanted) else None


def _usable(bases: dict[str, Path]) -> bool:
    try:
        for base in set(bases.values()):
            base.mkdir(exist_ok=True)
            probe = base / "slot-probe"
            probe.mkdir(exist_ok=True)
            probe.rmdir()
    except OSError as e:
        log.info("cgroups not usable for sandbox requests: %s", e)
        return False
    return True
