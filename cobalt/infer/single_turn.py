"""Single-turn sampling: ``n`` completions per problem, each run on the problem's tests.

Adds ``responses`` (n raw strings), ``exec_results`` (n execution results on ``test_cases``) and
``usage`` (tokens and calls) to each problem record (reference section 8).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from cobalt.common.extract import extract_code
from cobalt.common.prompts import initial_messages
from cobalt.data.execute import Executor
from cobalt.infer.llm import ChatModel, Completion, ContextWindowExceeded

log = logging.getLogger("cobalt.infer")


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.6
    top_p: float = 0.95
    max_tokens: int = 6144
    n: int = 16

    def params(self) -> dict:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}


async def sample_and_run(
    messages: list[dict], tests: str, model: ChatModel, executor: Executor, sampling: Sampling, what: str
) -> tuple[Completion, list[dict], bool]:
    """``sampling.n`` answers to one prompt, each run on ``tests``: the completion, the execution
    results and whether the prompt did not fit the context window. A prompt too long for the
    context window gets n empty answers (no program: they fail), not the end of the run; ``what``
    names the prompt in the warning."""
    try:
        completion = await model.complete(messages, n=sampling.n, **sampling.params())
    except ContextWindowExceeded:
        log.warning("%s does not fit the context window; recorded as %d empty answers", what, sampling.n)
        completion, cut = Completion([""] * sampling.n, {}), True
    else:
        cut = False
    results = await asyncio.gather(*(executor.run(extract_code(text), tests) for text in completion.texts))
    return completion, list(results), cut


async def sample_problem(problem: dict, model: ChatModel, executor: Executor, sampling: Sampling) -> dict:
    """n answers to one problem, each run on its tests (:func:`sample_and_run`)."""
    completion, results, cut = await sample_and_run(
        initial_messages(problem["instruction"]),
        problem["test_cases"],
        model,
        executor,
        sampling,
        f"{problem.get('id')}: the statement",
    )
    return {
        **problem,
        "responses": completion.texts,
        "exec_results": results,
        "context_cut": [cut] * len(completion.texts),  # the statement did not fit the context window
        "usage": completion.usage,
    }
