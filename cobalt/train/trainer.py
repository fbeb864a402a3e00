"""veRL 0.9.1's synchronous PPO trainer, plus the reward-extra metrics of each training step.

veRL logs the reward manager's per-item ``reward_extra_info`` for validation only
(``val-aux/<data_source>/<key>/mean@n``). This trainer (``trainer.v1.trainer_mode=cobalt_sync``,
registered by :mod:`cobalt.train.verl_plugin`) adds, for every training step,
``reward/<key>/mean`` for each key of :data:`cobalt.train.reward_manager.EXTRA_KEYS` (pass rate,
the reward's parts correctness, improvement and format, format penalty rate, evaluator failure
and timeout rates, acc; for the online baselines also the episodes' turns, context cuts, public
passes and VeRPO's outcome and dense terms), ``reward/evaluator_failure/count`` and
``reward/evaluator_requests/count`` (counted where they are sent: an online episode's public tests
and its reward's), and ``reward/groups_with_spread/fraction`` (the GRPO groups
whose responses did not all score the same: the ones with a learning signal), plus the topology
the step ran on: ``trainer/world_size`` (FSDP ranks) and ``trainer/rollout_replicas``, and what
the rollout cost (:func:`rollout_metrics`, read by ``bench/bench_methods.py``).

With ``algorithm.adv_estimator=verpo`` (VeRPO-MT) it also replaces veRL's advantage step: each
problem's sessions form its group, their tests are weighed over all of them from the verdicts
:class:`cobalt.train.online_reward.VerpoRewardManager` put in each session's reward-extra info, and
the row of each turn gets that turn's VeRPO advantage (:func:`turn_row_advantages`), logged as
``reward/dense/mean`` too.
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
from cobalt.reward.verpo import PassMatrix
from cobalt.train.online_reward import (
    ONLINE_KEYS,
    PASS_MATRIX,
    VERPO_ESTIMATOR,
    VERPO_KEYS,
    decode_matrix,
    session_of,
    turn_of,
    uid_of,
    verpo_constants,
    verpo_turn_advantages,
)
from cobalt.train.reward_manager import EXTRA_KEYS

log = logging.getLogger("cobalt.train.trainer")

TRAINER_MODE = "cobalt_sync"
# It overrides PPOTrainerSync._compute_metrics and _compute_advantage and reads and writes
# TransferQueue's batch fields.
WRITTEN_FOR = {"verl": "0.9.1", "TransferQueue": "0.1.11"}
warn_if_stale("the cobalt_sync trainer", WRITTEN_FOR)


def reward_extra_metrics(infos: list[dict]) -> dict[str, float]:
    """Means over the items that carry each key; the step's evaluator failures and requests."""
    metrics = {}
    for key in EXTRA_KEYS + ONLINE_KEYS + VERPO_KEYS:  # the online keys only where present
        values = [float(info[key]) for info in infos if isinstance(info, dict) and info.get(key) is not None]
        if values:
            metrics[f"reward/{key}/mean"] = float(np.mean(values))
    for key in ("evaluator_failure", "evaluator_requests"):  # one info per episode: the step's total
        values = [info.get(key, 0) for info in infos if isinstance(info, dict)]
        metrics[f"reward/{key}/count"] = float(np.sum(values)) if values else 0.0
    return metrics


def groups_with_spread(keys: list[str], scores: list[float]) -> float:
    """The fraction of GRPO groups (responses to one prompt: keys ``{uid}_{session}_{index}``)
    whose scores are not all equal; only those get a non-zero advantage."""
    groups: dict[str, set] = {}
    for key, score in zip(keys, scores):
        groups.setdefault(uid_of(key), set()).add(round(float(score), 9))
    return sum(len(values) > 1 for values in groups.values()) / len(groups) if groups else 0.0


# veRL's per-row agent-loop timings (AgentLoopMetrics; a loop sets only those it measures)
LOOP_TIMES = {"generate": "generate_sequences", "public_tests": "tool_calls", "reward": "compute_score"}


def last_of_each_session(keys: list[str]) -> list[bool]:
    """Which rows are their session's last (the one the reward was computed on)."""
    last: dict[str, tuple[int, int]] = {}
    for row, key in enumerate(keys):
        session, turn = session_of(key), turn_of(key)
        if session not in last or last[session][0] < turn:
            last[session] = (turn, row)
    rows = {row for _, row in last.values()}
    return [row in rows for row in range(len(keys))]


def rollout_metrics(
    loop_metrics: list[dict], generated_tokens: list[int], sessions: list[str] | None = None
) -> dict[str, float]:
    """What a step's rollout cost, from its rows (a response; for the online methods a turn, the
    rows of one episode sharing ``sessions``): ``rollout/episodes``, ``rollout/generated_tokens``
    (the policy's tokens, feedback excluded), and per episode the mean seconds spent generating,
    waiting for the public tests and for the reward, and waiting for the evaluator in all
    (``rollout/<what>_s/mean``). The episodes of a step overlap in time."""
    count = len(set(sessions)) if sessions is not None else len(loop_metrics)
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


def pass_matrices(keys: list[str], extra_fields: list, tags: list[dict]) -> dict[str, PassMatrix]:
    """Each session's [turn][test] verdicts from its rows' reward-extra info (every row of a session
    carries its session's); padding rows have none."""
    sessions = {}
    for key, extra, tag in zip(keys, extra_fields, tags):
        if tag.get("is_padding", False):
            continue
        info = (extra or {}).get("reward_extra_info") or {}
        if PASS_MATRIX not in info:
            raise KeyError(
                f"row {key} carries no {PASS_MATRIX}: algorithm.adv_estimator={VERPO_ESTIMATOR} needs "
                "reward.reward_manager.name=VerpoRewardManager"
            )
        sessions.setdefault(session_of(key), decode_matrix(info[PASS_MATRIX]))
    return sessions


def row_turn_advantages(episodes: dict, key: str, tag: dict) -> list[float]:
    """The per-turn advantages of a row's session (none for a padding row)."""
    return [] if tag.get("is_padding", False) else episodes[session_of(key)].turn_advantages


@register_adv_est(VERPO_ESTIMATOR)
def verpo_outside_cobalt_sync(*args, **kwargs):
    """Registered so that veRL knows the name; only :class:`CobaltTrainerSync` can apply it."""
    raise ConfigError(
        f"algorithm.adv_estimator={VERPO_ESTIMATOR} needs trainer.v1.trainer_mode={TRAINER_MODE}: "
        "VeRPO's per-turn advantages come from VerpoRewardManager's reward-extra info"
    )


def turn_row_advantages(mask, turn_advantages: list[float], turn: int) -> torch.Tensor:
    """The token advantages of the row of turn ``turn``: that turn's advantage on its generated
    tokens. A row with no advantage for its turn (a padding row: none at all) gets 0, with a warning
    unless it is padding."""
    mask = torch.as_tensor(mask).bool()
    if turn >= len(turn_advantages):
        if turn_advantages:
            log.warning(
                "VeRPO: a row of turn %d, but %d turn advantages: row left at 0", turn, len(turn_advantages)
            )
        return torch.zeros(mask.shape, dtype=torch.float32)
    return torch.where(mask, float(turn_advantages[turn]), 0.0)


@register_trainer(TRAINER_MODE)
class CobaltTrainerSync(PPOTrainerSync):
    def _compute_advantage(self, batch, metrics):
        """veRL's, except for ``algorithm.adv_estimator=verpo``: each turn's row gets the turn's
        VeRPO advantage over its problem's sessions (:func:`turn_row_advantages`), and the returns
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
        # every problem's group is all of its sessions in the batch: none is waited for, none missing
        episodes = verpo_turn_advantages(
            pass_matrices(batch.keys, fields, batch.tags), verpo_constants(self.config)
        )
        if episodes:
            metrics["reward/dense/mean"] = float(np.mean([episode.dense for episode in episodes.values()]))
        advantages = [
            turn_row_advantages(mask, row_turn_advantages(episodes, key, tag), turn_of(key))
            for key, mask, tag in zip(batch.keys, rows, batch.tags)
        ]
        nested = torch.nested.as_nested_tensor(advantages, layout=torch.jagged)
        output = TensorDict({"advantages": nested, "returns": nested.clone()}, batch_size=len(batch))
        return tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=output)

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch):
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        rows = self._real_rows(batch, ["extra_fields", "metrics", "response_mask"])
        keys = [key for key, tag in zip(batch.keys, batch.tags) if not tag.get("is_padding", False)]
        # an online episode is several rows sharing its reward: its last row speaks for it
        last = last_of_each_session(keys)
        infos = [(fields or {}).get("reward_extra_info", {}) for fields in rows["extra_fields"]]
        infos = [info for info, keep in zip(infos, last) if keep]
        metrics.update(reward_extra_metrics(infos))
        metrics.update(rollout_metrics(rows["metrics"], rows["response_mask"], [session_of(k) for k in keys]))
        scores = [info.get("acc", 0.0) if isinstance(info, dict) else 0.0 for info in infos]
        final_keys = [key for key, keep in zip(keys, last) if keep]
        metrics["reward/groups_with_spread/fraction"] = groups_with_spread(final_keys, scores)
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
