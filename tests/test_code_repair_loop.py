"""GRPO-MT's agent loop (cobalt/train/code_repair_loop.py) with a scripted server and the real sandbox:
when an episode stops, the feedback it shows, and the advantage veRL's GRPO gives its turns."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("verl")

import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import DictConfigWrap
from verl.workers.rollout.replica import TokenOutput

from cobalt.common.prompts import build_instruction, initial_messages
from cobalt.infer.llm import Completion
from cobalt.infer.multi_turn import debug_conversation
from cobalt.infer.single_turn import Sampling
from cobalt.train.code_repair_loop import STATS_FIELD, TURNS_FIELD, CodeRepairLoop

PUBLIC = json.dumps({"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]})
INSTRUCTION = build_instruction("Read n and print 2n.")
WRONG = "Print it.\n```python\nn = int(input())\nprint(n)\n```\nDone."
WRONG_AGAIN = "Add one.\n```python\nn = int(input())\nprint(n + 1)\n```\nDone."
RIGHT = "Double it.\n```python\nn = int(input())\nprint(2 * n)\n```\nDone."


class ScriptedServer:
    """Answers with the next scripted text; refuses, as veRL's vLLM server does, a prompt that leaves
    no room to generate."""

    def __init__(self, tokenizer, texts, max_model_len):
        self.tokenizer, self.texts, self.max_model_len = tokenizer, list(texts), max_model_len
        self.requests = []  # (prompt_ids, max_tokens)

    async def generate(self, *, request_id, prompt_ids, sampling_params, **kwargs):
        if self.max_model_len - len(prompt_ids) < 1:
            raise ValueError(f"Prompt length ({len(prompt_ids)}) leaves no room to generate")
        max_tokens = sampling_params["max_tokens"]
        self.requests.append((list(prompt_ids), max_tokens))
        ids = self.tokenizer.encode(self.texts.pop(0), add_special_tokens=False)
        ids.append(self.tokenizer.convert_tokens_to_ids("<|im_end|>"))
        ids = ids[:max_tokens]
        # the weights' versions the server generated with (veRL's staleness tags need them)
        steps = {"min_global_steps": 3, "max_global_steps": 3 + len(self.requests)}
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), extra_fields=steps)


@pytest.fixture(scope="module")
def tokenizer(tiny_tokenizer_dir):
    from cobalt.data.tokens import load_tokenizer

    return load_tokenizer(tiny_tokenizer_dir)


@pytest.fixture(scope="module")
def executor():
    from cobalt.data.execute import Executor
    from cobalt.serve.client import LocalEvaluator

    return Executor(LocalEvaluator(max_workers=2), concurrency=4, timeout_s=60)


async def episode(tokenizer, executor, texts, *, max_turns=3, prompt_length=1024, response_length=2048,
                  max_model_len=None, max_turn_tokens=None):  # fmt: skip
    """Run one episode on a scripted server; (the loop's output, the server)."""
    rollout = {
        "prompt_length": prompt_length,
        "response_length": response_length,
        "max_model_len": max_model_len,
    }
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}, "data": {}})
    server = ScriptedServer(tokenizer, texts, max_model_len or prompt_length + response_length)
    loop = CodeRepairLoop(  # veRL's loops take the running event loop when built
        trainer_config=DictConfigWrap(config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=None,
        data_config=DictConfigWrap(config.data),
        max_turns=max_turns,
        max_turn_tokens=max_turn_tokens,
        executor=executor,
    )
    kwargs = {"raw_prompt": initial_messages(INSTRUCTION), "extra_info": {"public_test_cases": PUBLIC}}
    return await loop.run({"temperature": 1.0}, **kwargs), server


def run(*args, **kwargs):
    return asyncio.run(episode(*args, **kwargs))


def assistant_spans(mask):
    """[start, end) of each run of response_mask 1 (one per assistant turn)."""
    spans, start = [], None
    for i, m in enumerate([*mask, 0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            spans.append((start, i))
            start = None
    return spans


def test_the_episode_stops_when_the_public_tests_pass(tokenizer, executor):
    out, server = run(tokenizer, executor, [WRONG, RIGHT, WRONG])
    assert out.extra_fields[TURNS_FIELD] == [WRONG, RIGHT]
    assert out.extra_fields[STATS_FIELD] == {"turns": 2, "context_cut": 0.0, "public_pass": 1.0}
    assert len(server.requests) == 2
    assert len(assistant_spans(out.response_mask)) == 2  # two assistant turns, feedback between
    # the rollout's log-probs stay aligned with the response (veRL's bypass mode trains on them)
    assert [lp for lp, m in zip(out.response_logprobs, out.response_mask) if m] == [-0.5] * sum(
        out.response_mask
    )
    assert len(out.response_logprobs) == len(out.response_ids)


def test_the_episode_times_its_generation_and_its_wait_for_the_public_tests(tokenizer, executor):
    """veRL's per-episode metrics, which the step's rollout metrics (cobalt.train.trainer) add up."""
    out, _ = run(tokenizer, executor, [WRONG, RIGHT])
    assert out.metrics.tool_calls > 0  # two real sandbox runs
    assert out.metrics.generate_sequences >= 0 and out.metrics.compute_score == 0  # scored later


def test_the_episode_carries_the_weight_versions_of_its_first_and_last_turns(tokenizer, executor):
    out, _ = run(tokenizer, executor, [WRONG] * 3)
    assert (out.extra_fields["min_global_steps"], out.extra_fields["max_global_steps"]) == (3, 6)


def test_a_turn_gets_its_share_of_the_response_budget_by_default(tokenizer, executor):
    _, server = run(tokenizer, executor, [WRONG] * 3, response_length=90, max_turns=3)
    assert server.requests[0][1] == 30  # 90 // 3


def test_the_episode_stops_at_the_turn_limit(tokenizer, executor):
    out, server = run(tokenizer, executor, [WRONG] * 5, max_turns=3)
    assert len(server.requests) == 3
    assert out.extra_fields[STATS_FIELD] == {"turns": 3, "context_cut": 0.0, "public_pass": 0.0}
    assert out.num_turns == 6


def test_the_episode_stops_cleanly_before_the_context_is_full(tokenizer, executor):
    prompt = len(tokenizer.apply_chat_template(initial_messages(INSTRUCTION), add_generation_prompt=True))
    answer = len(tokenizer.encode(WRONG, add_special_tokens=False)) + 1
    # room for turn 0 and its feedback, not for a second answer after it
    out, server = run(
        tokenizer,
        executor,
        [WRONG] * 3,
        prompt_length=prompt,
        response_length=answer + 40,
        max_turn_tokens=answer,
    )
    assert out.extra_fields[STATS_FIELD]["context_cut"] == 1.0
    assert out.extra_fields[STATS_FIELD]["turns"] == 1
    assert all(len(ids) + max_tokens <= prompt + answer + 40 for ids, max_tokens in server.requests)
    assert len(out.prompt_ids) + len(out.response_ids) <= prompt + answer + 40
    assert out.response_mask == [1] * answer  # the feedback that led nowhere is not kept


def test_the_feedback_turn_is_the_one_cobalts_trajectory_stage_writes(tokenizer, executor):
    _, server = run(tokenizer, executor, [WRONG, WRONG_AGAIN], max_turns=2)

    class Scripted:  # COBALT's multi-turn inference with the same answers
        async def complete(self, conversation, n, **params):
            return Completion([WRONG_AGAIN], {})

    problem = {"instruction": INSTRUCTION, "id": 1, "public_test_cases": PUBLIC}
    cobalt = asyncio.run(
        debug_conversation(WRONG, problem, Scripted(), executor, Sampling(), 1, "public_test_cases", False)
    )
    feedback = cobalt["conversation"][3]
    assert feedback["role"] == "user" and "Here is the execution feedback:" in feedback["content"]
    shown = tokenizer.decode(server.requests[1][0], skip_special_tokens=False)
    assert f"<|im_start|>user\n{feedback['content']}<|im_end|>" in shown


def test_every_turn_of_a_session_gets_the_sessions_advantage(tokenizer, executor):
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    scripts = [[WRONG, RIGHT], [WRONG, WRONG_AGAIN, WRONG], [WRONG_AGAIN, WRONG, WRONG]]
    outs = [run(tokenizer, executor, script)[0] for script in scripts]
    rewards = [1.0, 0.0, 0.0]
    width = max(len(o.response_ids) for o in outs)
    mask = torch.zeros(len(outs), width, dtype=torch.int64)
    scores = torch.zeros(len(outs), width)
    for row, (out, reward) in enumerate(zip(outs, rewards)):
        mask[row, : len(out.response_mask)] = torch.tensor(out.response_mask)
        scores[row, len(out.response_ids) - 1] = reward  # veRL puts the score on the last token
    data = DataProto.from_dict(
        tensors={"response_mask": mask, "rm_scores": scores, "token_level_rewards": scores}
    )
    data.non_tensor_batch["uid"] = np.array(["p"] * len(outs), dtype=object)
    keys = [f"p_{session}_0" for session in range(len(outs))]  # one output per session
    adv = compute_advantage_for_multi_trajectories(data, keys, AdvantageEstimator.GRPO).batch["advantages"]
    session_adv = []
    for row, out in enumerate(outs):
        spans = assistant_spans(out.response_mask)
        assert len(spans) >= 2  # a multi-turn session
        values = {round(float(v), 6) for start, end in spans for v in adv[row, start:end]}
        assert len(values) == 1  # every assistant token of every turn: one advantage
        session_adv.append(values.pop())
        assert torch.all(adv[row][mask[row] == 0] == 0)  # feedback tokens carry none
    assert session_adv[0] > 0 > session_adv[1] and session_adv[1] == session_adv[2]
