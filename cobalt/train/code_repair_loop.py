"""GRPO-MT's rollout: a veRL agent loop for multi-turn code repair (online baselines, issue 47).

Registered without touching veRL, by ``configs/train/agent_loops/code_repair.yaml`` (veRL's
``actor_rollout_ref.rollout.agent.agent_loop_config_path``) under the name :data:`AGENT_NAME`; rows
choose it with their ``agent_name`` column (:func:`cobalt.data.verl_rows.online_row`).

An episode: turn 0 answers the problem from the row's prompt (COBALT's turn-0 prompt,
:func:`cobalt.common.prompts.initial_messages`). The program of each turn runs on the PUBLIC tests through
the project's evaluator (:class:`cobalt.data.execute.Executor`, as the trajectory stage runs it), and
the next user turn is the feedback COBALT's trajectories write (:func:`cobalt.data.trajectories.add_turn`).
The episode ends when the public tests pass, after ``max_turns`` turns, or when the next turn would not
fit: the loop never sends the server a prompt that leaves fewer than ``min_turn_tokens`` to generate
(veRL's vLLM server raises ``ValueError`` when none is left), and such an episode is marked cut.
A turn generates at most ``max_turn_tokens`` (default ``rollout.response_length // max_turns``).

It returns ONE output per episode: the turn-0 prompt, then every assistant turn (``response_mask`` 1)
and every feedback turn between them (``response_mask`` 0). The reward (the final turn on the hidden
tests) is put on the last token, so GRPO gives the whole episode one advantage: every turn of a
session gets the session's advantage by construction (VeRPO-MT's trainer step instead gives each
turn, a run of ``response_mask`` 1s, its own: :func:`cobalt.train.trainer.turn_token_advantages`).
``extra_fields`` carry what the reward manager and the step metrics need (:data:`TURNS_FIELD`,
:data:`STATS_FIELD`); veRL's per-episode ``metrics`` the seconds spent generating
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

log = logging.getLogger("cobalt.train.code_repair_loop")

AGENT_NAME = "cobalt_code_repair"
TURNS_FIELD = "cobalt_turns"  # extra_fields: the raw text of every assistant turn, in order
STATS_FIELD = "cobalt_episode"  # extra_fields: {turns, context_cut, public_pass}


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
        min_turn_tokens: int = 1,
        thinking: bool = False,
        eval_concurrency: int = 8,
        executor: Executor | None = None,
        tools=None,  # veRL passes its tool list to every loop; this one has no tools
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        if max_turns < 1 or min_turn_tokens < 1 or (max_turn_tokens is not None and max_turn_tokens < 1):
            raise ValueError(
                f"{AGENT_NAME}: max_turns, min_turn_tokens and max_turn_tokens must be at least 1 "
                f"(got {max_turns}, {min_turn_tokens}, {max_turn_tokens})"
            )
        self.max_turns = max_turns
        self.min_turn_tokens = min_turn_tokens
        self.thinking = thinking
        self.executor = executor or shared_executor(eval_concurrency)
        self.response_length = int(self.rollout_config.response_length)
        self.max_turn_tokens = max_turn_tokens or max(1, self.response_length // max_turns)
        max_model_len = self.rollout_config.get("max_model_len")
        total = int(self.rollout_config.prompt_length) + self.response_length
        self.context_length = min(total, int(max_model_len)) if max_model_len else total
        if self.context_length - int(self.rollout_config.prompt_length) < min_turn_tokens:
            raise ValueError(
                f"{AGENT_NAME}: rollout.max_model_len ({max_model_len}) leaves no room to answer a prompt "
                f"of rollout.prompt_length ({self.rollout_config.prompt_length}) tokens"
            )

    def turn_budget(self, context_ids: list[int], response_mask: list[int]) -> int:
        """Tokens the next turn may generate: within the response budget, the context window and
        the per-turn cap."""
        room = min(self.response_length - len(response_mask), self.context_length - len(context_ids))
        return min(room, self.max_turn_tokens)

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        messages = [dict(m) for m in kwargs["raw_prompt"]]
        public_tests = _extra_info(kwargs)["public_test_cases"]
        prompt_ids = await self.ct_build_initial_tokens(messages)
        context_ids, mask, logprobs = list(prompt_ids), [], []
        texts, cut, passed, server_fields = [], False, False, {}
        metrics = {"generate_sequences": 0.0, "tool_calls": 0.0}  # seconds, summed over the turns
        request_id = uuid4().hex
        while True:
            budget = self.turn_budget(context_ids, mask)
            if budget < self.min_turn_tokens:
                cut = True
                break
            started = time.perf_counter()
            output = await self.server_manager.generate(
                request_id=request_id,
                prompt_ids=context_ids,
                sampling_params={**sampling_params, "max_tokens": budget},
            )
            metrics["generate_sequences"] += time.perf_counter() - started
            metrics["num_preempted"] = output.num_preempted if output.num_preempted is not None else -1
            server_fields = merge_server_fields(server_fields, output.extra_fields)
            merged, mask, logprobs = await self.ct_merge_assistant_token(
                context_ids, output.token_ids, mask, logprobs if output.log_probs else None, output.log_probs
            )
            context_ids, logprobs = merged.token_ids, logprobs or []
            text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            texts.append(text)
            started = time.perf_counter()
            result = await self.executor.run(extract_code(text), public_tests)
            metrics["tool_calls"] += time.perf_counter() - started  # the wait for the public tests
            passed = pass_rate(result) == 1
            if passed or len(texts) >= self.max_turns:
                break
            previous = list(messages)
            add_turn(messages, text, result, self.thinking)  # COBALT's assistant + feedback turns
            merged, new_mask, new_logprobs = await self.ct_merge_context_msg(
                previous, messages, context_ids, mask, logprobs or None
            )
            if self.turn_budget(merged.token_ids, new_mask) < self.min_turn_tokens:
                cut = True  # the feedback fits, a repair would not: stop before the server is asked
                break
            context_ids, mask, logprobs = merged.token_ids, new_mask, new_logprobs or []
        response_ids = context_ids[len(prompt_ids) :]
        stats = {"turns": len(texts), "context_cut": float(cut), "public_pass": float(passed)}
        if cut:
            log.warning("%s: episode cut at the context limit after %d turn(s)", AGENT_NAME, len(texts))
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            num_turns=2 * len(texts),
            metrics=metrics,
            extra_fields={
                **server_fields,
                TURNS_FIELD: texts,
                STATS_FIELD: stats,
                "turn_scores": [],
                "tool_rewards": [],
            },
        )


def merge_server_fields(episode: dict, turn: dict) -> dict:
    """The server's fields of an episode: the first turn's, with the weights' version of the latest
    turn (veRL tags each row with the versions it was generated across, ``min/max_global_steps``)."""
    if not episode:
        return dict(turn)
    if turn.get("max_global_steps") is not None:
        return {**episode, "max_global_steps": turn["max_global_steps"]}
    return episode


def _extra_info(kwargs: dict) -> dict:
    extra = kwargs.get("extra_info") or {}
    if "public_test_cases" not in extra:
        raise KeyError(
            f"{AGENT_NAME}: the row's extra_info has no public_test_cases "
            "(build online rows with cobalt.data.verl_rows.online_row)"
        )
    return extra
