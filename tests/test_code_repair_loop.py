"""The online baselines' agent loop (cobalt/train/code_repair_loop.py) with a scripted server and the
real sandbox: each turn's prompt is exactly COBALT's context, when an episode stops, and the
advantage veRL's GRPO gives the rows of its turns."""

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


async def episode(tokenizer, executor, texts, *, max_turns=3, prompt_length=1024, response_length=512,
                  max_model_len=None, max_turn_tokens=None, thinking=False):  # fmt: skip
    """Run one episode on a scripted server; (the loop's outputs, one per turn, the server)."""
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
        thinking=thinking,
        executor=executor,
    )
    kwargs = {"raw_prompt": initial_messages(INSTRUCTION), "extra_info": {"public_test_cases": PUBLIC}}
    return await loop.run({"temperature": 1.0}, **kwargs), server


def run(*args, **kwargs):
    return asyncio.run(episode(*args, **kwargs))


def template_ids(tokenizer, conversation) -> list[int]:
    """The chat template applied to a conversation, with the generation prompt, as token ids."""
    ids = tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def test_the_episode_stops_when_the_public_tests_pass(tokenizer, executor):
    outs, server = run(tokenizer, executor, [WRONG, RIGHT, WRONG])
    assert len(outs) == len(server.requests) == 2  # a row per turn
    for out, (prompt_ids, _) in zip(outs, server.requests):
        assert out.prompt_ids == prompt_ids and out.response_mask == [1] * len(out.response_ids)
        # the rollout's log-probs stay aligned with the response (veRL's bypass mode trains on them)
        assert out.response_logprobs == [-0.5] * len(out.response_ids)
    for out in outs:  # every row carries the episode; the reward reads the last
        assert out.extra_fields[TURNS_FIELD] == [WRONG, RIGHT]
        assert out.extra_fields[STATS_FIELD] == {
            "turns": 2, "context_cut": 0.0, "public_pass": 1.0, "evaluator_requests": 2.0
        }  # fmt: skip


def test_a_turn_without_a_program_sends_the_evaluator_nothing(tokenizer, executor):
    outs, _ = run(tokenizer, executor, ["I am not sure.", RIGHT])
    assert outs[-1].extra_fields[STATS_FIELD]["turns"] == 2
    assert outs[-1].extra_fields[STATS_FIELD]["evaluator_requests"] == 1.0


def test_each_turn_times_its_generation_and_its_wait_for_the_public_tests(tokenizer, executor):
    """veRL's per-row metrics, which the step's rollout metrics (cobalt.train.trainer) add up."""
    outs, _ = run(tokenizer, executor, [WRONG, RIGHT])
    for out in outs:
        assert out.metrics.tool_calls > 0  # a real sandbox run each
        assert out.metrics.generate_sequences >= 0 and out.metrics.compute_score == 0  # scored later


def test_each_turn_carries_the_weight_versions_it_was_generated_with(tokenizer, executor):
    outs, _ = run(tokenizer, executor, [WRONG] * 3)
    versions = [(o.extra_fields["min_global_steps"], o.extra_fields["max_global_steps"]) for o in outs]
    assert versions == [(3, 4), (3, 5), (3, 6)]


def test_a_turn_may_use_the_whole_response_by_default(tokenizer, executor):
    _, server = run(tokenizer, executor, [WRONG] * 3, response_length=90, max_turns=3)
    assert [max_tokens for _, max_tokens in server.requests] == [90] * 3
    _, server = run(tokenizer, executor, [WRONG] * 3, response_length=90, max_turn_tokens=30)
    assert [max_tokens for _, max_tokens in server.requests] == [30] * 3


def test_the_episode_stops_at_the_turn_limit(tokenizer, executor):
    outs, server = run(tokenizer, executor, [WRONG] * 5, max_turns=3)
    assert len(server.requests) == len(outs) == 3
    assert outs[-1].extra_fields[STATS_FIELD] == {
        "turns": 3, "context_cut": 0.0, "public_pass": 0.0, "evaluator_requests": 3.0
    }  # fmt: skip
    assert [out.num_turns for out in outs] == [2, 4, 6]


def test_no_turn_starts_without_room_for_a_whole_answer(tokenizer, executor):
    """The second turn's context fits the prompt length but leaves less than an answer's worth of
    the context window: the episode stops after its first turn, marked cut, and no request is
    sent with less room than a whole answer."""
    prompt = len(template_ids(tokenizer, initial_messages(INSTRUCTION)))
    answer = len(tokenizer.encode(WRONG, add_special_tokens=False)) + 1
    outs, server = run(
        tokenizer,
        executor,
        [WRONG] * 3,
        prompt_length=prompt + answer + 400,  # turn 1's context fits the prompt length...
        response_length=answer,
        max_model_len=prompt + answer + 40,  # ...but not with an answer after it
    )
    assert outs[-1].extra_fields[STATS_FIELD]["context_cut"] == 1.0
    assert len(outs) == len(server.requests) == 1
    assert all(len(ids) + max_tokens <= prompt + answer + 40 for ids, max_tokens in server.requests)
    assert [max_tokens for _, max_tokens in server.requests] == [answer]


def test_a_context_longer_than_the_prompt_length_is_not_started(tokenizer, executor):
    prompt = len(template_ids(tokenizer, initial_messages(INSTRUCTION)))
    outs, server = run(tokenizer, executor, [WRONG] * 3, prompt_length=prompt + 20, response_length=400)
    assert len(outs) == len(server.requests) == 1 and outs[0].extra_fields[STATS_FIELD]["context_cut"] == 1.0


THINKING = "<think>\nMaybe print n.\n</think>\n\n"  # a thinking model's reasoning before its answer


@pytest.mark.parametrize("thinking", [False, True], ids=["answers", "thinking"])
def test_each_turns_prompt_is_the_chat_template_of_cobalts_conversation(tokenizer, executor, thinking):
    """Turns 2 and 3 are prompted with exactly the tokens of the chat template applied to the
    conversation COBALT's multi-turn inference builds from the same answers and feedback (for a
    thinking model: each earlier answer after its </think>), with nothing of an earlier turn twice."""
    answers = [WRONG, WRONG_AGAIN, WRONG]
    if thinking:
        answers = [THINKING + a for a in answers]
    _, server = run(tokenizer, executor, answers, max_turns=3, thinking=thinking)

    class Scripted:  # COBALT's multi-turn inference with the same answers: what each turn is shown
        def __init__(self):
            self.shown, self.answers = [], list(answers[1:])

        async def complete(self, conversation, n, **params):
            self.shown.append([dict(m) for m in conversation])
            return Completion([self.answers.pop(0)], {})

    model = Scripted()
    problem = {"instruction": INSTRUCTION, "id": 1, "public_test_cases": PUBLIC}
    asyncio.run(
        debug_conversation(answers[0], problem, model, executor, Sampling(), 2, "public_test_cases", thinking)
    )
    assert len(server.requests) == 3 and len(model.shown) == 2
    for (prompt_ids, _), conversation in zip(server.requests[1:], model.shown):
        expected = template_ids(tokenizer, conversation)
        assert prompt_ids == expected, (
            tokenizer.decode(prompt_ids, skip_special_tokens=False)
            + "\n!=\n"
            + tokenizer.decode(expected, skip_special_tokens=False)
        )
    shown = tokenizer.decode(server.requests[2][0], skip_special_tokens=False)
    assert shown.count(WRONG_AGAIN) == 1  # each earlier answer once
    assert "Maybe print n." not in shown  # for a thinking model: no earlier turn's reasoning


def test_every_row_of_a_session_gets_the_sessions_advantage(tokenizer, executor):
    """veRL 0.9.1's GRPO on multi-row sessions (keys {uid}_{session}_{turn}): the advantage of each
    session's last row, on every generated token of each of its rows."""
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    scripts = [[WRONG, RIGHT], [WRONG, WRONG_AGAIN, WRONG], [WRONG_AGAIN, WRONG, WRONG]]
    rewards = [1.0, 0.0, 0.0]
    rows, keys, row_rewards = [], [], []
    for session, (script, reward) in enumerate(zip(scripts, rewards)):
        outs = run(tokenizer, executor, script)[0]
        for turn, out in enumerate(outs):
            rows.append(out)
            keys.append(f"p_{session}_{turn}")
            row_rewards.append(reward if turn == len(outs) - 1 else 0.0)  # scored on the last row
    width = max(len(o.response_ids) for o in rows)
    mask = torch.zeros(len(rows), width, dtype=torch.int64)
    scores = torch.zeros(len(rows), width)
    for row, (out, reward) in enumerate(zip(rows, row_rewards)):
        mask[row, : len(out.response_mask)] = torch.tensor(out.response_mask)
        scores[row, len(out.response_ids) - 1] = reward  # veRL puts the score on the last token
    data = DataProto.from_dict(
        tensors={"response_mask": mask, "rm_scores": scores, "token_level_rewards": scores}
    )
    data.non_tensor_batch["uid"] = np.array(["p"] * len(rows), dtype=object)
    adv = compute_advantage_for_multi_trajectories(data, keys, AdvantageEstimator.GRPO).batch["advantages"]
    by_session: dict[str, set] = {}
    for row, key in enumerate(keys):
        values = {round(float(v), 6) for v in adv[row][mask[row] == 1]}
        by_session.setdefault(key.rsplit("_", 1)[0], set()).update(values)
    assert all(len(values) == 1 for values in by_session.values())  # one advantage per session
    first, second, third = (by_session[f"p_{i}"].pop() for i in range(3))
    assert first > 0 > second == third
