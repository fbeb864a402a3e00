"""The kernel's share of the per-request limits: each request's processes live in their slot's
cgroup (v2, or v1 as on this project's machines), with its ceilings, and a hostile request does
not change another request's verdict."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
from sandbox_fixtures import backend_config

from cobalt.sandbox import evaluate
from cobalt.sandbox.runner import _cgroup_limits, request_cgroups, run_in_sandbox

GROUPS = request_cgroups()
needs_cgroups = pytest.mark.skipif(GROUPS is None, reason="no usable cgroups here (needs root)")


@pytest.fixture(params=["bwrap", "landlock"])
def cfg(request):
    return backend_config(request.param, uid_base={"bwrap": 63500, "landlock": 63600}[request.param], slots=1)


@needs_cgroups
def test_a_requests_processes_live_in_its_slots_cgroup_with_its_limits(cfg):
    seen = []

    def watch():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not seen:
            if members := GROUPS.members(0):
                seen.append((members, _read_limits()))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    [result] = run_in_sandbox("import time\ntime.sleep(1.5)\nprint('ok')\n", [""], cfg)
    watcher.join()
    assert result["stdout"] == "ok\n"
    assert seen, "no process of the request was in slot 0's cgroup"
    _, limits = seen[0]
    expected = _cgroup_limits(cfg)
    assert limits["pids"] == expected.max_processes
    assert limits["memory"] == expected.memory_bytes
    assert limits["cpus"] == expected.cpus
    assert GROUPS.members(0) == [], "the request left processes in its cgroup"


def _read_limits() -> dict:
    slot = {name: base / "slot-0" for name, base in GROUPS.bases.items()}
    if GROUPS.version == "v2":
        quota, period = (slot["cpu"] / "cpu.max").read_text().split()
        memory = (slot["memory"] / "memory.max").read_text()
    else:
        quota, period = (
            (slot["cpu"] / "cpu.cfs_quota_us").read_text(),
            (slot["cpu"] / "cpu.cfs_period_us").read_text(),
        )
        memory = (slot["memory"] / "memory.limit_in_bytes").read_text()
    return {
        "pids": int((slot["pids"] / "pids.max").read_text()),
        "memory": int(memory),
        "cpus": int(quota) / int(period),
    }


SPINNERS = """
import ctypes, time
libc = ctypes.CDLL(None)
for _ in range(16):
    if libc.fork() == 0:
        while True:
            pass
time.sleep(60)
"""
BUSY_BUT_CORRECT = (
    "import time\nstart = time.process_time()\n"
    "while time.process_time() - start < 1.0:\n    pass\nprint(sum(map(int, input().split())))\n"
)


def test_a_hostile_request_does_not_change_anothers_verdict(cfg):
    hostile_cfg = dataclasses.replace(cfg, slots=4, uid_base=cfg.uid_base + 10)
    hostile = threading.Thread(target=run_in_sandbox, args=(SPINNERS, [""] * 4, hostile_cfg))
    hostile.start()
    time.sleep(0.5)  # its 64 spinners are running
    tests = {"inputs": ["1 2", "3 4"], "outputs": ["3", "7"]}
    victim = evaluate(BUSY_BUT_CORRECT, tests, dataclasses.replace(cfg, slots=4, uid_base=cfg.uid_base + 20))
    hostile.join()
    assert victim["passing"] == [True, True], victim["feedback"]
