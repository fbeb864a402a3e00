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
import threading
import time
from pathlib import Path

import pytest
from proc_helpers import wait_until
from sandbox_fixtures import backend_config, processes_of

from cobalt.sandbox import evaluate
from cobalt.sandbox.runner import WARM_POOL, get_backend, sweep_stale_slots, take_slot

pytestmark = pytest.mark.one_worker  # counts the processes of its own uids

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


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
@pytest.mark.skipif(not AS_ROOT, reason="sandboxes run as slot uids only when started as root")
def test_a_killed_launcher_leaves_no_sandbox_and_the_next_run_removes_its_scratch(cfg):
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, json.dumps(dataclasses.asdict(cfg))],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert wait_until(lambda: processes_of(slot_uids(cfg)), 30), "the sandbox never started"
        time.sleep(0.5)  # the program is asleep in its test by now
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        # Before: the landlock harness and its test lived on until the wall-clock backstop.
        assert wait_until(lambda: not processes_of(slot_uids(cfg)), 3), "the sandbox outlived its launcher"
        if cfg.backend == "landlock" or get_backend(cfg).host_scratch:
            assert run_dirs(cfg), "the killed request's scratch dir should still be there"
        sweep_stale_slots(cfg)  # what the next process does when it first uses the sandbox
        assert run_dirs(cfg) == []
        assert evaluate("print(1)", {"inputs": [""], "outputs": ["1"]}, cfg)["passing"] == [True]
    finally:
        launcher.kill()
        launcher.wait()


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
@pytest.mark.skipif(not AS_ROOT, reason="sandboxes run as slot uids only when started as root")
def test_the_sweep_ends_what_free_slots_uids_still_run(cfg):
    # the machine's last slot: slot locks are machine-wide, and the other test worker's requests
    # and idle warm sandboxes hold the lowest ones (the sweep rightly leaves a held slot alone)
    cfg = dataclasses.replace(cfg, slots=64)
    uid = cfg.uid_base + cfg.slots - 1
    stale = subprocess.Popen(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "600"]
    )
    try:
        assert wait_until(lambda: processes_of({uid}), 10)
        WARM_POOL.close_all()  # this process's own warm sandboxes hold their slots
        sweep_stale_slots(cfg)
        assert wait_until(lambda: stale.poll() is not None, 3), "a stale sandbox process survived the sweep"
    finally:
        stale.kill()
        stale.wait()


@pytest.mark.skipif(not AS_ROOT, reason="sandboxes run as slot uids only when started as root")
def test_a_slot_is_taken_clean_of_what_a_killed_holder_left(cfg):
    # A replica killed mid-burst frees its slot lock before its harness dies (CI at 2e1bbfe: a
    # surviving replica's request failed in the freed slot). Every uid has a leftover here, so
    # whichever slot is free, its new holder finds one.
    cfg = dataclasses.replace(cfg, slots=64)
    uids = sorted(slot_uids(cfg))
    stale = [
        subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "600"])
        for uid in uids
    ]
    try:
        assert wait_until(lambda: len(processes_of(set(uids))) == len(uids), 10)
        fd, slot = take_slot(cfg, time.monotonic() + 30)
        try:
            assert processes_of({slot.uid}) == [], "the slot's uid still runs a dead holder's process"
            assert len(processes_of(set(uids))) == len(uids) - 1, "only the taken slot's uid is touched"
        finally:
            os.close(fd)
    finally:
        for proc in stale:
            proc.kill()
            proc.wait()


# --- whatever a program plants in its scratch, the cleanup removes it (issue 20, item 3) ---------

DEEP_TREE = """
import os
fd = os.open(".", os.O_RDONLY)
for depth in range({depth}):
    try:
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
    except OSError:
        break
    os.close(fd)  # 256 descriptors at most
    fd = child
print(depth)
"""


def plant_traps(top: Path, depth: int, host_dir: Path, host_file: Path) -> None:
    """What a hostile program leaves in its scratch: a deep chain of directories (made with
    relative calls, as no path could reach its bottom), links to the host, a FIFO, a locked dir."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    os.symlink(host_dir, top / "link-to-host-dir")
    os.symlink(host_file, top / "link-to-host-file")
    os.link(host_file, top / "hard-link")
    os.mkfifo(top / "fifo")
    locked = top / "locked"
    locked.mkdir()
    (locked / "inside").write_text("x")
    locked.chmod(0)


def test_remove_tree_survives_every_trap(tmp_path):
    from cobalt.sandbox.harness import remove_tree

    host_dir, host_file = tmp_path / "host", tmp_path / "host-file"
    host_dir.mkdir()
    (host_dir / "keep").write_text("keep")
    host_file.write_text("keep")
    top = tmp_path / "scratch"
    top.mkdir()
    plant_traps(top, 50_000, host_dir, host_file)  # far past PATH_MAX and the recursion limit
    remove_tree(str(top))
    assert not top.exists()
    assert (host_dir / "keep").read_text() == "keep" and host_file.read_text() == "keep"


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_a_deep_tree_does_not_break_the_next_request(backend, tmp_path):
    scratch = Path(tempfile.mkdtemp(prefix="cobalt-deep-", dir="/tmp"))
    scratch.chmod(0o711)
    try:
        cfg = backend_config(backend, uid_base=UID_BASE[backend] + 50, slots=1, scratch_root=str(scratch))
        planted = evaluate(DEEP_TREE.format(depth=20_000), {"inputs": [""], "outputs": ["20000"]}, cfg)
        assert planted["passing"] == [False]  # stopped at the scratch bound, or it could not go deeper
        after = evaluate("print('clean')", {"inputs": [""], "outputs": ["clean"]}, cfg)
        assert after["passing"] == [True], after
        leftovers = [p for p in scratch.rglob("*") if p.name.startswith("run-")]
        assert leftovers == [], leftovers
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_remove_tree_never_follows_a_directory_swapped_for_a_link(tmp_path):
    """A slot process still alive during cleanup watches for the directories the cleanup hoists
    and swaps each for a link to a host directory: root must still remove only the scratch tree,
    never the link's target nor change its mode."""
    from cobalt.sandbox.harness import remove_tree

    host = tmp_path / "host"
    host.mkdir(mode=0o755)
    for attempt in range(40):
        for i in range(20):
            (host / f"keep{i}").write_text("keep")
        top = tmp_path / f"scratch-{attempt}"
        for i in range(30):
            (top / f"d{i}" / "e").mkdir(parents=True)
            (top / f"d{i}" / "e" / "f").write_text("x")
        done = threading.Event()
        swapper = threading.Thread(target=swap_hoisted_dirs_for_links, args=(top, host, done))
        swapper.start()
        try:
            remove_tree(str(top))
        finally:
            done.set()
            swapper.join()
        assert sorted(p.name for p in host.iterdir()) == sorted(f"keep{i}" for i in range(20)), attempt
        assert host.stat().st_mode & 0o777 == 0o755
        shutil.rmtree(top, ignore_errors=True)  # what the swapper moved aside


def swap_hoisted_dirs_for_links(top: Path, host: Path, done: threading.Event) -> None:
    while not done.is_set():
        try:
            names = os.listdir(top)
        except OSError:
            return
        for name in names:
            if name.startswith(".rm-") and not name.endswith("-away"):
                try:
                    os.rename(top / name, top / f"{name}-away")
                    os.symlink(host, top / name)
                except OSError:
                    pass
