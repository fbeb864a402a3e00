"""veRL 0.9.1's synchronous PPO trainer, plus the reward-extra metrics of each training step.

veRL logs the reward manager's per-item ``reward_extra_info`` for validation only
(``val-aux/<data_source>/<key>/mean@n``). This trainer (``trainer.v1.trainer_mode=cobalt_sync``,
registered by :mod:`cobalt.train.verl_plugin`) adds, for every training step,
``reward/<key>/mean`` for each key of :data:`cobalt.train.reward_manager.EXTRA_KEYS` (pass rate,
the reward's parts correctness, improvement and format, format penalty rate, evaluator failure
and timeout rates, acc; for the online baselines also the episodes' turns, context cuts, public
passes and VeRPO's outcome and dense terms) and ``reward/evaluator_failure/count``, and ``reward/groups_with_spread/fraction`` (the GRPO groups
whose responses did not all score the same: the ones with a learning signal), plus the topology
the step ran on: ``trainer/world_size`` (FSDP ranks) and ``trainer/rollout_replicas``.
"""

from __future__ import annotations

import numpy as np
import transfer_queue as tq
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

from cobalt.common.stale import warn_if_stale
from cobalt.train.online_reward import ONLINE_KEYS, VERPO_KEYS
from cobalt.train.reward_manager import EXTRA_KEYS

TRAINER_MODE = "cobalt_sync"
# It overrides PPOTrainerSync._compute_metrics and reads TransferQueue's batch fields.
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


@register_trainer(TRAINER_MODE)
class CobaltTrainerSync(PPOTrainerSync):
    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        infos = self._reward_extra_infos(batch)
        metrics.update(reward_extra_metrics(infos))
        keys = [key for key, tag in zip(batch.keys, batch.tags) if not tag.get("is_padding", False)]
        scores = [info.get("acc", 0.0) if isinstance(info, dict) else 0.0 for info in infos]
        metrics["reward/groups_with_spread/fraction"] = groups_with_spread(keys, scores)
        metrics["trainer/world_size"] = self.actor_rollout_wg.world_size
        metrics["trainer/rollout_replicas"] = len(self.llm_server_manager.get_replicas())

    @staticmethod
    def _reward_extra_infos(batch) -> list[dict]:
        data = tq.kv_batch_get(
            keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"]
        )
        extra_fields = data.pop("extra_fields").tolist()
        real = [not tag.get("is_padding", False) for tag in batch.tags]
        return [
            (fields or {}).get("reward_extra_info", {}) for fields, keep in zip(extra_fields, real) if keep
        ]
