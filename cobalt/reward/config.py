"""Reward settings (``configs/reward.yaml``)."""

from __future__ import annotations

import dataclasses
import functools

from cobalt.common.config import check_ranges, config_path, from_dict, load_config


@dataclasses.dataclass(frozen=True)
class RewardConfig:
    evaluator: str = "serve"
    evaluator_app: str = "evaluator"
    evaluator_deployment: str = "Evaluator"
    call_timeout_s: float = 270.0  # above the evaluator's wall backstop: its verdict decides
    tokenizer: str = "o200k_base"
    fallback_tokenizer: str | None = None
    reward_all_pass: float = 1.0
    reward_half_pass: float = 0.2
    reward_some_pass: float = 0.0
    reward_no_pass: float = -0.1
    improvement_scale: float = 0.1
    max_think_tokens: int = 4096
    max_response_tokens: int = 2048
    max_explanation_tokens: int = 512
    format_violation: float = -0.9
    length_penalty_correct: float = -0.01
    length_penalty_wrong: float = -0.1
    think_bonus_scale: float = 0.075
    think_bonus_tokens: int = 1024
    keyword_bonus: float = 0.005
    keyword_bonus_cap: float = 0.025
    keywords: tuple[str, ...] = (
        "wait",
        "mistake",
        "however",
        "but",
        "retry",
        "error",
        "verify",
        "wrong",
        "evaluate",
    )

    def __post_init__(self):
        object.__setattr__(self, "keywords", tuple(self.keywords))
        check_ranges(self, "reward", positive=(
            "call_timeout_s", "max_think_tokens", "max_response_tokens", "max_explanation_tokens",
            "think_bonus_tokens"))  # fmt: skip


@functools.cache
def reward_config(name: str = "reward") -> RewardConfig:
    return from_dict(RewardConfig, load_config(name), source=str(config_path(name)))
