"""The harness on its own (outside any sandbox): it must never signal processes it does not own."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from cobalt.sandbox.config import SandboxConfig
from cobalt.sandbox.runner import HARNESS_SOURCE, _parse_results, request_frame


def test_harness_run_by_hand_leaves_other_processes_alone(tmp_path):
    # Regression: end-of-run cleanup used kill(-1) unconditionally, which outside a sandbox (as
    # root) kills every process on the machine.
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        limits = SandboxConfig().harness_limits(dedicated_uid=False)
        results = _run_harness("print(int(input()) + 1)", [b"1", b"41"], limits, tmp_path)
        assert bystander.poll() is None, "the harness killed a process outside its sandbox"
        assert [r["stdout"] for r in results] == ["2\n", "42\n"]
        assert (Path(tmp_path) / "solution.py").read_text() == "print(int(input()) + 1)"
    finally:
        bystander.kill()
        bystander.wait()


def test_result_parser_rejects_forged_or_torn_records():
    good = b"0 exit 0 0.0010 3 0\nhi\n"
    forged = b"7 exit 0 0.0 1 0\nx"  # index out of range
    torn = b"1 exit 0 0.0 100 0\nshort"  # claims more bytes than it sent
    results = _parse_results(good + forged + torn, b"", -9, 2)
    assert results[0]["stdout"] == "hi\n" and results[0]["status"] == "exit"
    assert results[1]["status"] == "crashed" and "exit status -9" in results[1]["message"]


def _run_harness(code, inputs, limits, cwd):
    request = {"code": code, "inputs": inputs, "limits": limits, "landlock": None}
    done = subprocess.run(
        ["/usr/bin/python3", "-S", "-c", HARNESS_SOURCE],
        input=request_frame(request),
        capture_output=True,
        cwd=cwd,
        timeout=60,
    )
    return _parse_results(done.stdout, done.stderr, done.returncode, len(inputs))


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_wall_backstop_ends_blocked_programs_but_not_computing_ones(tmp_path):
    # Regression: a correct program starved by a busy machine (CI) hit the wall backstop and was
    # reported as timed out. A short wall window stands in for the starvation here.
    limits = {**SandboxConfig().harness_limits(dedicated_uid=False), "wall_seconds": 0.3}
    computing = (
        "import time\nstart = time.process_time()\n"
        "while time.process_time() - start < 1.0:\n    pass\nprint('done')\n"
    )
    sleeping = "import time\ntime.sleep(3)\nprint('done')\n"
    assert _run_harness(computing, [b""], limits, tmp_path)[0]["stdout"] == "done\n"
    start = time.monotonic()
    blocked = _run_harness(sleeping, [b""], limits, tmp_path)[0]
    assert blocked["status"] == "timeout" and blocked["stdout"] == ""
    assert time.monotonic() - start < 2.5


def test_the_warm_end_line_is_found_only_between_records():
    from cobalt.sandbox.runner import SandboxError, _end_of_records

    record = b"0 exit 0 0.0010 6 0\nend 0\n"  # a program that printed "end 0": output, not the end
    assert _end_of_records(record) is None
    assert _end_of_records(record + b"end 0\n") == len(record)
    assert _end_of_records(b"end 1\n") == 0  # no record at all: a request of no tests, or a crash
    for torn in (b"0 exit 0\n", b"0 exit 0 0.0 x 0\n", b"0 exit 0 0.0 3 0 7\n"):
        with pytest.raises(SandboxError, match="torn record"):
            _end_of_records(torn)
