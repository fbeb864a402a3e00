"""Multi-turn self-debugging: each cached single-turn answer is run on the public tests, the
feedback goes back to the model, and so on for ``turns`` turns (reference section 8).

Conversations move independently: each one asks for its next turn as soon as its own program has
run, so the engine is generating for some conversations while the evaluator runs others (the
reference generates a whole turn for all conversations, then executes them all). The record is
the trajectory record of ``docs/data.md`` (K × T lists indexed ``[conversation][turn]``,
T = 1 + ``turns``, turn 0 being the cached response).
"""

from __future__ import annotations

import asyncio
import logging

from cobalt.common.extract import extract_code
from cobalt.common.testcases import pass_rate
from cobalt.data.execute import Executor
from cobalt.data.trajectories import add_turn, start_conversation
from cobalt.infer.llm import ChatModel, Completion, ContextWindowExceeded
from cobalt.infer.single_turn import Sampling

CARRIED_FIELDS = (
    "id",
    "difficulty",
    "question",
    "instruction",
    "test_cases",
    "public_test_cases",
    "hidden_test_cases",
    "modified_test_cases",
    "perturbed_public_test_cases",
)
log = logging.getLogger("cobalt.infer")


async def debug_conversation(
    first_response: str,
    problem: dict,
    model: ChatModel,
    executor: Executor,
    sampling: Sampling,
    turns: int,
    public_field: str,
    thinking: bool,
    first_cut: bool = False,
) -> dict:
    """One conversation: the cached answer, then ``turns`` feedback turns. A turn whose prompt no
    longer fits the context window, and every later one, is an empty answer (no program: it fails)
    and is recorded as cut (``cut[turn]``; turn 0 as the single-turn record says)."""
    conversation = start_conversation(problem["instruction"])
    responses, results, usage = [], [], {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
    response, out_of_context, cut = first_response, first_cut, []
    for turn in range(turns + 1):
        if turn and out_of_context:
            response = ""
        elif turn:
            try:
                completion = await model.complete(conversation, n=1, **sampling.params())
            except ContextWindowExceeded:
                log.warning(
                    "%s: a conversation outgrew the context window at turn %d; it and later turns "
                    "are recorded as empty answers",
                    problem.get("id"),
                    turn,
                )
                out_of_context, completion = True, Completion([""], {})
            response = completion.texts[0]
            for key, value in completion.usage.items():
                usage[key] += value
        result = await executor.run(extract_code(response), problem[public_field])
        add_turn(conversation, response, result, thinking)
        responses.append(response)
        results.append(result)
        cut.append(out_of_context)
    return {
        "conversation": conversation,
        "responses": responses,
        "results": results,
        "usage": usage,
        "cut": cut,
    }


async def debug_problem(
    record: dict,
    model: ChatModel,
    executor: Executor,
    sampling: Sampling,
    *,
    turns: int,
    public_field: str,
    thinking: bool,
) -> dict:
    """The trajectory record of one problem (all its conversations run concurrently)."""
    first_cut = record.get("context_cut") or [False] * len(record["responses"])
    runs = await asyncio.gather(
        *(
            debug_conversation(
                response, record, model, executor, sampling, turns, public_field, thinking, cut
            )
            for response, cut in zip(record["responses"], first_cut, strict=True)
        )
    )
    usage = {key: sum(run["usage"][key] for run in runs) for key in runs[0]["usage"]}
    return {
        **{key: record[key] for key in CARRIED_FIELDS if key in record},
        "public_field": public_field,
        "conversations": [run["conversation"] for run in runs],
        "responses": [run["responses"] for run in runs],
        "turn0_results": record["exec_results"],
        "public_results": [run["results"] for run in runs],
        "public_pass_rates": [[pass_rate(r) for r in run["results"]] for run in runs],
        "context_cut": [run["cut"] for run in runs],  # K × T: the turn did not fit the context window
        "usage": usage,
    }
