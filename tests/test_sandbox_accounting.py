"""Everything a request starts is counted, reaped or not: CPU time measured from the host (a
cpuacct cgroup of the test's own around the whole launcher) stays within a few times the limit
when a program hides its children from every parent's accounting, and a child that leaves its
test's process group is counted and ended with its test."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from sandbox_fixtures import backend_config

pytestmark = pytest.mark.one_worker  # uids of its own, whose processes it follows

ROOT = Path(__file__).resolve().parents[1]
UID_BASE = {"bwrap": 64000, "landlock": 64100}  # uids of their own: leftovers are attributable

# SIGCHLD ignored: each worker is reaped by the kernel the moment it exits, so its CPU time reaches
# no parent's cutime nor anyone's RUSAGE_CHILDREN. Two at a time, each 30 ms of CPU: each one lives
# and dies between two 50 ms polls of /proc.
AUTO_REAPED_WORKERS = """
import ctypes, signal, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
libc = ctypes.CDLL(None)
print("forking", flush=True)
while True:
    for _ in range(2):
        if libc.fork() == 0:
            start = time.process_time()
            while time.process_time() - start < 0.03:
                pass
            libc._exit(0)
    libc.wait(None)  # returns once both are gone (ECHILD): SIGCHLD is ignored
"""

# The same with sigaction called directly (no Python wrapper in the way).
AUTO_REAPED_WORKERS_BY_SIGACTION = AUTO_REAPED_WORKERS.replace(
    "signal.signal(signal.SIGCHLD, signal.SIG_IGN)",
    "ctypes.CDLL(None).signal(signal.SIGCHLD, ctypes.c_void_p(1))  # SIG_IGN",
)


def _cpuacct_parent() -> Path | None:
    """Our own cgroup v1 cpuacct directory, if we may make groups under it."""
    if os.geteuid() != 0:
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            mount = next(
                (
                    f.split()[4]
                    for f in Path("/proc/self/mountinfo").read_text().splitlines()
                    if " - cgroup " in f and "cpuacct" in f.split()[-1].split(",")
                ),
                None,
            )
            if mount:
                return Path(mount) / path.lstrip("/")
    return None


METER_PARENT = _cpuacct_parent()
needs_meter = pytest.mark.skipif(
    METER_PARENT is None or not os.access(METER_PARENT, os.W_OK),
    reason="measuring a request from the host needs root and cgroup v1 cpuacct",
)

LAUNCH = """
import dataclasses, json, os, sys
open(sys.argv[1], "w").write(str(os.getpid()))  # into the meter: everything below is counted
from cobalt.sandbox import default_config
from cobalt.sandbox.runner import RequestTimeout, run_in_sandbox
request = json.loads(sys.stdin.read())
cfg = dataclasses.replace(default_config(), **request["settings"])
try:
    print(json.dumps(run_in_sandbox(request["code"], request["inputs"], cfg)))
except RequestTimeout:
    print(json.dumps("request timeout"))
"""


def metered_run(code: str, inputs: list[str], cfg) -> tuple[object, float]:
    """Run one request in a launcher process of its own inside a fresh cpuacct group: its results
    and the CPU seconds the kernel counted for the launcher and everything it started."""
    meter = METER_PARENT / f"cobalt-meter-{uuid.uuid4().hex[:8]}"
    meter.mkdir()
    try:
        settings = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
        done = subprocess.run(
            [sys.executable, "-c", LAUNCH, str(meter / "cgroup.procs")],
            input=json.dumps({"code": code, "inputs": inputs, "settings": settings}),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        _empty(meter)
        return json.loads(done.stdout), int((meter / "cpuacct.usage").read_text()) / 1e9
    finally:
        _remove(meter)


def _timed_out(result) -> bool:
    """The test's CPU limit ended it, or on a machine too busy to give it that CPU time in 27 s,
    the request's wall-clock bound did."""
    return result == "request timeout" or result[0]["status"] == "timeout"


def _empty(group: Path) -> None:
    """Kill whatever is left in ``group`` (and below) and wait until it is gone."""
    deadline = time.monotonic() + 10
    while (pids := _members(group)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _members(group: Path) -> list[int]:
    return [int(pid) for procs in group.rglob("cgroup.procs") for pid in procs.read_text().split()]


def _remove(group: Path) -> None:
    _empty(group)
    for path in sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        path.rmdir()
    group.rmdir()


@pytest.fixture(params=["bwrap", "landlock"])
def cfg(request):
    # A wall-clock backstop past the request's 27 s: what stops a program is the CPU it used.
    return backend_config(request.param, uid_base=UID_BASE[request.param], slots=2, wall_timeout_s=30)


@needs_meter
def test_auto_reaped_workers_burn_at_most_three_times_the_limit(cfg):
    # Before the slot's cgroup counted them: 24 CPU-s in 12 s, until the wall-clock backstop.
    result, used = metered_run(AUTO_REAPED_WORKERS_BY_SIGACTION, [""], cfg)
    assert used <= 3 * cfg.test_timeout_s, f"the request used {used:.1f} CPU-s: {result}"
    assert _timed_out(result), result


@needs_meter
def test_without_cgroups_ignoring_sigchld_through_the_signal_module_is_still_counted(cfg):
    # Polling alone sees children that stay until their parent waits (the harness turns SIG_IGN
    # for SIGCHLD into SIG_DFL); sigaction() through ctypes it cannot see (docs/evaluator.md).
    result, used = metered_run(AUTO_REAPED_WORKERS, [""], dataclasses.replace(cfg, cgroups="off"))
    assert used <= 3 * cfg.test_timeout_s, f"the request used {used:.1f} CPU-s: {result}"
    assert _timed_out(result), result


# Input "spin": three children leave the test's process group (setsid) and spin; the test itself
# sleeps. Each child alone stays under RLIMIT_CPU's 4 s, together they are 3 x the test's limit.
SETSID_SPINNERS = """
import ctypes, time
libc = ctypes.CDLL(None)
if input() == "spin":
    for _ in range(3):
        if libc.fork() == 0:
            libc.setsid()
            while True:
                pass
    time.sleep(60)
print("ok")
"""


@needs_meter
def test_a_setsid_child_counts_toward_its_tests_cpu_time(cfg):
    # Three tests: the request's own bound (13 CPU-s) is not what stops the spinners.
    result, used = metered_run(
        SETSID_SPINNERS, ["spin", "rest", "rest"], dataclasses.replace(cfg, test_concurrency=1)
    )
    assert [r["status"] for r in result] == ["timeout", "exit", "exit"], result
    assert used <= cfg.test_timeout_s + 2.5, f"the request used {used:.1f} CPU-s: {result}"


# Input "leave": a child leaves the test's process group (setsid) and beats (a byte every 10 ms in
# a file beside the tests' directories); the test ends at once. The next test watches the beat.
SETSID_HEARTBEAT = """
import ctypes, os, time
libc = ctypes.CDLL(None)
if input() == "leave":
    if libc.fork() == 0:
        libc.setsid()
        while True:
            with open("../beat", "a") as beat:
                beat.write(".")
            time.sleep(0.01)
    time.sleep(0.2)
    print("left")
else:
    time.sleep(0.5)
    before = os.path.getsize("../beat")
    time.sleep(0.5)
    print("beating" if os.path.getsize("../beat") > before else "ended")
"""


def test_a_setsid_child_ends_with_its_test(cfg):
    from cobalt.sandbox.runner import run_in_sandbox

    for cgroups in ("auto", "off"):
        settings = dataclasses.replace(cfg, test_concurrency=1, cgroups=cgroups)
        results = run_in_sandbox(SETSID_HEARTBEAT, ["leave", "watch"], settings)
        assert [r["stdout"] for r in results] == ["left\n", "ended\n"], (cgroups, results)


# --- the process bound without root: bwrap's user namespace counts its own processes -------------

USER_UID = 64190  # an unprivileged user that launches sandboxes itself
LAUNCH_AS_USER = """
import dataclasses, json, sys
from cobalt.sandbox import default_config
from cobalt.sandbox.runner import run_in_sandbox
cfg = dataclasses.replace(default_config(), backend="bwrap")
print(json.dumps(run_in_sandbox(sys.stdin.read(), [""], cfg)))
"""
FORK_BOMB = (
    "import ctypes, time\nlibc = ctypes.CDLL(None)\nn = 0\n"
    "while n < 1000:\n    pid = libc.fork()\n    if pid < 0:\n        break\n"
    "    if pid == 0:\n        time.sleep(30)\n        raise SystemExit\n    n += 1\nprint(n)\n"
)


@pytest.fixture
def readable_copy():
    """What the unprivileged user imports (cobalt/, configs/), where it may read it: the clone
    itself may lie under a directory only root can enter (``mktemp -d``, root's home)."""
    top = Path(tempfile.mkdtemp(prefix="cobalt-as-user-"))
    try:
        for name in ("cobalt", "configs"):
            shutil.copytree(ROOT / name, top / name, ignore=shutil.ignore_patterns("__pycache__"))
        for path in (top, *top.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start processes as another user")
def test_a_fork_bomb_is_bounded_without_root_in_bwraps_user_namespace(readable_copy):
    as_user = ["setpriv", f"--reuid={USER_UID}", f"--regid={USER_UID}", "--clear-groups"]
    # The user already runs more processes than the bound: counted per uid alone, no fork could
    # succeed in the sandbox; counted per user namespace, the sandbox has its own 64.
    outside = [subprocess.Popen([*as_user, "sleep", "60"]) for _ in range(70)]
    try:
        done = subprocess.run(
            [*as_user, "/usr/bin/python3", "-c", LAUNCH_AS_USER],
            input=FORK_BOMB,
            capture_output=True,
            text=True,
            cwd=readable_copy,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(readable_copy)},
        )
    finally:
        for process in outside:
            process.kill()
            process.wait()
    if done.returncode != 0 and "SandboxUnavailable" in done.stderr:
        pytest.skip(f"bwrap does not run for an unprivileged user here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    [result] = json.loads(done.stdout)
    forks = result["stdout"].split()[0]
    assert forks.isdigit() and 0 < int(forks) < 64, result
