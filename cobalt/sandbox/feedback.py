"""Verdicts and the feedback text shown to the model (reference section 2, exact strings)."""

from __future__ import annotations

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


def is_pass(run: dict, expected: str) -> bool:
    return run["status"] == "exit" and run["rc"] == 0 and run["stdout"].strip() == expected.strip()


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
