"""Every text the model reads: the system prompt, the problem instruction and the feedback turns.

Wording is the project's own. The marker strings below are a data format (trajectory files and
the trajectory cutter look for them), so they must not change.
"""

from __future__ import annotations

# --- marker strings (exact: other people's trajectories depend on them) -----------------------------
ALL_PUBLIC_PASSED_MARKER = "The code has passed all public test cases"
# Feedback messages carry the execution feedback after this line (reference section 8; the
# reward-hacking extraction reads the text after it).
FEEDBACK_HEADER = "Here is the execution feedback:"

SYSTEM_PROMPT = (
    "You are an expert competitive programmer. You write correct, efficient Python 3 programs "
    "that read from standard input and write to standard output. When you are given feedback "
    "from running your program, you find the cause of the failure and fix it."
)

_INSTRUCTION = """Solve the following programming problem in Python 3.

{question}

Your program must read the input from standard input and print the answer to standard output.
Think the problem through first. Then give your complete solution in a single ```python code block, followed by a short explanation."""

_CALL_BASED_NOTE = """
The solution is judged by calling `Solution().{fn_name}(...)`: define a class `Solution` with that method."""

_FAILED_TEST = (
    "Your code did not pass all public test cases. Find the mistake and give the complete corrected "
    "program in a single ```python code block.\n" + FEEDBACK_HEADER + "\n{feedback}"
)

_ALL_PASSED = (
    ALL_PUBLIC_PASSED_MARKER
    + ", but it will also be judged on hidden test cases. Consider edge cases and performance "
    "limits it may not handle yet. If you find a problem, give the complete corrected program in a "
    "single ```python code block; otherwise, give the same program again."
)

# The placebo turn of the repair experiment (docs/preregistration.md): the same request as
# _FAILED_TEST, with no test detail, so that a repair after it is not the feedback's doing.
_PLACEBO = (
    "That was wrong. Try again: find the mistake and give the complete corrected program in a "
    "single ```python code block."
)

NO_CODE_BLOCK = (
    "No code block could be extracted from your response. Give your complete program "
    "in a single ```python code block."
)


def build_instruction(question: str, fn_name: str | None = None) -> str:
    """The first user message for a problem."""
    text = _INSTRUCTION.format(question=question.strip())
    if fn_name:
        text += _CALL_BASED_NOTE.format(fn_name=fn_name)
    return text


def initial_messages(instruction: str) -> list[dict]:
    """System prompt + the problem: the turn-0 prompt."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": instruction}]


def feedback_message(result: dict) -> str:
    """The next user turn after an execution result on the public tests (reference section 3).

    The feedback of the first failing test; if every test passed, the all-passed message that
    starts with ``ALL_PUBLIC_PASSED_MARKER``.
    """
    for passed, feedback in zip(result["passing"], result["feedback"]):
        if not passed:
            return feedback if feedback == NO_CODE_BLOCK else _FAILED_TEST.format(feedback=feedback)
    return _ALL_PASSED


def placebo_message() -> str:
    """The placebo repair turn: says the answer was wrong, and nothing about any test."""
    return _PLACEBO


def shown_feedback(message: str) -> str:
    """The execution feedback inside a feedback message: the text after ``FEEDBACK_HEADER``
    (stripped); other messages (all passed, no code block) are returned whole."""
    if FEEDBACK_HEADER in message:
        return message.split(FEEDBACK_HEADER, 1)[1].strip()
    return message


def no_code_result() -> dict:
    """The execution result of a response with no code block (one failing entry)."""
    return {"passing": [False], "feedback": [NO_CODE_BLOCK]}
