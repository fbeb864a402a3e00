"""bench/bench_ci_load.py's per-test ledger: each process's CPU and memory charged to the test it
was started under, read from its environment as pytest sets it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_ci_load", ROOT / "bench/bench_ci_load.py")
bench = sys.modules["bench_ci_load"] = importlib.util.module_from_spec(spec)  # dataclasses look it up
spec.loader.exec_module(bench)

TEST = "tests/test_x.py::test_y[a b]"


def environ(**variables: str) -> bytes:
    return b"\0".join(f"{k}={v}".encode() for k, v in variables.items()) + b"\0"


def test_a_process_is_charged_to_the_test_named_in_its_environment():
    assert bench.test_of(environ(HOME="/h", PYTEST_CURRENT_TEST=f"{TEST} (call)")) == TEST
    # an xdist worker's environment is what it started with: its title names the test it runs
    assert (
        bench.test_of(environ(PYTEST_XDIST_WORKER="gw0"), f"[pytest-xdist running] {TEST}\0".encode()) == TEST
    )
    assert bench.test_of(environ(PYTEST_XDIST_WORKER="gw0"), b"[pytest-xdist idle]\0") == bench.WORKERS
    assert bench.test_of(environ(HOME="/h")) == bench.OUTSIDE
    assert bench.test_of(b"") == bench.OUTSIDE


def test_the_ledger_charges_what_each_process_spent_while_sampled():
    ledger = bench.TestLedger()
    early = bench.ProcessSample((10, 1), 100.0, 2**30, bench.OUTSIDE)  # alive before the command
    ledger.add([early])
    ledger.add(
        [
            bench.ProcessSample((10, 1), 103.0, 2**30, bench.OUTSIDE),
            bench.ProcessSample((20, 5), 4.0, 2**30, TEST),
            bench.ProcessSample((21, 5), 1.0, 2**30, TEST),
        ]
    )
    # pid 20 ended and its number went to another process of another test
    ledger.add([bench.ProcessSample((20, 9), 2.5, 2**29, "tests/test_z.py::test_w")])
    table = ledger.table()
    assert table[TEST] == {"cpu_s": 5.0, "peak_rss_gib": 2.0}
    assert table[bench.OUTSIDE] == {"cpu_s": 3.0, "peak_rss_gib": 1.0}
    assert table["tests/test_z.py::test_w"] == {"cpu_s": 2.5, "peak_rss_gib": 0.5}
    assert list(table) == [TEST, bench.OUTSIDE, "tests/test_z.py::test_w"]  # costliest first


def test_the_sample_of_this_machine_finds_a_child_started_under_a_test():
    env = {**os.environ, "PYTEST_CURRENT_TEST": f"{TEST} (call)"}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    try:
        mine = [s for s in bench.sample_processes() if s.key[0] == child.pid]
    finally:
        child.kill()
        child.wait()
    assert len(mine) == 1 and mine[0].test == TEST and mine[0].rss_bytes > 0 and mine[0].cpu_s >= 0


def test_per_test_refuses_to_overwrite_a_file(tmp_path):
    kept = tmp_path / "table.json"
    kept.write_text("earlier run")
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench/bench_ci_load.py"), "--per-test", str(kept), "--", "true"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2 and f"--per-test {kept} exists" in done.stderr
    assert kept.read_text() == "earlier run"
