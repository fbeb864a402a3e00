"""The cobalt_sync trainer's advantage step (cobalt/train/trainer.py): with
``algorithm.adv_estimator=verpo`` each turn's tokens get their turn's VeRPO advantage; any other
estimator goes through veRL's own step. TransferQueue is stood in for by a dict of rows."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

import torch
from omegaconf import OmegaConf
from transfer_queue import KVBatchMeta
from verl.utils.tensordict_utils import list_of_dict_to_tensordict

from cobalt.common.errors import ConfigError
from cobalt.train import trainer
from cobalt.train.online_reward import TURN_ADVANTAGES
from cobalt.train.trainer import CobaltTrainerSync, turn_advantages_of, turn_token_advantages

# a 2-turn session: turn 0 (2 tokens), feedback (2), turn 1 (3), then its end-of-turn token
TWO_TURNS = [1, 1, 0, 0, 1, 1, 1, 0]
ONE_TURN = [1, 1, 1]


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
        }
    )
    return trainer_


def row(mask, score, turn_advantages=None):
    info = {"acc": score} if turn_advantages is None else {"acc": score, TURN_ADVANTAGES: turn_advantages}
    scores = torch.zeros(len(mask))
    scores[-1] = score
    return {
        "uid": "p",
        "response_mask": torch.tensor(mask),
        "rm_scores": scores,
        "extra_fields": {"reward_extra_info": info},
    }


def run_step(monkeypatch, estimator, rows, tags=None, **algorithm):
    queue = FakeQueue(rows)
    monkeypatch.setattr(trainer, "tq", queue)
    monkeypatch.setattr("verl.trainer.ppo.v1.trainer_base.tq", queue)
    keys = [f"p_{i}_0" for i in range(len(rows))]
    batch = KVBatchMeta(keys=keys, tags=tags or [{} for _ in keys], partition_id="train")
    make_trainer(estimator, **algorithm)._compute_advantage(batch, metrics={})
    return [a.tolist() for a in queue.data["advantages"].unbind()], queue


def test_each_turn_gets_its_own_advantage_and_the_feedback_none():
    assert turn_token_advantages(torch.tensor(TWO_TURNS), [0.5, -0.25]).tolist() == [
        0.5, 0.5, 0.0, 0.0, -0.25, -0.25, -0.25, 0.0
    ]  # fmt: skip
    assert turn_token_advantages(torch.tensor([0, 1, 1, 0, 1]), [2.0, 3.0]).tolist() == [0, 2, 2, 0, 3]


def test_a_row_whose_runs_do_not_match_its_turns_is_left_at_zero():
    assert turn_token_advantages(torch.tensor(TWO_TURNS), [0.5]).tolist() == [0.0] * 8
    assert turn_token_advantages(torch.tensor([0, 0]), []).tolist() == [0.0, 0.0]  # a padding row


def test_the_advantages_read_back_from_transfer_queue_as_a_tensor():
    info = {"reward_extra_info": {TURN_ADVANTAGES: torch.tensor([0.5, -0.25])}}
    assert turn_advantages_of("p_0_0", info, {}) == [0.5, -0.25]
    assert turn_advantages_of("pad_0_0", {}, {"is_padding": True}) == []
    with pytest.raises(KeyError, match="VerpoRewardManager"):
        turn_advantages_of("p_0_0", {"reward_extra_info": {"acc": 1.0}}, {})


def test_the_verpo_step_writes_each_turns_advantage_to_its_tokens(monkeypatch):
    rows = [row(TWO_TURNS, 1.0, [0.5, -0.25]), row(ONE_TURN, 0.0, [-0.75])]
    advantages, queue = run_step(monkeypatch, "verpo", rows)
    assert advantages == [[0.5, 0.5, 0.0, 0.0, -0.25, -0.25, -0.25, 0.0], [-0.75] * 3]
    assert [r.tolist() for r in queue.data["returns"].unbind()] == advantages


def test_another_estimator_goes_through_verls_step(monkeypatch):
    """GRPO on two sessions scored 1 and 0: (score - mean) / std = +-1/sqrt(2) on every policy token."""
    rows = [row(TWO_TURNS, 1.0), row(ONE_TURN, 0.0)]
    advantages, _ = run_step(monkeypatch, "grpo", rows)
    a = 2**-0.5
    assert advantages[0] == pytest.approx([a, a, 0, 0, a, a, a, 0], abs=1e-4)
    assert advantages[1] == pytest.approx([-a] * 3, abs=1e-4)


@pytest.mark.parametrize(
    "setting",
    [{"use_kl_in_reward": True}, {"rollout_correction": {"rollout_is": "token", "bypass_mode": False}}],
)
def test_verpo_refuses_what_its_step_would_skip(monkeypatch, setting):
    with pytest.raises(ConfigError, match="adv_estimator=verpo"):
        run_step(monkeypatch, "verpo", [row(ONE_TURN, 0.0, [0.0])], **setting)


def test_verpo_outside_the_cobalt_sync_trainer_is_a_clear_error():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    with pytest.raises(ConfigError, match="trainer_mode=cobalt_sync"):
        get_adv_estimator_fn("verpo")(token_level_rewards=torch.zeros(1, 1), response_mask=torch.ones(1, 1))
