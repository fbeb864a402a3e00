"""The reward manager against the real evaluator app: with no more scores in flight than the
evaluator runs at once (what the launcher sets, ``cobalt.train.profile.within_evaluator_capacity``),
the reward's call timeout measures running, not waiting; with more, right programs queued behind
busy sandboxes time out and score as failing tests (what the learning check hit in CI)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("verl")
from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402

from cobalt.reward import score_details  # noqa: E402
from cobalt.reward.config import reward_config  # noqa: E402
from cobalt.serve.evaluator import load_evaluator_config  # noqa: E402
from cobalt.train.reward_manager import CobaltRewardManager  # noqa: E402
from cobalt.train.tiny_policy import response_text  # noqa: E402

# Right, and busy for a quarter of a CPU second per core of this machine: the evaluator's 8 at
# once take about 2 s (on up to 8 cores), 6 rounds of them 12 s, beyond the call's 8 s
BUSY_PROGRAM = f"""
import time
start = time.process_time()
while time.process_time() - start < {0.25 * (os.cpu_count() or 2)}:
    pass
print(int(input()) * 2)
"""
CALL_TIMEOUT_S = 8.0


class ByteTokenizer:
    """Token ids are the response's UTF-8 bytes + 1 (0 pads)."""

    def decode(self, ids, skip_special_tokens=False):
        return bytes(int(i) - 1 for i in ids if int(i) > 0).decode()


def busy_batch(n: int) -> DataProto:
    ids = list(response_text(BUSY_PROGRAM).encode())
    responses = torch.tensor([[b + 1 for b in ids]] * n)
    prompts = torch.ones((n, 2), dtype=torch.long)
    tests = json.dumps({"inputs": ["21\n"], "outputs": ["42\n"]})
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.ones((n, 2 + responses.shape[1]), dtype=torch.long),
        },
        non_tensors={
            "data_source": np.array(["code_taco_verified"] * n, dtype=object),
            "reward_model": np.array([{"style": "rule", "ground_truth": tests}] * n, dtype=object),
            "extra_info": np.array([{"split": "train", "index": i} for i in range(n)], dtype=object),
        },
    )


def score_with(max_in_flight: int, n: int) -> dict:
    config = OmegaConf.create(
        {
            "reward": {
                "num_workers": 1,
                "reward_kwargs": {"cobalt": {"max_in_flight": max_in_flight, "print_examples": False}},
            },
            "data": {"train_batch_size": 1},
            "actor_rollout_ref": {"rollout": {"n": n}},
        }
    )
    reward = functools.partial(
        score_details, config=dataclasses.replace(reward_config(), call_timeout_s=CALL_TIMEOUT_S)
    )
    manager = CobaltRewardManager(config, ByteTokenizer(), reward)
    _, extras = asyncio.run(manager.score_batch(busy_batch(n)))
    return extras


@pytest.mark.slow
def test_scores_within_the_evaluators_capacity_never_time_out_waiting(evaluator_app):
    capacity = load_evaluator_config("evaluator")[1].capacity
    assert capacity == 8
    extras = score_with(max_in_flight=capacity, n=6 * capacity)
    assert extras["evaluator_failure"] == [0.0] * (6 * capacity)
    assert extras["pass_rate"] == [1.0] * (6 * capacity)


@pytest.mark.slow
def test_more_scores_in_flight_than_the_evaluator_runs_time_right_programs_out(evaluator_app):
    capacity = load_evaluator_config("evaluator")[1].capacity
    extras = score_with(max_in_flight=6 * capacity, n=6 * capacity)
    failed = sum(extras["evaluator_failure"])
    assert failed > 0  # waited in the evaluator on the call's clock, scored as a failing test
    assert all(rate == 0.0 for rate, f in zip(extras["pass_rate"], extras["evaluator_failure"]) if f)
