"""Kernel limits for everything one request starts: a cgroup per sandbox slot.

The harness already sums CPU time and memory over a request's processes from /proc (harness.py:
``ProcessWatch``); a cgroup adds what polling cannot: a memory and process-count ceiling the
kernel enforces between two polls, whatever the programs do to their process groups.

Where the host allows it (we are root and the hierarchy is writable), each slot ``k`` gets
``<our own cgroup>/cobalt-sandbox-<euid>/slot-<k>``:

* cgroup v2, where ``pids`` and ``memory`` are available to our cgroup's children;
* else cgroup v1, where the ``pids`` and ``memory`` hierarchies are mounted and writable (this
  project's machines: v2 is mounted without controllers);
* else none: the harness's polling and the per-process rlimits are the bound.

Not the ``cpu`` controller: measured here, a sandbox in a CPU cgroup of its own took 40 ms more
per request on an idle machine and 100-300 ms more on a busy one (the group competes as a single
entity with every process of the host), more than the whole request costs otherwise. CPU time is
bounded per test and per request by the harness instead.

The sandbox joins the slot's groups before it starts (a ``sh`` prefix writes its pid, then execs
the sandbox command), so nothing it forks escapes them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("cobalt.sandbox")

CONTROLLERS = ("pids", "memory")
# Join every cgroup.procs given before "--", then become the sandbox command.
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 126; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class Limits:
    max_processes: int
    memory_bytes: int


class RequestCgroups:
    """The slot cgroups of one cgroup version: ``bases`` maps each controller to the directory
    under which the slots' groups are made."""

    def __init__(self, version: str, bases: dict[str, Path]):
        self.version, self.bases = version, bases

    def describe(self) -> str:
        return f"cgroup {self.version} per request ({', '.join(CONTROLLERS)})"

    def slot_dirs(self, slot: int) -> list[Path]:
        return sorted({base / f"slot-{slot}" for base in self.bases.values()})

    def prepare(self, slot: int, limits: Limits) -> list[str]:
        """Make the slot's groups with the request's limits; the cgroup.procs files to join."""
        for path in self.slot_dirs(slot):
            path.mkdir(parents=True, exist_ok=True)
        self._kill_members(slot)  # left by a launcher killed mid-request
        memory = self.bases["memory"] / f"slot-{slot}"
        _write(self.bases["pids"] / f"slot-{slot}" / "pids.max", limits.max_processes)
        if self.version == "v2":
            _write(memory / "memory.max", limits.memory_bytes)
            with contextlib.suppress(OSError):
                _write(memory / "memory.swap.max", 0)
        else:
            _write(memory / "memory.limit_in_bytes", limits.memory_bytes)
        return [str(path / "cgroup.procs") for path in self.slot_dirs(slot)]

    def command_prefix(self, procs_files: list[str]) -> list[str]:
        return ["/bin/sh", "-c", JOIN, "cobalt-join", *procs_files, "--"]

    def release(self, slot: int) -> None:
        """End whatever the request left in its groups (a process that escaped everything else)."""
        if left := self._kill_members(slot):
            log.warning("ended %d process(es) left in sandbox slot %d's cgroup: %s", len(left), slot, left)

    def _kill_members(self, slot: int) -> list[int]:
        killed: list[int] = []
        for _ in range(100):
            members = self.members(slot)
            if not members:
                return killed
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
            return dict.fromkeys(CONTROLLERS, base)
        return None
    return None


def _v1_bases(mounts, memberships: dict[str, str], name: str) -> dict[str, Path] | None:
    bases = {}
    for fstype, mount_point, options in mounts:
        for controller in CONTROLLERS:
            if fstype == "cgroup" and controller in options and controller in memberships:
                bases[controller] = Path(mount_point) / memberships[controller].lstrip("/") / name
    return bases if set(bases) == set(CONTROLLERS) else None


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
