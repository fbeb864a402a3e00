"""The kernel's share of the per-request limits: each request's processes live in their slot's
cgroup (v2, or v1 as on this project's machines), with its ceilings, and a hostile request does
not change another request's verdict."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path

import pytest
from sandbox_fixtures import FORKED_SPINNERS, backend_config

from cobalt.sandbox import cgroups, default_config, evaluate
from cobalt.sandbox.runner import (
    WARM_POOL,
    RequestTimeout,
    _cgroup_limits,
    request_cgroups,
    run_in_sandbox,
)

GROUPS = request_cgroups(dataclasses.replace(default_config(), cgroups="auto"))
needs_cgroups = pytest.mark.skipif(GROUPS is None, reason="no usable cgroups here (needs root)")


@pytest.fixture(params=["bwrap", "landlock"])
def cfg(request):
    uid_base = {"bwrap": 63500, "landlock": 63600}[request.param]
    return backend_config(request.param, uid_base=uid_base, slots=1, cgroups="auto")


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
    # nothing but a warm sandbox's own processes (bwrap and its init) stays in the group
    assert set(GROUPS.members(0)) <= WARM_POOL.own_processes(), "the request left processes in its cgroup"


def _read_limits() -> dict:
    slot = {name: base / "slot-0" for name, base in GROUPS.bases.items()}
    memory_file = "memory.max" if GROUPS.version == "v2" else "memory.limit_in_bytes"
    return {
        "pids": int((slot["pids"] / "pids.max").read_text()),
        "memory": int((slot["memory"] / memory_file).read_text()),
    }


BUSY_BUT_CORRECT = (
    "import time\nstart = time.process_time()\n"
    "while time.process_time() - start < 1.0:\n    pass\nprint(sum(map(int, input().split())))\n"
)


@pytest.mark.alone  # 64 spinners load the whole machine
def test_a_hostile_request_does_not_change_anothers_verdict(cfg):
    hostile_cfg = dataclasses.replace(cfg, slots=4, uid_base=cfg.uid_base + 10)

    def attack():
        try:
            run_in_sandbox(FORKED_SPINNERS, [""] * 4, hostile_cfg)
        except RequestTimeout:
            pass  # on a busy machine its 16 CPU-s may take longer than the request's wall bound

    hostile = threading.Thread(target=attack)
    hostile.start()
    time.sleep(0.5)  # its 64 spinners are running
    tests = {"inputs": ["1 2", "3 4"], "outputs": ["3", "7"]}
    victim = evaluate(BUSY_BUT_CORRECT, tests, dataclasses.replace(cfg, slots=4, uid_base=cfg.uid_base + 20))
    hostile.join()
    assert victim["passing"] == [True, True], victim["feedback"]


# --- which cgroups a host offers (fake /proc and cgroup trees) ------------------------------------


def _fake_host(tmp_path, cgroup: str, mounts: list[tuple[str, str, str]]) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    lines = [
        f"{30 + i} 23 0:{30 + i} / {point} rw,relatime - {fstype} {fstype} {options}"
        for i, (fstype, point, options) in enumerate(mounts)
    ]
    (proc / "mountinfo").write_text("\n".join(lines) + "\n")
    return proc


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are used only as root")
def test_cgroup_v2_with_delegated_controllers_is_preferred(tmp_path):
    own = tmp_path / "unified" / "user.slice"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    proc = _fake_host(tmp_path, "0::/user.slice\n", [("cgroup2", str(tmp_path / "unified"), "rw")])
    found = cgroups.detect(proc)
    assert found is not None and found.version == "v2"
    base = own / f"cobalt-sandbox-{os.geteuid()}"
    assert set(found.bases.values()) == {base}
    assert (base / "cgroup.subtree_control").read_text().split() == ["+pids", "+memory"]


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are used only as root")
def test_cgroup_v1_when_v2_has_no_controllers_and_none_without_either(tmp_path):
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("\n")
    v1 = [("cgroup", str(tmp_path / c), f"rw,{c}") for c in ("pids", "memory", "cpuacct")]
    for _, point, _ in v1:
        Path(point, "box").mkdir(parents=True)
    cgroup = "4:cpuacct:/box\n3:pids:/box\n2:memory:/box\n1:cpu:/\n0::/\n"
    proc = _fake_host(tmp_path, cgroup, [("cgroup2", str(tmp_path / "unified"), "rw"), *v1])
    found = cgroups.detect(proc)
    assert found is not None and found.version == "v1"
    assert found.bases["memory"] == tmp_path / "memory" / "box" / f"cobalt-sandbox-{os.geteuid()}"
    only_v2 = tmp_path / "only-v2"
    only_v2.mkdir()
    assert (
        cgroups.detect(_fake_host(only_v2, "0::/\n", [("cgroup2", str(tmp_path / "unified"), "rw")])) is None
    )


def test_the_slots_cpu_counter_is_read_in_either_version(tmp_path):
    v1 = {name: tmp_path / "v1" / name for name in ("pids", "memory", "cpuacct")}
    (v1["cpuacct"] / "slot-3").mkdir(parents=True)
    (v1["cpuacct"] / "slot-3" / "cpuacct.usage").write_text("2500000000\n")  # nanoseconds
    assert cgroups.RequestCgroups("v1", v1).cpu_seconds(3) == 2.5
    v2 = tmp_path / "v2"
    (v2 / "slot-3").mkdir(parents=True)
    (v2 / "slot-3" / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert cgroups.RequestCgroups("v2", dict.fromkeys(v1, v2)).cpu_seconds(3) == 1.5


def test_a_bare_yaml_off_or_on_means_what_it_says():
    # YAML reads `cgroups: off` as false and `on` as true
    assert cgroups_setting(False) == "off" and cgroups_setting(True) == "auto"
    with pytest.raises(ValueError, match=r"sandbox\.cgroups must be auto or off"):
        cgroups_setting("sometimes")


def cgroups_setting(value) -> str:
    return dataclasses.replace(default_config(), cgroups=value).cgroups
