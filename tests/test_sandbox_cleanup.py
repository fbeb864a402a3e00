"""A launcher killed mid-request (SIGKILL, an evaluator replica lost) leaves no sandbox running, and
what it left on disk (the scratch dir with the user's program) is removed by the next run."""

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
from pathlib import Path

import pytest
from sandbox_fixtures import backend_config, processes_of

from cobalt.sandbox import evaluate
from cobalt.sandbox.runner import get_backend, sweep_stale_slots

ROOT = Path(__file__).resolve().parents[1]
AS_ROOT = os.geteuid() == 0
UID_BASE = {"bwrap": 62800, "landlock": 62900}  # uids of their own: leftovers are attributable
SLOTS = 4

LAUNCHER = """
import json, sys
from cobalt.sandbox import SandboxConfig, evaluate
cfg = SandboxConfig(**json.loads(sys.argv[1]))
program = "import time\\nprint('started', flush=True)\\ntime.sleep(600)\\n"
evaluate(program, {"inputs": [""], "outputs": [""]}, cfg)
"""


@pytest.fixture(params=["bwrap", "landlock"])
def cfg(request):
    scratch = Path(tempfile.mkdtemp(prefix="cobalt-cleanup-", dir="/tmp"))
    scratch.chmod(0o711)  # the slot uids pass through it to their own dirs
    yield backend_config(
        request.param,
        uid_base=UID_BASE[request.param],
        slots=SLOTS,
        wall_timeout_s=60,
        request_timeout_s=60,
        scratch_root=str(scratch),
    )
    shutil.rmtree(scratch, ignore_errors=True)


def slot_uids(cfg) -> set[int]:
    return set(range(cfg.uid_base, cfg.uid_base + cfg.slots))


def run_dirs(cfg) -> list[Path]:
    return sorted(Path(cfg.scratch_root).glob("cobalt-scratch-*/slot-*/*"))


def wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.skipif(not AS_ROOT, reason="sandboxes run as slot uids only when started as root")
def test_a_killed_launcher_leaves_no_sandbox_and_the_next_run_removes_its_scratch(cfg):
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, json.dumps(dataclasses.asdict(cfg))],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert wait_for(lambda: processes_of(slot_uids(cfg)), 30), "the sandbox never started"
        time.sleep(0.5)  # the program is asleep in its test by now
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        # Before: the landlock harness and its test lived on until the wall-clock backstop.
        assert wait_for(lambda: not processes_of(slot_uids(cfg)), 3), "the sandbox outlived its launcher"
        if cfg.backend == "landlock" or get_backend(cfg).host_scratch:
            assert run_dirs(cfg), "the killed request's scratch dir should still be there"
        sweep_stale_slots(cfg)  # what the next process does when it first uses the sandbox
        assert run_dirs(cfg) == []
        assert evaluate("print(1)", {"inputs": [""], "outputs": ["1"]}, cfg)["passing"] == [True]
    finally:
        launcher.kill()
        launcher.wait()


@pytest.mark.skipif(not AS_ROOT, reason="sandboxes run as slot uids only when started as root")
def test_the_sweep_ends_what_free_slots_uids_still_run(cfg):
    uid = cfg.uid_base + SLOTS - 1
    stale = subprocess.Popen(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "600"]
    )
    try:
        assert wait_for(lambda: processes_of({uid}), 10)
        sweep_stale_slots(cfg)
        assert wait_for(lambda: stale.poll() is not None, 3), "a stale sandbox process survived the sweep"
    finally:
        stale.kill()
        stale.wait()
