"""Builders for the inference tests: problem records from the embedded set, a scripted model."""

from __future__ import annotations

from cobalt.data import embedded
from cobalt.data.embedded import problem_records  # noqa: F401 (re-exported for the tests)
from cobalt.infer.llm import Activity, Completion

PID = "cobalt-001"  # the embedded problem the inference tests run
FAILED = {"passing": [False], "feedback": ["x"]}  # a public-test verdict: the one test failed


def programs(problem_id: str) -> tuple[str, str]:
    """A correct and a wrong program of an embedded problem."""
    p = next(p for p in embedded.load_problems() if p["id"] == problem_id)
    return p["solutions"][0], p["wrong_solutions"][0]["code"]


def answer(program: str | None, thinking: bool = True) -> str:
    think = "<think>\nLet me check the sample.\n</think>\n" if thinking else ""
    body = f"```python\n{program}\n```" if program is not None else "I am not sure."
    return f"{think}Here is the program.\n{body}\nDone."


class ScriptedModel:
    """Answers from a script: ``script(messages) -> text`` (a unit-test stand-in for ChatModel)."""

    def __init__(self, script):
        self.script = script
        self.activity = Activity()
        self.calls = []

    async def complete(self, messages, *, n=1, **sampling):
        self.calls.append((list(messages), n, sampling))
        return Completion(
            [self.script(messages) for _ in range(n)],
            {"prompt_tokens": 10, "completion_tokens": 5, "calls": 1},
        )
