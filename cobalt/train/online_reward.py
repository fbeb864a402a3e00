"""Reward managers of the online baselines, GRPO-MT and VeRPO-MT (issue 47).

Both score an episode of :mod:`cobalt.train.code_repair_loop` on all of the problem's tests, as
COBALT's rows do (the row's ``reward_model.ground_truth``, :func:`cobalt.data.verl_rows.online_row`) through the project's
evaluator, on COBALT's asynchronous path: veRL's agent-loop worker sends each finished session to a
reward-loop worker (``AgentLoopWorker._compute_score``), which calls ``run_single``; the slots,
timeout and failure handling are :class:`cobalt.train.reward_manager.CobaltRewardManager`'s.

* :class:`OnlineRewardManager` (GRPO-MT): the project's reward function (``score_details``) on the
  FINAL turn's text, with no previous best (an online episode has no offline prefix).
* :class:`VerpoRewardManager` (VeRPO-MT): every turn's program on the reward's tests. The reward it
  returns is the outcome R_traj; the session's [turn][test] verdicts travel in its reward-extra
  info (:data:`PASS_MATRIX`), and the ``cobalt_sync`` trainer's advantage stage, which holds the
  whole batch, weighs each problem's tests over all of its sessions and gives each turn its
  advantage (:func:`verpo_turn_advantages`). No session waits for another: veRL hands a reward
  manager one session at a time, in any reward worker.

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
from cobalt.reward.verpo import PassMatrix, VerpoConstants, VerpoEpisode, group_advantages
from cobalt.serve.client import counted_requests
from cobalt.train.code_repair_loop import STATS_FIELD, TURNS_FIELD
from cobalt.train.reward_manager import CobaltRewardManager, extra_info_for

log = logging.getLogger("cobalt.train.online_reward")

ONLINE_KEYS = ("turns", "context_cut", "public_pass")  # from the loop's episode statistics
VERPO_KEYS = ("outcome",)  # R_traj of the episode (the mean R_turn: reward/dense/mean, per step)
VERPO_ESTIMATOR = "verpo"  # algorithm.adv_estimator of the VeRPO-MT profiles
PASS_MATRIX = "verpo_pass_matrix"  # reward-extra info: the [turn][test] verdicts, as encode_matrix writes


def episode_of(item) -> tuple[list[str], dict]:
    """(the text of each assistant turn, the episode statistics) of a scored session."""
    fields = item.non_tensor_batch.get("tool_extra_fields") or {}
    if TURNS_FIELD not in fields:
        raise KeyError(f"the session carries no {TURNS_FIELD}: was it rolled out by the code-repair loop?")
    return list(fields[TURNS_FIELD]), dict(fields.get(STATS_FIELD) or {})


def episode_extras(stats: dict) -> dict:
    return {key: float(stats.get(key, 0.0)) for key in ONLINE_KEYS}


def episode_requests(stats: dict) -> float:
    """The evaluator requests the episode's turns sent (their public tests), as the loop counted them."""
    return float(stats.get("evaluator_requests", 0.0))


class OnlineRewardManager(CobaltRewardManager):
    """GRPO-MT: the COBALT reward of the final turn on the reward's tests."""

    def _decode(self, item) -> str:
        texts, _ = episode_of(item)
        return texts[-1] if texts else ""

    def _extra_info(self, item) -> dict:
        return {**super()._extra_info(item), "prev_best_pass_rate": 0.0}

    async def run_single(self, data) -> dict:
        out = await super().run_single(data)
        _, stats = episode_of(data[-1:][0])
        out["reward_extra_info"].update(episode_extras(stats))
        out["reward_extra_info"]["evaluator_requests"] += episode_requests(stats)
        return out


def encode_matrix(matrix: PassMatrix) -> str:
    """[turn][test] verdicts as text ("10|11": two turns of two tests): TransferQueue keeps a string
    whole, where it would stack lists of unequal lengths."""
    return "|".join("".join("1" if passed else "0" for passed in turn) for turn in matrix)


def decode_matrix(text: str) -> PassMatrix:
    return [[c == "1" for c in turn] for turn in str(text).split("|")]


def session_of(key: str) -> str:
    """A row's session, ``{uid}_{session}`` of its key ``{uid}_{session}_{index}`` (veRL's: the
    online loop returns a row per turn, the turn being the index)."""
    return str(key).rsplit("_", 1)[0]


def turn_of(key: str) -> int:
    return int(str(key).rsplit("_", 1)[1])


def uid_of(key: str) -> str:
    """The problem (veRL's uid, which has no underscore) of a row's or a session's key."""
    return str(key).split("_", 1)[0]


def verpo_constants(config) -> VerpoConstants:
    raw = (config.reward.get("reward_kwargs") or {}).get("verpo") or {}
    return from_dict(VerpoConstants, dict(raw), source="reward.reward_kwargs.verpo")


def verpo_turn_advantages(
    sessions: dict[str, PassMatrix], constants: VerpoConstants
) -> dict[str, VerpoEpisode]:
    """Each session's VeRPO episode (outcome, turn rewards, per-turn advantages), every problem's
    group made of ALL of its sessions in ``sessions`` (keys ``{uid}_{session}``)."""
    groups: dict[str, list[str]] = {}
    for session in sorted(sessions):
        groups.setdefault(uid_of(session), []).append(session)
    episodes = {}
    for members in groups.values():
        for session, episode in zip(members, group_advantages([sessions[m] for m in members], constants)):
            episodes[session] = episode
    return episodes


class VerpoRewardManager(OnlineRewardManager):
    """VeRPO-MT: the outcome R_traj (the final turn passes every test) as the reward, and
    every turn's verdicts on the reward's tests for the trainer's advantage stage (:data:`PASS_MATRIX`;
    the module doc). Validation reports the outcome."""

    def __init__(self, config, tokenizer, compute_score, *args, **kwargs):
        super().__init__(config, tokenizer, compute_score, *args, **kwargs)
        estimator = (config.get("algorithm") or {}).get("adv_estimator")
        if estimator != VERPO_ESTIMATOR:
            raise ConfigError(
                f"VeRPO-MT needs algorithm.adv_estimator={VERPO_ESTIMATOR} (got {estimator}): its "
                "advantages are per turn, computed by the cobalt_sync trainer from this reward's verdicts"
            )
        verpo_constants(config)  # a bad constant stops the run here, before any rollout

    async def run_single(self, data) -> dict:
        item = data[-1:][0]
        texts, stats = episode_of(item)
        ground_truth = item.non_tensor_batch["reward_model"]["ground_truth"]
        with counted_requests() as sent:
            matrix, failed = await self.pass_matrix(texts, ground_truth)
        outcome = float(all(matrix[-1]))  # Eq. 11's R_traj
        details = {"pass_rate": sum(matrix[-1]) / len(matrix[-1]), "correctness": outcome, "improvement": 0.0}
        extras = extra_info_for(outcome, details, 0.0, failed, False)
        extras.update(episode_extras(stats), outcome=outcome)
        extras["evaluator_requests"] = sent[0] + episode_requests(stats)
        extras[PASS_MATRIX] = encode_matrix(matrix)
        return {"reward_score": outcome, "reward_extra_info": extras}

    async def pass_matrix(self, texts: list[str], ground_truth) -> tuple[list[list[bool]], bool]:
        """[turn][test] verdicts of every turn's program on the reward's tests; a program that could not
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
                log.warning("the tests of a turn scored as all failing (pass rate %.2f)", pass_rate(result))
            return (passing if ok else [False] * width), error is not None

        runs = await asyncio.gather(*(verdicts(text) for text in texts or [""]))
        return [passing for passing, _ in runs], any(failed for _, failed in runs)
