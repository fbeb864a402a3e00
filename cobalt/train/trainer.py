"""veRL 0.9.1's synchronous PPO trainer, plus the reward-extra metrics of each training step.

veRL logs the reward manager's per-item ``reward_extra_info`` for validation only
(``val-aux/<data_source>/<key>/mean@n``). This trainer (``trainer.v1.trainer_mode=cobalt_sync``,
registered by :mod:`cobalt.train.verl_plugin`) adds, for every training step,
``reward/<key>/mean`` for each key of :data:`cobalt.train.reward_manager.EXTRA_KEYS` (pass rate,
the reward's parts correctness, improvement and format, format penalty rate, evaluator failure
and timeout rates, acc; for the online baselines also the episodes' turns, context cuts, public
passes and VeRPO's outcome and dense terms) and ``reward/evaluator_failure/count``, and ``reward/groups_with_spread/fraction`` (the GRPO groups
whose responses did not all score the same: the ones with a learning signal), plus the topology
the step ran on: ``trainer/world_size`` (FSDP ranks) and ``trainer/rollout_replicas``, and what
the rollout cost (:func:`rollout_metrics`, read by ``bench/bench_methods.py``).

With ``algorithm.adv_estimator=verpo`` (VeRPO-MT) it also replaces veRL's advantage step: each
turn's tokens get that turn's VeRPO advantage, computed over the group by
:class:`cobalt.train.online_reward.VerpoRewardManager` (:func:`turn_token_advantages`).
"""

from __future__ import annotations

import logging

import numpy as np
import torch
import transfer_queue as tq
from tensordict import TensorDict
from verl.trainer.ppo.core_algos import register_adv_est
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from cobalt.common.errors import ConfigError
from cobalt.common.stale import warn_if_stale
from cobalt.train.online_reward import ONLINE_KEYS, TURN_ADVANTAGES, VERPO_ESTIMATOR, VERPO_KEYS
from cobalt.train.reward_manager import EXTRA_KEYS

log = logging.getLogger("cobalt.train.trainer")

TRAINER_MODE = "cobalt_sync"
# It overrides PPOTrainerSync._compute_metrics and _compute_advantage and reads and writes
# TransferQueue's batch fields.
WRITTEN_FOR = {"verl": "0.9.1", "TransferQueue": "0.1.11"}
warn_if_stale("the cobalt_sync trainer", WRITTEN_FOR)


def reward_extra_metrics(infos: list[dict]) -> dict[str, float]:
    """Means over the items that carry each key; the failure count."""
    metrics = {}
    for key in EXTRA_KEYS + ONLINE_KEYS + VERPO_KEYS:  # the online keys only where present
        values = [float(info[key]) for info in infos if isinstance(info, dict) and info.get(key) is not None]
        if values:
            metrics[f"reward/{key}/mean"] = float(np.mean(values))
    failures = [info.get("evaluator_failure", 0) for info in infos if isinstance(info, dict)]
    metrics["reward/evaluator_failure/count"] = float(np.sum(failures)) if failures else 0.0
    return metrics


def groups_with_spread(keys: list[str], scores: list[float]) -> float:
    """The fraction of GRPO groups (responses to one prompt: keys ``{uid}_{session}_{index}``)
    whose scores are not all equal; only those get a non-zero advantage."""
    groups: dict[str, set] = {}
    for key, score in zip(keys, scores):
        groups.setdefault(str(key).split("_", 1)[0], set()).add(round(float(score), 9))
    return sum(len(values) > 1 for values in groups.values()) / len(groups) if groups else 0.0


# veRL's per-episode agent-loop timings (AgentLoopMetrics; a loop sets only those it measures)
LOOP_TIMES = {"generate": "generate_sequences", "public_tests": "tool_calls", "reward": "compute_score"}


def rollout_metrics(loop_metrics: list[dict], generated_tokens: list[int]) -> dict[str, float]:
    """What a step's rollout cost, from its rows (one per response or episode): ``rollout/episodes``,
    ``rollout/generated_tokens`` (the policy's tokens, feedback turns excluded), and per episode the
    mean seconds spent generating, waiting for the public tests and for the reward, and waiting for
    the evaluator in all (``rollout/<what>_s/mean``). The episodes of a step overlap in time."""
    count = len(loop_metrics)
    metrics = {"rollout/episodes": float(count), "rollout/generated_tokens": float(sum(generated_tokens))}
    for name, key in LOOP_TIMES.items():
        total = sum(float((m or {}).get(key) or 0.0) for m in loop_metrics)
        metrics[f"rollout/{name}_s/mean"] = total / count if count else 0.0
    metrics["rollout/evaluator_wait_s/mean"] = (
        metrics["rollout/public_tests_s/mean"] + metrics["rollout/reward_s/mean"]
    )
    return metrics


def row_sums(mask) -> list[int]:
    """Each row's sum of a (jagged nested or padded) ``response_mask``."""
    rows = mask.unbind() if getattr(mask, "is_nested", False) else list(mask)
    return [int(row.sum()) for row in rows]


def as_list(values) -> list:
    """A TransferQueue field as a list of plain values: a stack's ``tolist()``, or the list it
    already is (a dict field comes back as a list of TensorDicts), each TensorDict as a dict."""
    items = values.tolist() if hasattr(values, "tolist") else list(values)
    return [item.to_dict() if hasattr(item, "to_dict") else item for item in items]


def turn_advantages_of(key: str, extra_fields, tag: dict) -> list[float]:
    """A row's per-turn VeRPO advantages from its reward-extra info (a list, or a tensor once
    TransferQueue has stored it); none for a padding row."""
    info = (extra_fields or {}).get("reward_extra_info") or {}
    if TURN_ADVANTAGES not in info:
        if tag.get("is_padding", False):
            return []
        raise KeyError(
            f"row {key} carries no {TURN_ADVANTAGES}: algorithm.adv_estimator={VERPO_ESTIMATOR} needs "
            "reward.reward_manager.name=VerpoRewardManager"
        )
    return [float(a) for a in info[TURN_ADVANTAGES]]


@register_adv_est(VERPO_ESTIMATOR)
def verpo_outside_cobalt_sync(*args, **kwargs):
    """Registered so that veRL knows the name; only :class:`CobaltTrainerSync` can apply it."""
    raise ConfigError(
        f"algorithm.adv_estimator={VERPO_ESTIMATOR} needs trainer.v1.trainer_mode={TRAINER_MODE}: "
        "VeRPO's per-turn advantages come from VerpoRewardManager's reward-extra info"
    )


def turn_token_advantages(mask, turn_advantages) -> torch.Tensor:
    """One row's token advantages: the t-th run of ``mask`` 1s (turn t's tokens) gets
    ``turn_advantages[t]``, the feedback between turns (mask 0) gets 0. A row whose runs do not
    match its turns (none: nothing to train) gets 0 everywhere, with a warning."""
    mask = torch.as_tensor(mask).bool()
    previous = torch.zeros_like(mask)
    previous[1:] = mask[:-1]
    starts = mask & ~previous
    run = torch.cumsum(starts.long(), dim=0) - 1  # the turn of each mask-1 token
    values = torch.as_tensor([float(a) for a in turn_advantages], dtype=torch.float32)
    runs = int(starts.sum())
    if runs != len(values) or not runs:
        if runs:
            log.warning(
                "VeRPO: %d runs of policy tokens but %d turn advantages: row left at 0", runs, len(values)
            )
        return torch.zeros(mask.shape, dtype=torch.float32)
    return torch.where(mask, values[run.clamp(min=0)], 0.0)


@register_trainer(TRAINER_MODE)
class CobaltTrainerSync(PPOTrainerSync):
    def _compute_advantage(self, batch, metrics):
        """veRL's, except for ``algorithm.adv_estimator=verpo``: each turn's tokens get the turn's
        VeRPO advantage from the reward-extra info (:func:`turn_token_advantages`), and the returns
        the same (GRPO's convention). veRL's step would also apply a KL penalty in the reward or a
        decoupled rollout correction (weights, rejection) here: VeRPO-MT refuses both."""
        algorithm = self.config.algorithm
        if algorithm.adv_estimator != VERPO_ESTIMATOR:
            return super()._compute_advantage(batch, metrics)
        correction = algorithm.get("rollout_correction") or {}
        corrects = correction.get("rollout_is") or correction.get("rollout_rs")
        if algorithm.use_kl_in_reward or (corrects and not correction.get("bypass_mode", False)):
            raise ConfigError(
                f"algorithm.adv_estimator={VERPO_ESTIMATOR} supports neither algorithm.use_kl_in_reward "
                "nor algorithm.rollout_correction's rollout_is or rollout_rs outside bypass_mode"
            )
        data = tq.kv_batch_get(
            keys=batch.keys, partition_id=batch.partition_id, select_fields=["response_mask", "extra_fields"]
        )
        masks, fields = data["response_mask"], as_list(data["extra_fields"])
        rows = masks.unbind() if getattr(masks, "is_nested", False) else list(masks)
        advantages = [
            turn_token_advantages(mask, turn_advantages_of(key, extra, tag))
            for key, mask, extra, tag in zip(batch.keys, rows, fields, batch.tags)
        ]
        nested = torch.nested.as_nested_tensor(advantages, layout=torch.jagged)
        output = TensorDict({"advantages": nested, "returns": nested.clone()}, batch_size=len(batch))
        return tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=output)

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        rows = self._real_rows(batch, ["extra_fields", "metrics", "response_mask"])
        infos = [(fields or {}).get("reward_extra_info", {}) for fields in rows["extra_fields"]]
        metrics.update(reward_extra_metrics(infos))
        metrics.update(rollout_metrics(rows["metrics"], rows["response_mask"]))
        keys = [key for key, tag in zip(batch.keys, batch.tags) if not tag.get("is_padding", False)]
        scores = [info.get("acc", 0.0) if isinstance(info, dict) else 0.0 for info in infos]
        metrics["reward/groups_with_spread/fraction"] = groups_with_spread(keys, scores)
        metrics["trainer/world_size"] = self.actor_rollout_wg.world_size
        metrics["trainer/rollout_replicas"] = len(self.llm_server_manager.get_replicas())

    @staticmethod
    def _real_rows(batch, fields: list[str]) -> dict[str, list]:
        """``fields`` of the batch's rows that are not padding, from TransferQueue (a mask: its row sums)."""
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=fields)
        real = [not tag.get("is_padding", False) for tag in batch.tags]
        rows = {}
        for field in fields:
            values = row_sums(data[field]) if field.endswith("_mask") else as_list(data[field])
            rows[field] = [value for value, keep in zip(values, real) if keep]
        return rows
