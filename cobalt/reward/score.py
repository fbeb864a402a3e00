"""The COBALT reward: correctness + improvement over the previous best pass rate + format
(reference section 4). Usable outside training: ``await compute_score(...)`` is a plain coroutine."""

from __future__ import annotations

import asyncio
import logging

from cobalt.data.testcases import failure_result, pass_rate
from cobalt.extract import extract_code
from cobalt.reward.config import RewardConfig, reward_config
from cobalt.reward.format import format_reward
from cobalt.serve.client import Evaluator, evaluator_kind, get_evaluator

log = logging.getLogger("cobalt.reward")


def correctness_reward(pass_rate: float, cfg: RewardConfig) -> float:
    if pass_rate == 1:
        return cfg.reward_all_pass
    if pass_rate >= 0.5:
        return cfg.reward_half_pass
    return cfg.reward_some_pass if pass_rate > 0 else cfg.reward_no_pass


def with_improvement(reward: float, pass_rate: float, prev_best: float, cfg: RewardConfig) -> float:
    """Reward progress over the best pass rate so far; replace the reward when there is none."""
    if pass_rate >= 1 or prev_best <= 0:
        return reward
    if pass_rate > prev_best:
        return reward + (pass_rate - prev_best) / (1 - prev_best) * cfg.improvement_scale
    return cfg.reward_no_pass + (pass_rate - prev_best) / prev_best * cfg.improvement_scale


def default_evaluator(cfg: RewardConfig) -> Evaluator:
    kind = evaluator_kind(cfg.evaluator)
    if kind == "serve":
        return get_evaluator("serve", deployment_name=cfg.evaluator_deployment, app_name=cfg.evaluator_app)
    return get_evaluator(kind)


async def run_tests(
    code: str, ground_truth, evaluator: Evaluator, cfg: RewardConfig
) -> tuple[dict, str | None]:
    """The execution result on ``ground_truth`` and None, or a one-test failure and the reason when
    the call timed out or the evaluator failed."""
    try:
        return await asyncio.wait_for(evaluator.evaluate(code, ground_truth), cfg.call_timeout_s), None
    except TimeoutError:
        error = f"evaluator call exceeded {cfg.call_timeout_s:g} s"
    except Exception as e:
        log.warning("evaluator call failed: %r", e)
        error = f"{type(e).__name__}: {e}"
    return failure_result(error), error


async def score_details(
    data_source,
    solution_str: str,
    ground_truth,
    extra_info: dict | None = None,
    *,
    evaluator: Evaluator | None = None,
    config: RewardConfig | None = None,
) -> dict:
    """The reward and its parts: ``score``, ``pass_rate``, ``correctness``, ``improvement``,
    ``format_reward``, ``has_code``, ``evaluator_error`` (None or the reason)."""
    cfg = config or reward_config()
    extra = dict(extra_info or {})
    is_val = bool(extra.get("is_val", False))
    details = {
        "pass_rate": 0.0,
        "correctness": 0.0,
        "improvement": 0.0,
        "format_reward": 0.0,
        "has_code": False,
        "evaluator_error": None,
    }
    code = extract_code(solution_str)
    if code is None:
        return {**details, "score": 0.0 if is_val else -1.0}
    result, error = await run_tests(code, ground_truth, evaluator or default_evaluator(cfg), cfg)
    rate = pass_rate(result)
    correctness = correctness_reward(rate, cfg)
    prev_best = float(extra.get("prev_best_pass_rate") or 0.0)
    reward = with_improvement(correctness, rate, prev_best, cfg)
    details.update(
        pass_rate=rate,
        correctness=correctness,
        improvement=reward - correctness,
        has_code=True,
        evaluator_error=error,
    )
    if is_val:
        return {**details, "score": 1.0 if rate == 1 else 0.0}
    fmt = format_reward(solution_str, reward, cfg)
    return {**details, "format_reward": fmt, "score": max(-1.0, min(1.0, reward + fmt))}


async def compute_score(
    data_source, solution_str: str, ground_truth, extra_info: dict | None = None, **kwargs
) -> float:
    """veRL's reward-function signature: the scalar COBALT reward of one response."""
    return (await score_details(data_source, solution_str, ground_truth, extra_info))["score"]
