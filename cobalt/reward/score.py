"""The COBALT reward: correctness + improvement over the previous best pass rate + format
(reference section 4). Usable outside training: ``await compute_score(...)`` is a plain coroutine."""

from __future__ import annotations

import asyncio
import logging
import numbers

from cobalt.common.errors import DataError
from cobalt.common.extract import extract_code
from cobalt.common.testcases import failure_result, parse_test_cases, pass_rate
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
        log.warning("%s; scored as one failing test", error)
    except Exception as e:
        log.warning("evaluator call failed: %r", e)
        error = f"{type(e).__name__}: {e}"
    return failure_result(error), error


def ground_truth_problem(ground_truth) -> str | None:
    """Why ``ground_truth`` cannot be a test-case set (the evaluator's own check), or None."""
    try:
        parse_test_cases(ground_truth, field="ground_truth")
    except DataError as e:
        return f"broken ground truth: {e}"
    return None


def prev_best_pass_rate(extra_info: dict) -> float:
    """``extra_info.prev_best_pass_rate`` (missing or None: 0), checked to be a rate."""
    value = extra_info.get("prev_best_pass_rate")
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"extra_info.prev_best_pass_rate must be a number, got {type(value).__name__} {value!r:.80}"
        )
    if not 0 <= value <= 1:
        raise ValueError(f"extra_info.prev_best_pass_rate must be between 0 and 1, got {value!r}")
    return float(value)


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
    if not isinstance(solution_str, str):
        raise TypeError(f"solution_str must be a string, got {type(solution_str).__name__}")
    cfg = config or reward_config()
    extra = dict(extra_info or {})
    prev_best = prev_best_pass_rate(extra)
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
    error = ground_truth_problem(ground_truth)
    if error:  # a data bug, not a wrong program: reported as an evaluation failure
        log.warning("%s (data source %s); scored as an evaluation failure", error, data_source)
        result = failure_result(error)
    else:
        result, error = await run_tests(code, ground_truth, evaluator or default_evaluator(cfg), cfg)
    rate = pass_rate(result)
    correctness = correctness_reward(rate, cfg)
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
