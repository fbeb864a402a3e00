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


@register_trainer(TRAINER_MODE)
class CobaltTrainerSync(PPOTrainerSync):
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
