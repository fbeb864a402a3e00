"""Time budgets that test themselves (a pytest plugin, loaded by conftest.py).

``tests/time_budgets.yaml`` names the budget of each slow test in seconds on its reference machine;
any other test gets ``default_s``. A test's time is its setup, call and teardown together (a
fixture's start-up is paid by the first test that asks for it).

* A passing test that takes more than ``tolerance`` (1.5) times its scaled budget fails at
  teardown, naming its time and budget; a light test that ran beside a training run, at
  SCHED_IDLE on what the run left idle (tests/run_alone.py), is not judged on its time.
* A whole run that takes more than ``suite_limit_s`` (scaled) fails, naming its slowest tests.

The scale is the machine's speed against the reference machine: a short calibration (a fixed
pure-Python workload, the best of several tries) divided by the file's ``reference_calibration_s``,
never below 1 (a fast machine keeps the reference's budgets), at most ``max_scale``. Set
``COBALT_SPEED_SCALE`` to fix it, and ``COBALT_TIME_BUDGETS`` to read another file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import run_alone
import yaml

BUDGETS_FILE = Path(__file__).with_name("time_budgets.yaml")
SCALE_VARIABLE = "COBALT_SPEED_SCALE"  # set by the controller, inherited by xdist's workers
_started = pytest.StashKey[float]()
_spent = pytest.StashKey[float]()
_times: dict[str, float] = {}  # test id -> seconds, in the process that reports
# under xdist, on the controller: worker -> (start, stop) wall-clock seconds of each test phase it ran
_spans: dict[str, list[tuple[float, float]]] = {}


def calibration_s(tries: int = 5) -> float:
    """Seconds of a fixed pure-Python workload (the best of ``tries``): the interpreter's speed,
    which the slow tests' Ray, veRL and evaluator code mostly run on."""
    best = float("inf")
    for _ in range(tries):
        start = time.perf_counter()
        table: dict[int, int] = {}
        for i in range(1_500_000):
            table[i % 1024] = table.get(i % 1024, 0) + i * 3 // 7
        sorted(str(value) for value in table.values())
        best = min(best, time.perf_counter() - start)
    return best


def load_budgets(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
        return {
            "default_s": float(data["default_s"]),
            "tolerance": float(data["tolerance"]),
            "suite_limit_s": float(data["suite_limit_s"]),
            "reference_calibration_s": float(data["reference_calibration_s"]),
            "max_scale": float(data["max_scale"]),
            "tests": {str(name): float(seconds) for name, seconds in (data.get("tests") or {}).items()},
        }
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as error:
        raise pytest.UsageError(
            f"{path}: not a time-budget file ({error!r}); it names default_s, tolerance, "
            "suite_limit_s, reference_calibration_s, max_scale and tests"
        ) from error


def pytest_configure(config):
    path = Path(os.environ.get("COBALT_TIME_BUDGETS") or BUDGETS_FILE)
    budgets = load_budgets(path)
    if SCALE_VARIABLE not in os.environ:
        measured = calibration_s()
        scale = min(budgets["max_scale"], max(1.0, measured / budgets["reference_calibration_s"]))
        os.environ[SCALE_VARIABLE] = f"{scale:.3f}"
        budgets["calibration"] = measured
    budgets["scale"] = float(os.environ[SCALE_VARIABLE])
    budgets["path"] = path
    config.stash[_started] = time.monotonic()
    budgets["started_at"] = time.time()  # the workers' reports carry wall-clock times
    config._cobalt_budgets = budgets


def allowed_s(budgets: dict, nodeid: str) -> tuple[float, float]:
    """(the test's budget on the reference machine, the most it may take here)."""
    budget = budgets["tests"].get(nodeid, budgets["default_s"])
    return budget, budget * budgets["scale"] * budgets["tolerance"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    spent = item.stash.get(_spent, 0.0) + report.duration
    item.stash[_spent] = spent
    if not report.passed:
        item.stash[_spent] = float("-inf")  # a failed or skipped test is not judged on its time
    if report.when != "teardown" or spent < 0 or run_alone.ran_beside_training(item):
        return  # a light test beside a training run ran at SCHED_IDLE: its time is the run's, not its own
    budgets = item.config._cobalt_budgets
    budget, limit = allowed_s(budgets, item.nodeid)
    if spent > limit:
        report.outcome = "failed"
        report.longrepr = (
            f"time budget exceeded: {item.nodeid} took {spent:.0f} s, more than "
            f"{budgets['tolerance']} x its budget {budget:.0f} s x this machine's speed scale "
            f"{budgets['scale']:.2f} = {limit:.0f} s ({budgets['path'].name})"
        )


def pytest_runtest_logreport(report):
    """The controller's record of each test's time (under xdist the workers judge the budgets)."""
    _times[report.nodeid] = _times.get(report.nodeid, 0.0) + report.duration
    worker = getattr(report, "worker_id", None)  # set on the reports xdist's workers send
    if worker is not None:
        _spans.setdefault(worker, []).append((report.start, report.stop))


def workers_line(spans: dict[str, list[tuple[float, float]]], started_at: float, elapsed: float) -> str:
    """Each worker's busy seconds and when its last test ended: a worker that ends long before the
    run does, or sits idle in it, shows where the other's serial tests (tests/run_alone.py) set the
    run's length."""
    parts = []
    for worker, phases in sorted(spans.items()):
        busy = sum(stop - start for start, stop in phases)
        ended = max(stop for _, stop in phases) - started_at
        parts.append(f"{worker} busy {busy:.0f} s, its last test ended at {ended:.0f} s")
    return f"workers ({elapsed:.0f} s in all): " + "; ".join(parts)


def suite_limit_s(budgets: dict) -> float:
    """The run's limit, scaled by the slower of the calibrations at its start and at its end (a
    machine's speed moves within an hour; one short calibration may catch a fast moment)."""
    if "calibration" in budgets and "end_calibration" not in budgets:
        budgets["end_calibration"] = calibration_s()
        end_scale = budgets["end_calibration"] / budgets["reference_calibration_s"]
        budgets["suite_scale"] = min(budgets["max_scale"], max(budgets["scale"], end_scale))
    return budgets["suite_limit_s"] * budgets.get("suite_scale", budgets["scale"])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    budgets = getattr(config, "_cobalt_budgets", None)
    if budgets is None or hasattr(config, "workerinput"):
        return
    elapsed = time.monotonic() - config.stash[_started]
    limit = suite_limit_s(budgets)
    measured = ""
    if "calibration" in budgets:
        measured = (
            f", calibration {budgets['calibration']:.3f} s, at the end {budgets['end_calibration']:.3f} s"
        )
    terminalreporter.write_line(
        f"time budgets: the run took {elapsed:.0f} s of its {limit:.0f} s; machine speed scale "
        f"{budgets['scale']:.2f}{measured} (reference {budgets['reference_calibration_s']:.3f} s)"
    )
    if _spans:
        terminalreporter.write_line(workers_line(_spans, budgets["started_at"], elapsed))
    if elapsed > limit:
        terminalreporter.write_line(
            f"time budget exceeded: the whole run took {elapsed:.0f} s, more than its limit of "
            f"{budgets['suite_limit_s']:.0f} s scaled to {limit:.0f} s",
            red=True,
        )
        slowest = sorted(_times.items(), key=lambda pair: -pair[1])[:5]
        for name, seconds in slowest:
            terminalreporter.write_line(f"  {seconds:7.0f} s  {name}")


def pytest_sessionfinish(session, exitstatus):
    budgets = getattr(session.config, "_cobalt_budgets", None)
    if budgets is None or hasattr(session.config, "workerinput"):
        return
    elapsed = time.monotonic() - session.config.stash[_started]
    if elapsed > suite_limit_s(budgets) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
