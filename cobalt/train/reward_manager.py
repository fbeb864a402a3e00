"""COBALT's reward manager for veRL 0.9.1's reward loop (reference section 5).

Loaded by veRL with::

    reward.reward_manager.source=importlib
    reward.reward_manager.name=CobaltRewardManager
    reward.reward_manager.module.path=pkg://cobalt.train.reward_manager

veRL calls :meth:`CobaltRewardManager.run_single` once per response, concurrently, in each of its
``reward.num_workers`` reward-loop workers; the score lands on the last valid response token
(:meth:`assemble_rm_scores`, veRL's placement). Per item this manager:

* decodes the response without special tokens;
* marks validation items (``extra_info.is_val``): veRL 0.9.1 does not tell a reward manager whether
  a sample is for validation, so an item counts as validation when its ``extra_info`` already says
  ``is_val`` or its ``extra_info.split`` is one of ``val_splits`` (the data pipeline writes
  ``split: test`` into ``test.parquet``);
* waits for a slot: at most ``max_in_flight`` scores run at once over all workers -- this is the
  back-pressure that replaces the reference's random 0.1-2.1 s sleeps;
* scores with the configured reward function (async or not; a float, a tuple whose first element
  is the score, or a dict with ``score`` and details such as ``pass_rate``), bounded by
  ``timeout_s``; an exception or a timeout scores ``failure_score`` (-1.0), is counted and logged,
  and never fails the training step;
* returns ``acc`` (= the score, as the reference's ``batch["acc"]``) and the same fixed set of
  reward-extra keys for every item (:data:`EXTRA_KEYS`), which veRL logs for validation
  (``val-aux/<data_source>/<key>/mean@n``) and :mod:`cobalt.train.trainer` logs for training steps.

Settings (defaults = the reference) come from ``reward.reward_kwargs.cobalt`` in the veRL config,
e.g. ``+reward.reward_kwargs.cobalt.timeout_s=120``; see ``configs/train/*.yaml``.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import logging
import math
import time
from collections import Counter
from typing import Any

from verl import DataProto
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from cobalt.common.config import from_dict
from cobalt.serve.client import counted_requests

log = logging.getLogger("cobalt.train.reward_manager")
log.setLevel(logging.INFO)

# Reward-extra keys returned for every item (veRL stacks them by the first item's keys).
EXTRA_KEYS = (
    "acc",  # the score (reference: batch["acc"])
    "pass_rate",  # fraction of tests passed (0 when unknown or failed)
    "correctness",  # the reward's correctness term (0 when unknown)
    "improvement",  # the reward's improvement term (else the pass-rate gain over
    # extra_info.prev_best_pass_rate; 0 when unknown)
    "format_reward",  # the format term (0 when unknown)
    "format_penalized",  # 1 when the format term was negative
    "evaluator_failure",  # 1 when scoring raised or timed out (score = failure_score), or the
    # reward reported an evaluator error (details["evaluator_error"])
    "evaluator_timeout",  # 1 when scoring timed out
    "evaluator_requests",  # requests the item sent to the evaluator (counted: cobalt.serve.client);
    # an online episode's include its turns' public tests
)


@dataclasses.dataclass(frozen=True)
class RewardManagerSettings:
    max_in_flight: int = 64  # scores running at once, over all reward workers
    timeout_s: float = 300.0  # per item, once it holds a slot
    failure_score: float = -1.0  # score of an item whose scoring failed or timed out
    val_splits: tuple[str, ...] = ("test", "val", "validation")  # extra_info.split values = validation
    print_examples: bool = True  # print one decoded example per data source per batch

    def __post_init__(self):
        object.__setattr__(self, "val_splits", tuple(self.val_splits))

    @classmethod
    def from_verl_config(cls, config) -> RewardManagerSettings:
        """``reward.reward_kwargs.cobalt`` of veRL's config; ConfigError names an unknown key."""
        reward = config.get("reward", {}) if config is not None else {}
        raw = (reward.get("reward_kwargs") or {}).get("cobalt") or {}
        return from_dict(cls, dict(raw), source="reward.reward_kwargs.cobalt")


def per_worker_limit(max_in_flight: int, num_workers: int) -> int:
    """Slots of one reward worker so that all workers together hold at most ``max_in_flight``."""
    return max(1, max_in_flight // max(1, num_workers))


def items_per_batch(config, num_workers: int) -> int:
    """Responses one worker sees per training batch (to print one example per batch)."""
    try:
        batch = int(config.data.train_batch_size) * int(config.actor_rollout_ref.rollout.n)
    except (AttributeError, KeyError, TypeError, ValueError):
        return 1
    return max(1, math.ceil(batch / max(1, num_workers)))


def split_result(result: Any) -> tuple[float, dict]:
    """(score, details) from a reward function's result: a number, a tuple (score first) or a dict."""
    if isinstance(result, dict):
        return float(result["score"]), result
    if isinstance(result, (tuple, list)):
        return float(result[0]), {}
    return float(result), {}


def extra_info_for(score: float, details: dict, prev_best: float, failed: bool, timed_out: bool) -> dict:
    pass_rate = float(details.get("pass_rate", 0.0) or 0.0)
    improvement = details.get("improvement")
    if improvement is None:
        improvement = pass_rate - prev_best if "pass_rate" in details else 0.0
    format_reward = float(details.get("format_reward", 0.0) or 0.0)
    return {
        "acc": score,
        "pass_rate": pass_rate,
        "correctness": float(details.get("correctness", 0.0) or 0.0),
        "improvement": float(improvement),
        "format_reward": format_reward,
        "format_penalized": float(format_reward < 0),
        "evaluator_failure": float(failed or bool(details.get("evaluator_error"))),
        "evaluator_timeout": float(timed_out),
    }


class CobaltRewardManager(RewardManagerBase):
    """Asynchronous, bounded, failure-tolerant scoring of code responses (see the module doc)."""

    def __init__(
        self,
        config,
        tokenizer,
        compute_score,
        reward_router_address=None,
        reward_model_tokenizer=None,
        settings: RewardManagerSettings | None = None,
    ):
        super().__init__(config, tokenizer, compute_score)
        if compute_score is None:
            from cobalt.reward import compute_score  # the project's reward when none is configured
        self.compute_score = compute_score
        self.settings = settings or RewardManagerSettings.from_verl_config(config)
        num_workers = int(config.reward.get("num_workers", 1)) if config is not None else 1
        self.slots_per_worker = per_worker_limit(self.settings.max_in_flight, num_workers)
        self.print_every = items_per_batch(config, num_workers)
        self._slots: tuple[Any, asyncio.Semaphore] | None = None  # (event loop, its semaphore)
        self.counts: Counter = Counter()  # scored, failures, timeouts, per-source examples

    # ---- veRL's entry point ---------------------------------------------------------------------

    async def run_single(self, data: DataProto) -> dict:
        item = data[-1:][0]  # multi-sequence outputs: score the last sequence (as veRL's managers)
        text = await asyncio.get_running_loop().run_in_executor(None, self._decode, item)
        data_source = item.non_tensor_batch["data_source"]
        ground_truth = item.non_tensor_batch["reward_model"]["ground_truth"]
        extra_info = self._extra_info(item)
        with counted_requests() as sent:
            score, details, failed, timed_out = await self._score(data_source, text, ground_truth, extra_info)
        self._maybe_print(data_source, extra_info["is_val"], text, score)
        prev_best = float(extra_info.get("prev_best_pass_rate", 0.0) or 0.0)
        extras = extra_info_for(score, details, prev_best, failed, timed_out)
        return {"reward_score": score, "reward_extra_info": {**extras, "evaluator_requests": float(sent[0])}}

    # ---- outside veRL's loop (tests, bench): a whole batch at once ------------------------------

    async def score_batch(self, data: DataProto) -> tuple[Any, dict[str, list]]:
        """Score every item of ``data`` concurrently; returns (reward tensor shaped like the
        responses with each score at the last valid token, reward-extra lists by key)."""
        outputs = await asyncio.gather(*(self.run_single(data[i : i + 1]) for i in range(len(data))))
        scores = [out["reward_score"] for out in outputs]
        extras = {key: [out["reward_extra_info"][key] for out in outputs] for key in EXTRA_KEYS}
        return self.assemble_rm_scores(data, scores), extras

    # ---- pieces ---------------------------------------------------------------------------------

    def _decode(self, item) -> str:
        response_ids = item.batch["responses"]
        valid_length = int(item.batch["attention_mask"][-response_ids.shape[-1] :].sum())
        return self.tokenizer.decode(response_ids[:valid_length], skip_special_tokens=True)

    def _extra_info(self, item) -> dict:
        extra_info = dict(item.non_tensor_batch.get("extra_info") or {})  # never mutate the batch
        is_val = bool(extra_info.get("is_val", False)) or extra_info.get("split") in self.settings.val_splits
        extra_info["is_val"] = is_val
        return extra_info

    def _slots_for_this_loop(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.slots_per_worker))
        return self._slots[1]

    async def _call_reward(self, data_source, text, ground_truth, extra_info):
        kwargs = dict(
            data_source=data_source, solution_str=text, ground_truth=ground_truth, extra_info=extra_info
        )
        if inspect.iscoroutinefunction(self.compute_score) or _is_async_partial(self.compute_score):
            return await self.compute_score(**kwargs)
        context = contextvars.copy_context()  # a thread does not inherit it: the requests count there too
        result = await asyncio.get_running_loop().run_in_executor(
            None, lambda: context.run(self.compute_score, **kwargs)
        )
        return await result if inspect.isawaitable(result) else result

    async def _score(self, data_source, text, ground_truth, extra_info) -> tuple[float, dict, bool, bool]:
        """(score, details, failed, timed_out); never raises."""
        async with self._slots_for_this_loop():
            started = time.monotonic()
            try:
                result = await asyncio.wait_for(
                    self._call_reward(data_source, text, ground_truth, extra_info), self.settings.timeout_s
                )
                score, details = split_result(result)
                self.counts["scored"] += 1
                return score, details, False, False
            except TimeoutError:
                self.counts["timeouts"] += 1
                log.warning(
                    "reward timed out after %.0f s (data source %s); scored %.1f [%d timeouts so far]",
                    time.monotonic() - started,
                    data_source,
                    self.settings.failure_score,
                    self.counts["timeouts"],
                )
                return self.settings.failure_score, {}, True, True
            except Exception as error:  # a failing evaluator must not fail the training step
                self.counts["failures"] += 1
                log.warning(
                    "reward failed (data source %s): %s: %s; scored %.1f [%d failures so far]",
                    data_source,
                    type(error).__name__,
                    error,
                    self.settings.failure_score,
                    self.counts["failures"],
                )
                return self.settings.failure_score, {}, True, False

    def _maybe_print(self, data_source: str, is_val: bool, text: str, score: float) -> None:
        if not self.settings.print_examples:
            return
        key = ("val" if is_val else "train", data_source)
        seen = self.counts[key]
        self.counts[key] += 1
        if seen % self.print_every == 0:
            print(
                f"[cobalt reward] {key[0]} example, data source {data_source}, score {score:.3f}\n"
                f"[response]\n{text}\n[end of response]",
                flush=True,
            )


def _is_async_partial(fn) -> bool:
    """veRL wraps an async reward function in functools.partial(_call_with_kwargs_async, ...)."""
    inner = getattr(fn, "func", None)
    return inner is not None and inspect.iscoroutinefunction(inner)
