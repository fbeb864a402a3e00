"""The cobalt_sync trainer's advantage step (cobalt/train/trainer.py): with
``algorithm.adv_estimator=verpo`` each turn's row gets its turn's VeRPO advantage; any other
estimator goes through veRL's own step, which gives every row of a session the session's GRPO
advantage. TransferQueue is stood in for by a dict of rows."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

import torch
from omegaconf import OmegaConf
from transfer_queue import KVBatchMeta
from verl.utils.tensordict_utils import list_of_dict_to_tensordict

from cobalt.common.errors import ConfigError
from cobalt.reward.verpo import VerpoConstants, group_advantages
from cobalt.train import trainer
from cobalt.train.online_reward import PASS_MATRIX, encode_matrix
from cobalt.train.trainer import CobaltTrainerSync, pass_matrices, turn_row_advantages

# the online loop's rows: one per turn, every generated token trained (TransferQueue keeps each
# row at its own length)
TURN = [1, 1, 1]
SHORT_TURN = [1, 1]


class FakeQueue:
    """kv_batch_get / kv_batch_put over one TensorDict of rows (the keys' order)."""

    def __init__(self, rows: list[dict]):
        self.data = list_of_dict_to_tensordict(rows)

    def kv_batch_get(self, keys, partition_id, select_fields):
        present = set(self.data.keys())
        return self.data.select(*[f for f in select_fields if f in present])

    def kv_batch_put(self, keys, partition_id, fields):
        for name, value in fields.items():
            self.data.set(name, value)
        return KVBatchMeta(keys=list(keys), tags=[{} for _ in keys], partition_id=partition_id)


def make_trainer(estimator: str, **algorithm) -> CobaltTrainerSync:
    trainer_ = object.__new__(CobaltTrainerSync)  # the step needs only the config
    trainer_.config = OmegaConf.create(
        {
            "algorithm": {
                "adv_estimator": estimator,
                "use_kl_in_reward": False,
                "gamma": 1.0,
                "lam": 1.0,
                "norm_adv_by_std_in_grpo": True,
                "rollout_correction": {"rollout_is": None, "rollout_rs": None, "bypass_mode": False},
                **algorithm,
            },
            "actor_rollout_ref": {"rollout": {"n": 2}},
            "reward": {"reward_kwargs": {"verpo": {"beta": 0.5}}},
        }
    )
    return trainer_


def row(mask, score, matrix=None):
    info = {"acc": score} if matrix is None else {"acc": score, PASS_MATRIX: encode_matrix(matrix)}
    scores = torch.zeros(len(mask))
    scores[-1] = score
    return {
        "uid": "p",
        "response_mask": torch.tensor(mask),
        "rm_scores": scores,
        "extra_fields": {"reward_extra_info": info},
    }


def run_step(monkeypatch, estimator, rows, keys, tags=None, **algorithm):
    queue = FakeQueue(rows)
    monkeypatch.setattr(trainer, "tq", queue)
    monkeypatch.setattr("verl.trainer.ppo.v1.trainer_base.tq", queue)
    batch = KVBatchMeta(keys=keys, tags=tags or [{} for _ in keys], partition_id="train")
    make_trainer(estimator, **algorithm)._compute_advantage(batch, metrics={})
    return [a.tolist() for a in queue.data["advantages"].unbind()], queue


def test_a_turns_row_gets_its_turns_advantage_on_its_tokens():
    assert turn_row_advantages(torch.tensor(TURN), [0.5, -0.25], 1).tolist() == [-0.25] * 3
    assert turn_row_advantages(torch.tensor([1, 1, 0]), [0.5, -0.25], 0).tolist() == [0.5, 0.5, 0.0]


def test_a_row_with_no_advantage_for_its_turn_is_left_at_zero():
    assert turn_row_advantages(torch.tensor(TURN), [0.5], 2).tolist() == [0.0] * 3
    assert turn_row_advantages(torch.tensor([0, 0]), [], 0).tolist() == [0.0, 0.0]  # a padding row


def test_each_sessions_verdicts_come_from_its_rows_and_padding_has_none():
    rows = [{"reward_extra_info": {PASS_MATRIX: "01|11"}}] * 2 + [{}]
    tags = [{}, {}, {"is_padding": True}]
    assert pass_matrices(["p_0_0", "p_0_1", "pad_0_0"], rows, tags) == {"p_0": [[False, True], [True, True]]}
    with pytest.raises(KeyError, match="VerpoRewardManager"):
        pass_matrices(["p_0_0"], [{"reward_extra_info": {"acc": 1.0}}], [{}])


# a 2-turn session (rows p_0_0, p_0_1: veRL copies the last row's reward info to the first) and a
# 1-turn one; hidden tests "3" and "0": the first session repairs, the second echoes
TWO_SESSIONS = ["p_0_0", "p_0_1", "p_1_0"]
REPAIRED, ECHOED = [[False, True], [True, True]], [[False, True]]


def test_the_verpo_step_gives_each_turns_row_its_turns_advantage_over_the_whole_group(monkeypatch):
    rows = [row(TURN, 1.0, REPAIRED), row(SHORT_TURN, 1.0, REPAIRED), row(TURN, 0.0, ECHOED)]
    advantages, queue = run_step(monkeypatch, "verpo", rows, TWO_SESSIONS)
    repaired, echoed = group_advantages([REPAIRED, ECHOED], VerpoConstants(beta=0.5))
    assert advantages[0] == pytest.approx([repaired.turn_advantages[0]] * 3)
    assert advantages[1] == pytest.approx([repaired.turn_advantages[1]] * 2)
    assert advantages[2] == pytest.approx([echoed.turn_advantages[0]] * 3)
    assert [r.tolist() for r in queue.data["returns"].unbind()] == advantages


def test_grpo_gives_every_row_of_a_session_the_sessions_advantage(monkeypatch):
    """veRL's step on two sessions scored 1 (two turns) and 0 (one turn): (score - mean) / std =
    +-1/sqrt(2), on every generated token of every row of each session."""
    rows = [row(TURN, 1.0), row(SHORT_TURN, 1.0), row(TURN, 0.0)]
    advantages, _ = run_step(monkeypatch, "grpo", rows, TWO_SESSIONS)
    a = 2**-0.5
    assert advantages[0] == pytest.approx([a] * 3, abs=1e-4)
    assert advantages[1] == pytest.approx([a, a], abs=1e-4)
    assert advantages[2] == pytest.approx([-a] * 3, abs=1e-4)


@pytest.mark.parametrize(
    "setting",
    [{"use_kl_in_reward": True}, {"rollout_correction": {"rollout_is": "token", "bypass_mode": False}}],
)
def test_verpo_refuses_what_its_step_would_skip(monkeypatch, setting):
    with pytest.raises(ConfigError, match="adv_estimator=verpo"):
        run_step(monkeypatch, "verpo", [row(TURN, 0.0, ECHOED)], ["p_0_0"], **setting)


def test_verpo_outside_the_cobalt_sync_trainer_is_a_clear_error():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    with pytest.raises(ConfigError, match="trainer_mode=cobalt_sync"):
        get_adv_estimator_fn("verpo")(token_level_rewards=torch.zeros(1, 1), response_mask=torch.ones(1, 1))
