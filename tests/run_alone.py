"""Two workers for the light tests, the heavy ones alone (a pytest plugin, loaded by conftest.py).

Under pytest-xdist (``scripts/test.sh`` asks for it), every test is one of:

* **alone**: it starts a Ray cluster of its own (``slow`` without the session's cluster), holds
  most of the memory (``memory_heavy``), or is marked ``alone`` (it loads the whole machine).
  Nothing runs beside it.
* **a training run**: ``slow`` and ``train`` on a cluster of its own (the learning checks, the
  quickstart, GRPO on two nodes). Its ranks and rollout servers leave about a fifth of the two
  cores idle (docs/benchmarks.md), so light tests run beside it, but only on that idle share:
  every light test runs at ``SCHED_IDLE``, which takes a CPU only when nothing else wants it. (At
  nice 0 they took the CPU of Ray's workers, which run at nice 15: the learning checks ran 1.5-2x
  longer.) Tests marked ``timing`` (they assert wall-clock times) run in the heavy group, after
  the training runs, at full priority.
* **on the cluster worker**: it uses the session's Ray head, evaluator or engine. These run on one
  worker, after the alone ones and the training runs (the same order as ``run_order``), so the
  session's cluster starts once and never beside a training run; they may run beside light tests.
* **one worker per module**: marked ``one_worker`` (its tests count the processes of the module's
  own sandbox uids, which another worker's test of that module would run).
* **light**: anything else, on any worker, two at a time.

Alone tests, training runs and the cluster worker's tests form one group, so they run in their
``run_order`` on one worker: the workers write each test's group to a file as they collect, and the scheduler
(:class:`GroupScheduling`, xdist's scope scheduling with those groups as its scopes) reads it. (xdist's
own ``loadgroup`` renames node ids, which pytest 9.2 ignores.) "Alone" is a machine-wide
readers-writer lock on two files: a light test holds the room shared, an alone test holds it
exclusively; the turnstile keeps a waiting alone test from being starved by a stream of light
ones. A training run takes no lock (what must not run beside it is in its group, after it); it
notes in a file that it runs, so that a light test beside it is not judged on its time
(tests/time_budget.py). Without xdist nothing is locked.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

SESSION_FIXTURES = {"ray_cluster", "evaluator_app", "tiny_engine"}
HEAVY_GROUP = "heavy"  # the group of the alone tests and the session cluster's tests
LOCK_DIR_VARIABLE = "COBALT_TEST_LOCK_DIR"  # this run's locks and groups file, made by the controller
GROUPS_FILE = "groups.json"


def uses_session_cluster(item) -> bool:
    return bool(SESSION_FIXTURES & set(item.fixturenames))


def runs_alone(item) -> bool:
    """Nothing may run beside it: the paper chain's memory, a cluster or a load of its own, or a
    count of the machine's processes (marked ``alone``)."""
    keywords = set(item.keywords)
    if "memory_heavy" in keywords or "alone" in keywords:
        return True
    return "slow" in keywords and not uses_session_cluster(item) and not is_training_run(item)


def is_training_run(item) -> bool:
    """A whole training run on a cluster of its own: light tests beside it, at SCHED_IDLE."""
    keywords = set(item.keywords)
    return (
        {"train", "slow"} <= keywords
        and not {"memory_heavy", "alone"} & keywords
        and not uses_session_cluster(item)
    )


def run_order(item) -> int:
    """0: tests marked ``memory_heavy`` (the paper chain's rehearsal: 4 ranks and 4 rollout engines,
    20.5 GiB at peak), before any session fixture's Ray head and engines hold memory: after them,
    in CI, Ray's memory monitor killed the rehearsal's workers at 22.5 of 23.6 GB.
    1: whole training runs on clusters of their own, before the session's cluster, evaluator and
    engine exist: idle, those take a tenth of the two cores (docs/benchmarks.md), which the runs
    would lose. 2: the rest, in file order."""
    if "memory_heavy" in item.keywords:
        return 0
    if {"train", "slow"} <= set(item.keywords) and not uses_session_cluster(item):
        return 1
    return 2


def pytest_configure(config):
    config.addinivalue_line("markers", "alone: loads the whole machine: nothing runs beside it")
    config.addinivalue_line(
        "markers",
        "one_worker: counts the processes of its module's sandbox uids: the module's tests run on one worker",
    )
    config.addinivalue_line(
        "markers", "timing: asserts wall-clock times: never beside a training run, never at SCHED_IDLE"
    )
    if is_controller(config) and distributed(config):
        # the workers inherit the variable: a directory of this run's own, never an outer run's
        # (a test that runs pytest on two workers must not queue behind the lock its own test holds)
        os.environ[LOCK_DIR_VARIABLE] = tempfile.mkdtemp(prefix="cobalt-test-locks-")


def pytest_unconfigure(config):
    if is_controller(config) and distributed(config):
        shutil.rmtree(os.environ.pop(LOCK_DIR_VARIABLE, ""), ignore_errors=True)


def is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def distributed(config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and getattr(config.option, "dist", "no") != "no"


def group_of(item, timing_modules: frozenset[str] = frozenset()) -> str | None:
    """The group whose tests run on one worker, in order; None: the test goes anywhere. A
    ``timing`` test joins the heavy group, after the training runs (waiting for one elsewhere
    would hold up its worker's light tests), and so does its module if that is ``one_worker``
    (``timing_modules``)."""
    module = Path(str(item.path)).stem
    if runs_alone(item) or is_training_run(item) or uses_session_cluster(item) or "timing" in item.keywords:
        return HEAVY_GROUP
    if "one_worker" in item.keywords:
        return HEAVY_GROUP if module in timing_modules else module
    return None


def pytest_collection_modifyitems(config, items):
    items.sort(key=run_order)
    top = os.environ.get(LOCK_DIR_VARIABLE)
    if top and hasattr(config, "workerinput"):  # every worker collects the same: the last write wins
        timing = frozenset(Path(str(item.path)).stem for item in items if "timing" in item.keywords)
        groups = {item.nodeid: group for item in items if (group := group_of(item, timing))}
        scratch = Path(top) / f"{GROUPS_FILE}.{config.workerinput['workerid']}"
        scratch.write_text(json.dumps(groups))
        scratch.replace(Path(top) / GROUPS_FILE)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return GroupScheduling(config, log)


def _scheduler_base():
    try:
        from xdist.scheduler import LoadScopeScheduling
    except ImportError:  # no xdist: the hook above is never called
        return object
    return LoadScopeScheduling


class GroupScheduling(_scheduler_base()):
    """xdist's scope scheduling, a scope being a test's group (or the test itself): a group goes to
    one worker whole, in collection order; the biggest scopes are handed out first."""

    _groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:  # collection is complete before the first call
            path = Path(os.environ[LOCK_DIR_VARIABLE]) / GROUPS_FILE
            self._groups = json.loads(path.read_text()) if path.exists() else {}
        return self._groups.get(nodeid, nodeid)


@contextmanager
def _flock(path: Path, mode: int):
    with open(path, "a+") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _room(top: Path, name: str, exclusive: bool):
    """A readers-writer lock on the file ``name``, with a turnstile that keeps a waiting writer
    from being starved by a stream of readers."""
    turnstile, room = top / f"{name}.turnstile", top / name
    if exclusive:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
            yield
        return
    with _flock(turnstile, fcntl.LOCK_EX):
        pass  # wait behind a writer that is waiting for the room
    with _flock(room, fcntl.LOCK_SH):
        yield


# {"running": bool, "runs": n}: is a training run in progress, and how many have begun
TRAINING_FILE = "training.json"


def training_state(top: Path) -> tuple[bool, int]:
    try:
        state = json.loads((top / TRAINING_FILE).read_text())
        return bool(state["running"]), int(state["runs"])
    except (OSError, ValueError, KeyError):
        return False, 0


def _note_training(top: Path, running: bool) -> None:
    _, runs = training_state(top)
    scratch = top / f"{TRAINING_FILE}.{os.getpid()}"
    scratch.write_text(json.dumps({"running": running, "runs": runs + running}))
    scratch.replace(top / TRAINING_FILE)


_training_at_start = pytest.StashKey[tuple[bool, int]]()


def ran_beside_training(item) -> bool:
    """Did a training run overlap this (light) test? Its wall time then says little of it."""
    top = os.environ.get(LOCK_DIR_VARIABLE)
    if not top or _training_at_start not in item.stash or is_training_run(item):
        return False
    running_then, runs_then = item.stash[_training_at_start]
    running_now, runs_now = training_state(Path(top))
    return running_then or running_now or runs_now != runs_then


@contextmanager
def idle_priority():
    """Run the calling thread (and what it starts) at SCHED_IDLE; back to SCHED_OTHER after."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux, or not allowed: run as before
        yield
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


@contextmanager
def machine_share(item):
    """Hold what an item needs: an alone test the machine; a training run nothing (light tests run
    beside it at SCHED_IDLE; it notes that it runs); the session cluster's and ``timing`` tests a
    share of the machine at full priority; the other light tests a share of it, at SCHED_IDLE."""
    top = os.environ.get(LOCK_DIR_VARIABLE)
    if not top:
        yield
        return
    top = Path(top)
    if runs_alone(item):
        with _room(top, "room", exclusive=True):
            yield
    elif is_training_run(item):  # no lock: light tests run beside it, the rest of its group after it
        _note_training(top, running=True)
        try:
            yield
        finally:
            _note_training(top, running=False)
    elif "timing" in item.keywords or uses_session_cluster(item):  # heavy group: after the training runs
        with _room(top, "room", exclusive=False):
            yield
    else:
        with _room(top, "room", exclusive=False), idle_priority():
            item.stash[_training_at_start] = training_state(top)
            yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if hasattr(item.config, "workerinput"):
        with machine_share(item):
            yield
    else:
        yield
