"""The online baselines' reward managers (cobalt/train/online_reward.py) on sessions shaped as veRL's
agent-loop worker sends them (AgentLoopWorker._compute_score), scored by the real sandbox."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("verl")

import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto

from cobalt.reward import score_details
from cobalt.train.code_repair_loop import STATS_FIELD, TURNS_FIELD
from cobalt.train.online_reward import OnlineRewardManager, VerpoRewardManager

HIDDEN = json.dumps({"inputs": ["3\n", "0\n"], "outputs": ["6\n", "0\n"]})
ECHO = "```python\nn = int(input())\nprint(n)\n```"  # passes the hidden "0" test only
RIGHT = "```python\nn = int(input())\nprint(2 * n)\n```"


def session(turns, uid="p", session_id=0, cut=0.0):
    stats = {"turns": len(turns), "context_cut": cut, "public_pass": 0.0}
    fields = np.empty(1, dtype=object)
    fields[0] = {TURNS_FIELD: turns, STATS_FIELD: stats}
    return DataProto.from_dict(
        tensors={
            "prompts": torch.ones((1, 2), dtype=torch.long),
            "responses": torch.ones((1, 3), dtype=torch.long),
            "attention_mask": torch.ones((1, 5), dtype=torch.long),
        },
        non_tensors={
            "data_source": np.array(["code_taco_verified"], dtype=object),
            "reward_model": np.array([{"style": "rule", "ground_truth": HIDDEN}], dtype=object),
            "extra_info": np.array([{"split": "train", "index": 0}], dtype=object),
            "tool_extra_fields": fields,
            "uid": np.array([uid], dtype=object),
            "session_id": np.array([session_id], dtype=object),
        },
    )


def config(n=2, num_workers=1):
    return OmegaConf.create(
        {
            "reward": {"num_workers": num_workers, "reward_kwargs": {"cobalt": {"print_examples": False}}},
            "data": {"train_batch_size": 1},
            "actor_rollout_ref": {"rollout": {"n": n, "val_kwargs": {"n": 1}}},
        }
    )


@pytest.fixture(autouse=True)
def local_evaluator(monkeypatch):
    monkeypatch.setenv("COBALT_EVALUATOR", "local")


def test_grpo_mt_scores_the_final_turn_with_cobalts_reward():
    manager = OnlineRewardManager(config(), tokenizer=None, compute_score=score_details)
    out = asyncio.run(manager.run_single(session([ECHO, RIGHT], cut=1.0)))
    expected = asyncio.run(score_details("code_taco_verified", RIGHT, HIDDEN, {"prev_best_pass_rate": 0.0}))
    assert out["reward_score"] == expected["score"]
    assert out["reward_extra_info"]["pass_rate"] == 1.0
    assert out["reward_extra_info"]["turns"] == 2.0 and out["reward_extra_info"]["context_cut"] == 1.0
    worse = asyncio.run(manager.run_single(session([RIGHT, ECHO])))  # the final turn counts, not the best
    assert worse["reward_extra_info"]["pass_rate"] == 0.5


def test_verpo_mt_weighs_the_tests_over_the_group():
    manager = VerpoRewardManager(config(n=2), tokenizer=None, compute_score=score_details)

    async def both():
        return await asyncio.gather(
            manager.run_single(session([ECHO, RIGHT], session_id=0)),
            manager.run_single(session([ECHO], session_id=1)),
        )

    repaired, echoed = asyncio.run(both())
    # programs ECHO, RIGHT, ECHO: pass rates 1/3 ("3") and 1 ("0") -> weights 1 and 0;
    # the repaired episode's turns score 0 and 1 (dense 0.5) and it passes: 1 + 0.5 * 0.5
    assert repaired["reward_score"] == pytest.approx(1.25)
    assert repaired["reward_extra_info"]["outcome"] == 1.0
    assert repaired["reward_extra_info"]["dense"] == pytest.approx(0.5)
    assert echoed["reward_score"] == 0.0 and echoed["reward_extra_info"]["pass_rate"] == 0.5
    assert repaired["reward_extra_info"]["improvement"] == 0.0  # no offline best to improve on


def test_verpo_mt_refuses_several_reward_workers():
    from cobalt.common.errors import ConfigError

    with pytest.raises(ConfigError, match=r"reward\.num_workers=1"):
        VerpoRewardManager(config(num_workers=2), tokenizer=None, compute_score=score_details)
