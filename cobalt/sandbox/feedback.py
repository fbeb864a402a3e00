"""Verdicts and the feedback text shown to the model (reference section 2, exact strings)."""

from __future__ import annotations

import decimal

REQUEST_TIMEOUT_FEEDBACK = (
    "TimeoutError: Program timed out because it did not finish running all test cases within 30 seconds."
)
TRUNCATION_MARK = "...(truncated) ..."
KEEP_CHARS = 200  # each side of the truncation mark


def trunc(text: str) -> str:
    """Strip, then keep the first and last 200 characters of anything over 400."""
    text = text.strip()
    if len(text) <= 2 * KEEP_CHARS:
        return text
    return text[:KEEP_CHARS] + TRUNCATION_MARK + text[-KEEP_CHARS:]


def is_pass(run: dict, expected: str, judge: str = "reference") -> bool:
    """A clean exit whose output matches: the stripped texts equal (the reference), or with
    ``judge="lcb"`` as LiveCodeBench grades standard output."""
    if run["status"] != "exit" or run["rc"] != 0:
        return False
    if judge == "lcb":
        return lcb_match(run["stdout"], expected)
    return run["stdout"].strip() == expected.strip()


def lcb_match(output: str, expected: str) -> bool:
    """LiveCodeBench's comparison: the same number of stripped lines, each equal as text or, failing
    that, as a list of decimal numbers (``1.0`` matches ``1.00``; ``1.000000001`` does not)."""
    got, want = _stripped_lines(output), _stripped_lines(expected)
    return len(got) == len(want) and all(map(_same_line, got, want))


def _stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _same_line(got: str, want: str) -> bool:
    if got == want:
        return True
    try:
        numbers = [decimal.Decimal(token) for token in got.split()]
        return numbers == [decimal.Decimal(token) for token in want.split()]
    except decimal.InvalidOperation:  # not numbers (or a signalling NaN)
        return False


def feedback_for(run: dict, test_input: str, expected: str, timeout_s: float) -> str:
    """The text for one test's run (a harness result line)."""
    if run["status"] == "timeout":
        return f"Input:\n{trunc(test_input)}\nTimeoutError: Program timed out after {timeout_s:g} seconds."
    if run["status"] == "disk_limit":  # ours: the reference had no bound on what a program writes
        return (
            f"Input:\n{trunc(test_input)}\nDiskLimitError: Program wrote more than {run['limit_mb']:g} MiB"
            f" (or {run['limit_files']} files) to disk."
        )
    if run["status"] == "memory_limit":  # ours: all the program's processes together
        return (
            f"Input:\n{trunc(test_input)}\nMemoryError: Program used more than {run['limit_mb']:g} MiB"
            " of memory (all its processes together)."
        )
    head = f"Input:\n{trunc(test_input)}\nProgram's Output:\n{trunc(run['stdout'])}\n"
    if run["rc"] != 0 and run["stderr"].strip():
        return head + f"Stderr:\n{trunc(run['stderr'])}"
    return head + f"Expected Output:\n{trunc(expected)}"


def exception_feedback(test_input: str, message: str) -> str:
    """A test that could not be run because the launcher failed."""
    return f"Input:\n{trunc(test_input)}\nException: {trunc(message)}"
