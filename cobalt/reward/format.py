"""The format part of the COBALT reward (reference section 4, exact)."""

from __future__ import annotations

import math
import re

from cobalt.common.extract import THINK_END
from cobalt.reward.config import RewardConfig, reward_config
from cobalt.reward.repetition import has_repetitive_pattern
from cobalt.reward.tokens import token_counter

CODE_OPEN = "```python"
CODE_CLOSE = "\n```"


def split_response(s: str) -> tuple[str, str, str, str] | None:
    """(think, resp, code body, explanation) of a well-formed response, None if malformed:
    exactly one ``</think>``; after it exactly one ```` ```python ```` and, after that, exactly one
    closing ``\\n```` ``; no backtick inside the code body."""
    if s.count(THINK_END) != 1:
        return None
    think, resp = (part.strip() for part in s.split(THINK_END))
    if resp.count(CODE_OPEN) != 1:
        return None
    after_open = resp.split(CODE_OPEN, 1)[1]
    if after_open.count(CODE_CLOSE) != 1:
        return None
    body, explanation = after_open.split(CODE_CLOSE)
    if "`" in body:
        return None
    return think, resp, body, explanation.strip()


def format_reward(solution_str: str, correctness_reward: float, cfg: RewardConfig | None = None) -> float:
    """Penalty (or small bonus) for the response's shape and lengths, given the correctness reward."""
    cfg = cfg or reward_config()
    parts = None if has_repetitive_pattern(solution_str) else split_response(solution_str)
    if parts is None:
        return cfg.format_violation
    think, resp, _, explanation = parts
    count = token_counter(cfg.tokenizer, cfg.fallback_tokenizer)
    think_n, resp_n, expl_n = count(think), count(resp), count(explanation)
    if correctness_reward >= 0:
        within = (
            think_n <= cfg.max_think_tokens
            and resp_n <= cfg.max_response_tokens
            and expl_n <= cfg.max_explanation_tokens
        )
        return 0.0 if within else cfg.length_penalty_correct
    if think_n <= cfg.max_think_tokens:
        reward = math.tanh(think_n / cfg.think_bonus_tokens) * cfg.think_bonus_scale
        reward += keyword_bonus(think, cfg)
    else:
        reward = cfg.length_penalty_wrong
    if resp_n > cfg.max_response_tokens:
        reward += cfg.length_penalty_wrong
    if expl_n > cfg.max_explanation_tokens:
        reward += cfg.length_penalty_wrong
    return reward


def keyword_bonus(think: str, cfg: RewardConfig) -> float:
    """A small bonus per reflection keyword used between 1 and 4 times (whole words), capped."""
    text = think.lower()
    used = sum(1 for word in cfg.keywords if 1 <= len(re.findall(rf"\b{re.escape(word)}\b", text)) <= 4)
    return min(used * cfg.keyword_bonus, cfg.keyword_bonus_cap)
