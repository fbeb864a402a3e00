"""Reward managers of the online baselines, GRPO-MT and VeRPO-MT (issue 47).

Both score an episode of :mod:`cobalt.train.code_repair_loop` on the problem's HIDDEN tests (the row's
``reward_model.ground_truth``, :func:`cobalt.data.verl_rows.online_row`) through the project's
evaluator, on COBALT's asynchronous path: veRL's agent-loop worker sends each finished session to a
reward-loop worker (``AgentLoopWorker._compute_score``), which calls ``run_single``; the slots,
timeout and failure handling are :class:`cobalt.train.reward_manager.CobaltRewardManager`'s.

* :class:`OnlineRewardManager` (GRPO-MT): the project's reward function (``score_details``) on the
  FINAL turn's text, with no previous best (an online episode has no offline prefix).
* :class:`VerpoRewardManager` (VeRPO-MT): every turn's program on the hidden tests, then each turn's
  advantage over the group (:mod:`cobalt.reward.verpo`). veRL hands a reward manager one
  session, never the batch, so the n sessions of a problem (one ``uid``) meet on a
  :class:`GroupBoard` in the reward worker: this needs ``reward.num_workers=1``, since veRL sends
  each session to a random reward worker.

Both add the episode's statistics to the reward-extra info (:data:`ONLINE_KEYS`), which the
``cobalt_sync`` trainer logs per step (``reward/context_cut/mean`` counts the cut episodes).
"""

from __future__ import annotations

import asyncio
import logging

from cobalt.common.config import from_dict
from cobalt.common.errors import ConfigError
from cobalt.common.extract import extract_code
from cobalt.common.testcases import parse_test_cases, pass_rate
from cobalt.reward.config import reward_config
from cobalt.reward.score import default_evaluator, run_tests
from cobalt.reward.verpo import VerpoConstants, group_advantages
from cobalt.train.code_repair_loop import STATS_FIELD, TURNS_FIELD
from cobalt.train.reward_manager import CobaltRewardManager, extra_info_for

log = logging.getLogger("cobalt.train.online_reward")

ONLINE_KEYS = ("turns", "context_cut", "public_pass")  # from the loop's episode statistics
VERPO_KEYS = ("outcome", "dense")  # R_traj and the mean R_turn of the episode
VERPO_ESTIMATOR = "verpo"  # algorithm.adv_estimator of the VeRPO-MT profiles
TURN_ADVANTAGES = "verpo_turn_advantages"  # reward-extra info: A(tau_i, t) of each turn, in order


def episode_of(item) -> tuple[list[str], dict]:
    """(the text of each assistant turn, the episode statistics) of a scored session."""
    fields = item.non_tensor_batch.get("tool_extra_fields") or {}
    if TURNS_FIELD not in fields:
        raise KeyError(f"the session carries no {TURNS_FIELD}: was it rolled out by the code-repair loop?")
    return list(fields[TURNS_FIELD]), dict(fields.get(STATS_FIELD) or {})


def episode_extras(stats: dict) -> dict:
    return {key: float(stats.get(key, 0.0)) for key in ONLINE_KEYS}


class OnlineRewardManager(CobaltRewardManager):
    """GRPO-MT: the COBALT reward of the final turn on the hidden tests."""

    def _decode(self, item) -> str:
        texts, _ = episode_of(item)
        return texts[-1] if texts else ""

    def _extra_info(self, item) -> dict:
        return {**super()._extra_info(item), "prev_best_pass_rate": 0.0}

    async def run_single(self, data) -> dict:
        out = await super().run_single(data)
        _, stats = episode_of(data[-1:][0])
        out["reward_extra_info"].update(episode_extras(stats))
        return out


class GroupBoard:
    """Where the sessions of one problem wait for each other (in one process, on one event loop)."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.groups: dict[str, dict] = {}

    async def join(self, key: str, member, size: int, value) -> list:
        """Post ``value`` and return every member's value once ``size`` have posted (or, after
        ``timeout_s``, those that have: a lost sibling must not stall the step)."""
        group = self.groups.setdefault(key, {"values": {}, "done": asyncio.Event(), "read": 0})
        group["values"][member] = value
        if len(group["values"]) >= size:
            group["done"].set()
        try:
            await asyncio.wait_for(group["done"].wait(), self.timeout_s)
        except TimeoutError:
            log.warning(
                "group %s: %d of %d sessions after %.0f s", key, len(group["values"]), size, self.timeout_s
            )
            group["done"].set()
        values = list(group["values"].values())
        group["read"] += 1
        if group["read"] >= len(values):
            self.groups.pop(key, None)
        return values


class VerpoRewardManager(OnlineRewardManager):
    """VeRPO-MT: every session's per-turn advantages over its group (:mod:`cobalt.reward.verpo`).

    The reward it returns is the outcome R_traj (the final turn passes the hidden tests), for the
    logs; training reads the per-turn advantages from the reward-extra info
    (:data:`TURN_ADVANTAGES`), which only the ``cobalt_sync`` trainer's ``verpo`` estimator uses.
    Validation scores each session in its own group of ``val_kwargs.n`` and reports the outcome
    and the mean dense reward, with no advantages."""

    def __init__(self, config, tokenizer, compute_score, *args, **kwargs):
        super().__init__(config, tokenizer, compute_score, *args, **kwargs)
        num_workers = int(config.reward.get("num_workers", 1))
        if num_workers != 1:
            raise ConfigError(
                f"VeRPO-MT needs reward.num_workers=1 (got {num_workers}): the n episodes of a problem "
                "must meet in one reward worker to weigh its tests"
            )
        estimator = (config.get("algorithm") or {}).get("adv_estimator")
        if estimator != VERPO_ESTIMATOR:
            raise ConfigError(
                f"VeRPO-MT needs algorithm.adv_estimator={VERPO_ESTIMATOR} (got {estimator}): its "
                "advantages are per turn, computed here and applied by the cobalt_sync trainer"
            )
        raw = (config.reward.get("reward_kwargs") or {}).get("verpo") or {}
        self.constants = from_dict(VerpoConstants, dict(raw), source="reward.reward_kwargs.verpo")
        rollout = config.actor_rollout_ref.rollout
        self.group_size = {False: int(rollout.n), True: int(rollout.val_kwargs.n)}
        self.board = GroupBoard(self.settings.timeout_s)

    async def run_single(self, data) -> dict:
        item = data[-1:][0]
        texts, stats = episode_of(item)
        extra_info = self._extra_info(item)
        ground_truth = item.non_tensor_batch["reward_model"]["ground_truth"]
        matrix, failed = await self.hidden_pass_matrix(texts, ground_truth)
        key = str(item.non_tensor_batch.get("uid", id(item)))
        member = item.non_tensor_batch.get("session_id", 0)
        size = self.group_size[extra_info["is_val"]]
        group = await self.board.join(key, member, size, matrix)
        mine = group_advantages(group, self.constants)[[m is matrix for m in group].index(True)]
        details = {
            "pass_rate": sum(matrix[-1]) / len(matrix[-1]),
            "correctness": mine.outcome,
            "improvement": 0.0,
        }
        extras = extra_info_for(mine.outcome, details, 0.0, failed, False)
        extras.update(episode_extras(stats), outcome=mine.outcome, dense=mine.dense)
        if not extra_info["is_val"]:
            extras[TURN_ADVANTAGES] = mine.turn_advantages
        return {"reward_score": mine.outcome, "reward_extra_info": extras}

    async def hidden_pass_matrix(self, texts: list[str], ground_truth) -> tuple[list[list[bool]], bool]:
        """[turn][test] verdicts of every turn's program on the hidden tests; a program that could not
        be run (no code, evaluator failure) fails every test. Also whether the evaluator failed."""
        width = len(parse_test_cases(ground_truth, field="ground_truth")["inputs"])
        cfg = reward_config()
        evaluator = default_evaluator(cfg)

        async def verdicts(text: str) -> tuple[list[bool], bool]:
            code = extract_code(text)
            if code is None:
                return [False] * width, False
            async with self._slots_for_this_loop():
                result, error = await run_tests(code, ground_truth, evaluator, cfg)
            passing = [bool(p) for p in result["passing"]]
            ok = error is None and len(passing) == width
            if not ok:
                log.warning(
                    "hidden tests of a turn scored as all failing (pass rate %.2f)", pass_rate(result)
                )
            return (passing if ok else [False] * width), error is not None

        runs = await asyncio.gather(*(verdicts(text) for text in texts or [""]))
        return [passing for passing, _ in runs], any(failed for _, failed in runs)
