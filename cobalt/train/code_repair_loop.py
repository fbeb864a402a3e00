"""The online baselines' rollout: a veRL agent loop for multi-turn code repair (GRPO-MT, VeRPO-MT).

Registered without touching veRL, by ``configs/train/agent_loops/code_repair.yaml`` (veRL's
``actor_rollout_ref.rollout.agent.agent_loop_config_path``) under the name :data:`AGENT_NAME`; rows
choose it with their ``agent_name`` column (:func:`cobalt.data.verl_rows.online_row`).

An episode is COBALT's self-debugging conversation, generated online. Turn 0 answers the problem
from the row's prompt (COBALT's turn-0 prompt, :func:`cobalt.common.prompts.initial_messages`). The
program of each turn runs on the PUBLIC tests through the project's evaluator
(:class:`cobalt.data.execute.Executor`, as the trajectory stage runs it), and the conversation grows
by COBALT's assistant turn (for a thinking model only the answer after ``</think>``) and its
feedback (:func:`cobalt.data.trajectories.add_turn`). The episode ends when the public tests pass,
after ``max_turns`` turns, or when the next turn's context would not leave room for a whole answer.

It returns ONE OUTPUT PER TURN (veRL's multi-output sessions, keys ``{uid}_{session}_{turn}``):
* its prompt is the chat template applied to the conversation so far, rendered afresh: exactly
  the context COBALT's trajectories, bandit prompts and evaluations show for the same answers and
  feedback (no earlier turn's thinking, no tokens of an earlier turn merged in twice);
* its response is the turn's generated tokens, all trained (``response_mask`` 1), at most
  ``max_turn_tokens`` (by default ``rollout.response_length``: the row's whole response).
A turn starts only if its prompt fits ``rollout.prompt_length`` and the context window still holds
a whole answer after it; an episode stopped that way is marked cut and is scored on its last turn.

The reward (the final turn on all of the problem's tests) is computed on the last output; veRL copies it to
the session's other outputs and gives every output GRPO's advantage of the session's last
(``compute_advantage_for_multi_trajectories``). VeRPO-MT's trainer step instead gives the output of
turn t that turn's advantage (:func:`cobalt.train.trainer.turn_row_advantages`). Every output
carries, in ``extra_fields``, the episode's texts and statistics (:data:`TURNS_FIELD`,
:data:`STATS_FIELD`), and in veRL's ``metrics`` its own turn's seconds spent generating
(``generate_sequences``) and waiting for the public tests (``tool_calls``).
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput

from cobalt.common.extract import extract_code
from cobalt.common.testcases import pass_rate
from cobalt.data.execute import Executor
from cobalt.data.trajectories import add_turn
from cobalt.reward.config import reward_config
from cobalt.reward.score import default_evaluator
from cobalt.serve.client import counted_requests

log = logging.getLogger("cobalt.train.code_repair_loop")

AGENT_NAME = "cobalt_code_repair"
TURNS_FIELD = "cobalt_turns"  # extra_fields: the raw text of every assistant turn, in order
STATS_FIELD = "cobalt_episode"  # extra_fields: {turns, context_cut, public_pass, evaluator_requests}


@functools.cache
def shared_executor(concurrency: int) -> Executor:
    """One executor per agent-loop worker process: its slots bound the public-test calls of every
    episode the worker runs (veRL builds a new loop object per episode)."""
    return Executor(default_evaluator(reward_config()), concurrency, reward_config().call_timeout_s)


class CodeRepairLoop(AgentLoopBase):
    """Answer, run the public tests, show the feedback, repair; see the module doc."""

    def __init__(
        self,
        *args,
        max_turns: int = 3,
        max_turn_tokens: int | None = None,
        thinking: bool = False,
        eval_concurrency: int = 8,
        executor: Executor | None = None,
        tools=None,  # veRL passes its tool list to every loop; this one has no tools
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        if max_turns < 1 or (max_turn_tokens is not None and max_turn_tokens < 1):
            raise ValueError(
                f"{AGENT_NAME}: max_turns and max_turn_tokens must be at least 1 (got {max_turns}, {max_turn_tokens})"
            )
        self.max_turns = max_turns
        self.thinking = thinking
        self.executor = executor or shared_executor(eval_concurrency)
        self.prompt_length = int(self.rollout_config.prompt_length)
        response_length = int(self.rollout_config.response_length)
        self.max_turn_tokens = min(max_turn_tokens or response_length, response_length)
        max_model_len = self.rollout_config.get("max_model_len")
        total = self.prompt_length + response_length
        self.context_length = min(total, int(max_model_len)) if max_model_len else total

    def room_for_an_answer(self, prompt_ids: list[int]) -> bool:
        """A turn starts only if its prompt is a whole prompt and a whole answer fits after it."""
        return (
            len(prompt_ids) <= self.prompt_length
            and len(prompt_ids) + self.max_turn_tokens <= self.context_length
        )

    async def render(self, conversation: list[dict]) -> list[int]:
        """The chat template applied to the conversation, with the generation prompt (veRL's
        rendering, as for every row's prompt, never cut)."""
        builder = self.continuous_token_builder
        return await self.loop.run_in_executor(None, lambda: builder.build_initial_tokens(conversation))

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> list[AgentLoopOutput]:
        with counted_requests() as sent:  # the turns' public tests; the reward adds its own
            outputs = await self.episode(sampling_params, **kwargs)
        for output in outputs:
            output.extra_fields[STATS_FIELD]["evaluator_requests"] = float(sent[0])
        return outputs

    async def episode(self, sampling_params: dict[str, Any], **kwargs) -> list[AgentLoopOutput]:
        conversation = [dict(m) for m in kwargs["raw_prompt"]]
        public_tests = _extra_info(kwargs)["public_test_cases"]
        outputs, texts, cut, passed = [], [], False, False
        request_id = uuid4().hex  # one session: the server keeps its turns on one replica
        while True:
            prompt_ids = await self.render(conversation)
            if not self.room_for_an_answer(prompt_ids):
                cut = True
                break
            started = time.perf_counter()
            output = await self.server_manager.generate(
                request_id=request_id,
                prompt_ids=prompt_ids,
                sampling_params={**sampling_params, "max_tokens": self.max_turn_tokens},
            )
            generating = time.perf_counter() - started
            text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            texts.append(text)
            started = time.perf_counter()
            result = await self.executor.run(extract_code(text), public_tests)
            metrics = {"generate_sequences": generating, "tool_calls": time.perf_counter() - started}
            outputs.append(self.turn_output(prompt_ids, output, metrics, len(texts)))
            passed = pass_rate(result) == 1
            if passed or len(texts) >= self.max_turns:
                break
            add_turn(conversation, text, result, self.thinking)  # COBALT's assistant + feedback turns
        if not outputs:
            raise ValueError(
                f"{AGENT_NAME}: the turn-0 prompt ({len(prompt_ids)} tokens) leaves no room for an answer of "
                f"{self.max_turn_tokens} tokens (rollout.prompt_length {self.prompt_length}, context "
                f"{self.context_length})"
            )
        if cut:  # one line per episode would flood the log: the step's reward/context_cut/mean counts them
            log.debug("%s: episode cut at the context limit after %d turn(s)", AGENT_NAME, len(texts))
        stats = {"turns": len(texts), "context_cut": float(cut), "public_pass": float(passed)}
        for output in outputs:  # every row the same keys (TransferQueue stores them as one field)
            output.extra_fields.update({TURNS_FIELD: texts, STATS_FIELD: stats})
        return outputs

    def turn_output(self, prompt_ids: list[int], output, metrics: dict, turn: int) -> AgentLoopOutput:
        """One turn as a row: its prompt, its generated tokens (all trained) and its costs."""
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=list(output.token_ids),
            response_mask=[1] * len(output.token_ids),
            response_logprobs=list(output.log_probs) if output.log_probs else None,
            num_turns=2 * turn,  # user and assistant messages up to this answer
            metrics={
                **metrics,
                "num_preempted": output.num_preempted if output.num_preempted is not None else -1,
            },
            extra_fields={**(output.extra_fields or {}), "turn_scores": [], "tool_rewards": []},
        )


def _extra_info(kwargs: dict) -> dict:
    extra = kwargs.get("extra_info") or {}
    if "public_test_cases" not in extra:
        raise KeyError(
            f"{AGENT_NAME}: the row's extra_info has no public_test_cases "
            "(build online rows with cobalt.data.verl_rows.online_row)"
        )
    return extra
