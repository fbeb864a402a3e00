"""Two workers for the light tests, the heavy ones alone (a pytest plugin, loaded by conftest.py).

Under pytest-xdist (``scripts/test.sh`` asks for it), every test is one of:

* **alone**: it starts a Ray cluster or veRL of its own (``slow`` without the session's cluster,
  or ``memory_heavy``), or is marked ``alone`` (it loads the whole machine). Nothing runs beside it.
* **on the cluster worker**: it uses the session's Ray head, evaluator or engine. These run on one
  worker, after the alone ones (the same order as ``run_order``), so the session's cluster starts
  once and never beside a training run; they may run beside light tests.
* **one worker per module**: marked ``one_worker`` (its tests count the processes of the module's
  own sandbox uids, which another worker's test of that module would run).
* **light**: anything else, on any worker, two at a time.

Alone tests and the cluster worker's tests form one group, so they run in their ``run_order`` on
one worker: the workers write each test's group to a file as they collect, and the scheduler
(:class:`GroupScheduling`, xdist's scope scheduling with those groups as its scopes) reads it. (xdist's
own ``loadgroup`` renames node ids, which pytest 9.2 ignores.) "Alone" is a machine-wide
readers-writer lock on two files: a light test holds the room shared, an alone test holds it
exclusively; the turnstile keeps a waiting alone test from being starved by a stream of light
ones. Without xdist nothing is locked.
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
    """Nothing may run beside it: the paper chain's memory, a training run's cores, a cluster or a
    load of its own, or a count of the machine's processes (marked ``alone``)."""
    keywords = set(item.keywords)
    if "memory_heavy" in keywords or "alone" in keywords:
        return True
    return "slow" in keywords and not uses_session_cluster(item)


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


def group_of(item) -> str | None:
    """The group whose tests run on one worker, in order; None: the test goes anywhere."""
    if runs_alone(item) or uses_session_cluster(item):
        return HEAVY_GROUP
    if "one_worker" in item.keywords:
        return Path(str(item.path)).stem
    return None


def pytest_collection_modifyitems(config, items):
    items.sort(key=run_order)
    top = os.environ.get(LOCK_DIR_VARIABLE)
    if top and hasattr(config, "workerinput"):  # every worker collects the same: the last write wins
        groups = {item.nodeid: group for item in items if (group := group_of(item))}
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
def machine_share(alone: bool):
    """Hold the room: exclusively for an alone test, shared for the others."""
    top = os.environ.get(LOCK_DIR_VARIABLE)
    if not top:
        yield
        return
    turnstile, room = Path(top) / "turnstile", Path(top) / "room"
    if alone:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
            yield
        return
    with _flock(turnstile, fcntl.LOCK_EX):
        pass  # wait behind an alone test that is waiting for the room
    with _flock(room, fcntl.LOCK_SH):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if hasattr(item.config, "workerinput"):
        with machine_share(runs_alone(item)):
            yield
    else:
        yield
