"""The trajectory record: what multi-turn inference writes and the bandit-prompt builder reads.

One JSONL record per problem (full description and an example in ``docs/data.md``)::

    id                 problem id (str or int)
    difficulty         copied from the problem (optional)
    instruction        the first user message (optional; it is also in every conversation)
    test_cases         JSON string, all tests (public followed by hidden)
    public_test_cases  JSON string (optional) - the tests whose feedback the model saw
    hidden_test_cases  JSON string (optional) - the tests behind ``all_pass_rates``
    conversations      K chat conversations: system, user, then (assistant, feedback-user) × T
    responses          K × T raw model outputs (before ``</think>`` stripping; optional)
    turn0_results      K execution results of the turn-0 responses on ``test_cases``
    public_results     K × T execution results on the public tests (optional)
    public_pass_rates  K × T pass rates on the public tests
    all_pass_rates     K × T pass rates on the hidden tests (added by the evaluation step)
    context_cut        K × T booleans (optional): the turn did not fit the context window and was
                       recorded as an empty answer

Every K × T list is indexed ``[conversation][turn]``. The reference stores ``public_pass_rates``
and its raw responses as ``[turn][conversation]`` under other names; :func:`from_reference`
converts such a record, and the reader does it automatically.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from cobalt.common.errors import DataError
from cobalt.common.extract import THINK_END, strip_thinking
from cobalt.common.prompts import feedback_message, initial_messages
from cobalt.common.testcases import parse_test_cases
from cobalt.data.sources import iter_local

MAX_ANSWER_CHARS = 6000
REQUIRED = ("id", "test_cases", "conversations", "turn0_results", "public_pass_rates")  # responses: optional


# --- building conversations (shared with multi-turn inference) ------------------------------------
def assistant_content(response: str, thinking: bool, max_chars: int = MAX_ANSWER_CHARS) -> str:
    """What stays in the conversation: for thinking models the answer after the last
    ``</think>`` (stripped), cut to ``max_chars``; otherwise the whole response."""
    if not thinking:
        return response
    answer = strip_thinking(response).strip() if THINK_END in response else response
    return answer[:max_chars]


def start_conversation(instruction: str) -> list[dict]:
    return initial_messages(instruction)


def add_turn(conversation: list[dict], response: str, public_result: dict, thinking: bool) -> None:
    """Append the assistant turn and the feedback on its public-test result."""
    conversation.append({"role": "assistant", "content": assistant_content(response, thinking)})
    conversation.append({"role": "user", "content": feedback_message(public_result)})


# --- reading and validating -----------------------------------------------------------------------
def _transpose(rows: list) -> list:
    return [list(col) for col in zip(*rows)] if rows else []


def from_reference(record: dict) -> dict:
    """A record in the reference's layout (``exec_results``, ``raw_responses`` and
    ``public_pass_rates`` as [turn][conversation]) → our layout."""
    out = {
        k: v
        for k, v in record.items()
        if k not in ("exec_results", "raw_responses", "public_exec_results", "responses")
    }
    out["turn0_results"] = record["exec_results"]
    if record.get("raw_responses"):  # optional: the reference's cutter does not need them
        out["responses"] = _transpose(record["raw_responses"])
    out["public_pass_rates"] = _transpose(record.get("public_pass_rates", []))
    if "public_exec_results" in record:
        out["public_results"] = _transpose(record["public_exec_results"])
    return out


class _Checker:
    """Validation helpers that report the file, line and field of a problem."""

    def __init__(self, path, line):
        self.path, self.line = path, line

    def fail(self, field: str, problem: str):
        raise DataError(problem, path=self.path, line=self.line, field=field)

    def grid(self, record: dict, field: str, shape: tuple[int, int], kind) -> None:
        rows = record[field]
        if not isinstance(rows, list) or len(rows) != shape[0]:
            self.fail(field, f"expected {shape[0]} rows (one per conversation)")
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != shape[1]:
                self.fail(field, f"row {i}: expected {shape[1]} entries (one per turn)")
            for value in row:
                kind(self, field, value)


def _rate(checker: _Checker, field: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        checker.fail(field, f"pass rate {value!r} is not a number in [0, 1]")


def _flag(checker: _Checker, field: str, value) -> None:
    if not isinstance(value, bool):
        checker.fail(field, f"expected true or false, got {value!r}")


def _text(checker: _Checker, field: str, value) -> None:
    if not isinstance(value, str):
        checker.fail(field, f"expected a string, got {type(value).__name__}")


def _result(checker: _Checker, field: str, value) -> None:
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("passing"), list)
        or not isinstance(value.get("feedback"), list)
    ):
        checker.fail(field, "expected an execution result {passing: [...], feedback: [...]}")
    if not value["passing"] or len(value["passing"]) != len(value["feedback"]):
        checker.fail(field, "'passing' and 'feedback' must be non-empty and of equal length")


def _conversation(checker: _Checker, conv, n_messages: int) -> None:
    if not isinstance(conv, list) or len(conv) != n_messages:
        checker.fail("conversations", f"every conversation must have {n_messages} messages")
    for i, msg in enumerate(conv):
        expected = "system" if i == 0 else ("assistant" if i % 2 == 0 else "user")
        if (
            not isinstance(msg, dict)
            or msg.get("role") != expected
            or not isinstance(msg.get("content"), str)
        ):
            checker.fail("conversations", f"message {i} must be a {expected!r} message with content")


def validate(record: dict, *, path=None, line=None, need_hidden: bool = False) -> dict:
    """Check a trajectory record (our layout) and return it; DataError on any inconsistency."""
    check = _Checker(path, line)
    for field in REQUIRED + (("all_pass_rates",) if need_hidden else ()):
        if field not in record:
            check.fail(field, "missing")
    for field in ("test_cases", "public_test_cases", "hidden_test_cases"):
        if field in record:
            parse_test_cases(record[field], path=path, line=line, field=field)
    convs = record["conversations"]
    if not isinstance(convs, list) or not convs:
        check.fail("conversations", "expected a non-empty list of conversations")
    n_turns = (len(convs[0]) - 2) // 2 if isinstance(convs[0], list) else 0
    if n_turns < 1:
        check.fail("conversations", "a conversation needs at least one assistant turn")
    for conv in convs:
        _conversation(check, conv, 2 + 2 * n_turns)
    shape = (len(convs), n_turns)
    if "responses" in record:
        check.grid(record, "responses", shape, _text)
    check.grid(record, "public_pass_rates", shape, _rate)
    if "all_pass_rates" in record:
        check.grid(record, "all_pass_rates", shape, _rate)
    if "public_results" in record:
        check.grid(record, "public_results", shape, _result)
    if "context_cut" in record:
        check.grid(record, "context_cut", shape, _flag)
    turn0 = record["turn0_results"]
    if not isinstance(turn0, list) or len(turn0) != len(convs):
        check.fail("turn0_results", f"expected {len(convs)} results (one per conversation)")
    for result in turn0:
        _result(check, "turn0_results", result)
    return record


def read_trajectories(path: str | os.PathLike, need_hidden: bool = False) -> Iterator[tuple[int, dict]]:
    """Yield ``(line, record)`` for every valid record; reference-layout records are converted."""
    for line, record in iter_local(path):
        if "exec_results" in record and "turn0_results" not in record:
            record = from_reference(record)
        yield line, validate(record, path=path, line=line, need_hidden=need_hidden)
