"""Warm sandboxes (bwrap): one per slot, kept between requests; its init never runs a program and
forks a fresh request process per request. Nothing of one request may reach the next (files,
processes, message queues), nothing a program does may reach the init or the process that reports
its verdict, and anything unusual discards the sandbox."""

from __future__ import annotations

import dataclasses
import time

import pytest
from proc_helpers import wait_until
from sandbox_fixtures import backend_config, processes_of

from cobalt.sandbox.runner import WARM_POOL, RequestTimeout, _try_slot, run_in_sandbox

pytestmark = pytest.mark.one_worker  # counts the processes of its own uids

SLOTS = 2


@pytest.fixture
def cfg():
    cfg = backend_config("bwrap", uid_base=63700, slots=SLOTS, warm=True)
    WARM_POOL.close_all()
    yield cfg
    WARM_POOL.close_all()


def slot_uids(cfg) -> range:
    return range(cfg.uid_base, cfg.uid_base + cfg.slots)


def idle_sandboxes(cfg) -> list[int]:
    """The bwrap pids of this process's idle warm sandboxes of ``cfg``."""
    return [sandbox.proc.pid for sandbox in WARM_POOL._idle.get(cfg, [])]


PLANT = r"""
import ctypes, os, time
libc = ctypes.CDLL(None)
for path in ("/tmp/planted", "/dev/shm/planted", "planted-here"):
    open(path, "w").write("secret")
os.makedirs("/tmp/deep/er", exist_ok=True)
if libc.fork() == 0:            # a daemon, out of the test's process group and session
    libc.setsid()
    if libc.fork() == 0:
        time.sleep(60)
    os._exit(0)
print("planted")
"""

LOOK = r"""
import os
mine = {os.getpid(), os.getppid(), 1}  # this test, the request process, the init
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine]
files = sorted(set(os.listdir("/tmp")) - {"solution.py", os.path.basename(os.getcwd())})
print("others", others, "files", files, sorted(os.listdir("/dev/shm")), sorted(os.listdir(".")))
"""


def test_a_request_finds_nothing_of_the_one_before_in_the_same_sandbox(cfg):
    [planted] = run_in_sandbox(PLANT, [""], cfg)
    assert planted["stdout"] == "planted\n", planted
    [first] = idle_sandboxes(cfg)
    assert processes_of(slot_uids(cfg)) == [], "the daemon outlived its request"
    [seen] = run_in_sandbox(LOOK, [""], cfg)
    assert idle_sandboxes(cfg) == [first], "the second request did not reuse the warm sandbox"
    assert seen["stdout"] == "others [] files [] [] []\n", seen


SIGNAL_THE_REPORTERS = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.kill(-1, 9)  # returns 0 even when every process it tried refused the signal
results = [libc.kill(os.getppid(), 9), libc.kill(1, 9), libc.ptrace(16, 1, 0, 0)]
for path in ("/proc/1/fd/1", "/proc/1/mem", "/proc/%d/fd/1" % os.getppid()):
    try:
        open(path, "wb").write(b"0 exit 0 0.0 5 0\nFORGE")
        results.append("wrote " + path)
    except OSError:
        results.append("refused")
print(*results)
"""


def test_a_program_cannot_signal_trace_or_write_to_the_processes_that_report_it(cfg):
    [result] = run_in_sandbox(SIGNAL_THE_REPORTERS, [""], cfg)
    assert result["status"] == "exit", result  # the request process lived to report it
    assert result["stdout"] == "-1 -1 -1 refused refused refused\n", result
    [first] = idle_sandboxes(cfg)
    [again] = run_in_sandbox("print(6 * 7)", [""], cfg)
    assert again["stdout"] == "42\n" and idle_sandboxes(cfg) == [first]


def test_posix_message_queues_are_refused(cfg):
    # they would outlive their processes in the IPC namespace that a warm sandbox's requests share
    code = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.mq_open(b'/q', 0o102, 0o600, None), ctypes.get_errno())\n"
    )
    [result] = run_in_sandbox(code, [""], cfg)
    assert result["stdout"] == "-1 1\n", result  # EPERM


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_a_request_past_its_deadline_discards_its_sandbox(cfg):
    run_in_sandbox("print(1)", [""], cfg)
    [first] = idle_sandboxes(cfg)
    slow = dataclasses.replace(cfg, request_wall_timeout_s=1.0, wall_timeout_s=30)
    WARM_POOL._idle[slow] = WARM_POOL._idle.pop(cfg)  # the same sandbox, under the shorter deadline
    with pytest.raises(RequestTimeout):
        run_in_sandbox("import time\ntime.sleep(20)\n", [""], slow)
    assert idle_sandboxes(slow) == []
    # its processes end with it (a pid namespace's last processes go a moment after its init)
    assert wait_until(lambda: processes_of(slot_uids(cfg)) == [], 5), processes_of(slot_uids(cfg))
    run_in_sandbox("print(1)", [""], cfg)
    assert idle_sandboxes(cfg) and idle_sandboxes(cfg) != [first]


@pytest.mark.alone  # slots are the machine's: another worker's request may hold one at that moment
def test_an_idle_sandbox_gives_its_slot_back(cfg):
    quick = dataclasses.replace(cfg, warm_idle_s=0.5)
    run_in_sandbox("print(1)", [""], quick)
    assert idle_sandboxes(quick)
    assert wait_until(lambda: not idle_sandboxes(quick), 10), "the idle sandbox was never closed"
    assert wait_until(lambda: processes_of(slot_uids(cfg)) == [], 5)
    for index in range(SLOTS):  # every slot is free again for other processes
        held = _try_slot(quick, index)
        assert held is not None
        __import__("os").close(held[0])


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_concurrent_requests_each_get_a_sandbox_of_their_own(cfg):
    from concurrent.futures import ThreadPoolExecutor

    code = "import time, os\ntime.sleep(0.5)\nprint(len(os.listdir('/tmp')))\n"
    started = time.monotonic()
    with ThreadPoolExecutor(SLOTS) as pool:
        results = list(pool.map(lambda _: run_in_sandbox(code, [""], cfg), range(2 * SLOTS)))
    assert [r["stdout"] for [r] in results] == ["2\n"] * (2 * SLOTS)  # solution.py and its own dir
    assert len(idle_sandboxes(cfg)) == SLOTS and time.monotonic() - started < 10


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_a_request_with_no_record_ends_at_once(cfg):
    # its "end" line comes first in the stream (a bug once waited for the deadline there)
    started = time.monotonic()
    assert run_in_sandbox("print(1)", [], cfg) == []
    assert time.monotonic() - started < 5 and idle_sandboxes(cfg)


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_idle_sandboxes_of_another_config_give_way_when_no_slot_is_free(cfg):
    one, other = (dataclasses.replace(cfg, slots=1, uid_base=base) for base in (63700, 63710))
    run_in_sandbox("print(1)", [""], one)
    assert idle_sandboxes(one)  # it holds slot 0, the only one either config has
    started = time.monotonic()
    [result] = run_in_sandbox("print(2)", [""], other)
    assert result["stdout"] == "2\n" and time.monotonic() - started < 5
    assert idle_sandboxes(one) == [] and idle_sandboxes(other)


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_a_sandbox_that_died_while_idle_is_replaced_without_failing_a_request(cfg):
    import os
    import signal

    run_in_sandbox("print(1)", [""], cfg)
    [dead] = idle_sandboxes(cfg)
    os.kill(dead, signal.SIGKILL)  # e.g. the kernel's OOM killer
    assert wait_until(lambda: WARM_POOL._idle[cfg][0].proc.poll() is not None, 5)
    [result] = run_in_sandbox("print(2)", [""], cfg)
    assert result["stdout"] == "2\n" and idle_sandboxes(cfg) not in ([], [dead])
