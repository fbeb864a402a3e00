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
from cobalt.reward.verpo import VerpoConstants, group_advantages
from cobalt.train.code_repair_loop import STATS_FIELD, TURNS_FIELD
from cobalt.train.online_reward import (
    PASS_MATRIX,
    OnlineRewardManager,
    VerpoRewardManager,
    decode_matrix,
    verpo_turn_advantages,
)

HIDDEN = json.dumps({"inputs": ["3\n", "0\n"], "outputs": ["6\n", "0\n"]})
ECHO = "```python\nn = int(input())\nprint(n)\n```"  # passes the hidden "0" test only
RIGHT = "```python\nn = int(input())\nprint(2 * n)\n```"
T, F = True, False


def session(turns, uid="p", session_id=0, cut=0.0, split="train", public_requests=0.0):
    stats = {
        "turns": len(turns),
        "context_cut": cut,
        "public_pass": 0.0,
        "evaluator_requests": public_requests,
    }
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
            "extra_info": np.array([{"split": split, "index": 0}], dtype=object),
            "tool_extra_fields": fields,
            "uid": np.array([uid], dtype=object),
            "session_id": np.array([session_id], dtype=object),
        },
    )


def config(n=2, num_workers=1, estimator="verpo", verpo=None):
    return OmegaConf.create(
        {
            "reward": {
                "num_workers": num_workers,
                "reward_kwargs": {"cobalt": {"print_examples": False}, "verpo": verpo or {}},
            },
            "data": {"train_batch_size": 1},
            "algorithm": {"adv_estimator": estimator},
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


def test_verpo_mt_scores_the_outcome_and_carries_every_turns_verdicts():
    """Each session alone: its outcome as the reward and its [turn][test] verdicts on the hidden
    tests for the trainer, which weighs the tests over the group (no session waits for another)."""
    manager = VerpoRewardManager(config(n=2, num_workers=2), tokenizer=None, compute_score=score_details)
    repaired = asyncio.run(manager.run_single(session([ECHO, RIGHT], session_id=0)))
    echoed = asyncio.run(manager.run_single(session([ECHO], session_id=1)))  # its sibling never came
    # hidden tests "3" and "0": ECHO passes the second, RIGHT both
    assert decode_matrix(repaired["reward_extra_info"][PASS_MATRIX]) == [[F, T], [T, T]]
    assert decode_matrix(echoed["reward_extra_info"][PASS_MATRIX]) == [[F, T]]
    assert repaired["reward_score"] == 1.0 and repaired["reward_extra_info"]["outcome"] == 1.0
    assert echoed["reward_score"] == 0.0 and echoed["reward_extra_info"]["pass_rate"] == 0.5
    assert repaired["reward_extra_info"]["improvement"] == 0.0  # no offline best to improve on
    episodes = verpo_turn_advantages(
        {"p_0": decode_matrix(repaired["reward_extra_info"][PASS_MATRIX]),
         "p_1": decode_matrix(echoed["reward_extra_info"][PASS_MATRIX])},
        VerpoConstants(beta=0.5),
    )  # fmt: skip
    expected = group_advantages([[[F, T], [T, T]], [[F, T]]], VerpoConstants(beta=0.5))
    assert [episodes["p_0"], episodes["p_1"]] == expected


def test_verpo_mt_at_the_paper_profiles_shape_groups_every_session_of_a_problem():
    """128 problems x 16 sessions, in shuffled order: every problem's group is made of all 16 of its
    sessions, whatever order they came in (a stand-in scorer's verdicts)."""
    import random

    rng = random.Random(0)
    sessions = {}
    for problem in range(128):
        for member in range(16):
            turns = rng.randint(1, 3)
            sessions[f"u{problem}_{member}"] = [[rng.random() < 0.4 for _ in range(7)] for _ in range(turns)]
    shuffled = dict(rng.sample(list(sessions.items()), len(sessions)))
    episodes = verpo_turn_advantages(shuffled, VerpoConstants())
    assert len(episodes) == 128 * 16
    for problem in range(128):
        members = [f"u{problem}_{m}" for m in range(16)]
        expected = group_advantages([sessions[m] for m in members], VerpoConstants())
        for member, episode in zip(members, expected):  # the same sums, perhaps in another order
            assert episodes[member].turn_advantages == pytest.approx(episode.turn_advantages, abs=1e-12)
            assert episodes[member].outcome == episode.outcome


def test_verpo_mt_needs_its_estimator_and_known_constants():
    from cobalt.common.errors import ConfigError

    with pytest.raises(ConfigError, match=r"algorithm\.adv_estimator=verpo"):
        VerpoRewardManager(config(estimator="grpo"), tokenizer=None, compute_score=score_details)
    with pytest.raises(ConfigError, match=r"reward\.reward_kwargs\.verpo: unknown key"):
        VerpoRewardManager(config(verpo={"dense_weight": 0.5}), tokenizer=None, compute_score=score_details)
    with pytest.raises(ConfigError, match="gamma"):
        VerpoRewardManager(config(verpo={"gamma": 0.0}), tokenizer=None, compute_score=score_details)


def test_an_episodes_evaluator_requests_are_its_turns_and_its_rewards_counted_where_sent():
    """The loop's public-test requests (in the session's statistics) plus the reward's own, which
    the evaluator client counts as it sends them: one for GRPO-MT's final turn, one per turn with a
    program for VeRPO-MT's verdicts, none for a turn without one."""
    grpo_mt = OnlineRewardManager(config(), tokenizer=None, compute_score=score_details)
    out = asyncio.run(grpo_mt.run_single(session([ECHO, RIGHT], public_requests=2.0)))
    assert out["reward_extra_info"]["evaluator_requests"] == 2.0 + 1.0
    verpo = VerpoRewardManager(config(), tokenizer=None, compute_score=score_details)
    three = asyncio.run(verpo.run_single(session([ECHO, "no program", RIGHT], public_requests=2.0)))
    assert three["reward_extra_info"]["evaluator_requests"] == 2.0 + 2.0
