"""The COBALT reward (reference section 4).

score = await compute_score("code_taco_verified", response, test_cases_json,
                            {"prev_best_pass_rate": 0.5})
"""

from cobalt.reward.format import format_reward
from cobalt.reward.repetition import has_repetitive_pattern
from cobalt.reward.score import compute_score, score_details

__all__ = ["compute_score", "format_reward", "has_repetitive_pattern", "score_details"]
