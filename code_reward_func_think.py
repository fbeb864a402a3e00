"""veRL's custom reward function: ``reward.custom_reward_function.path=code_reward_func_think.py``
with ``name=compute_score`` (the score) or ``name=score_details`` (the score and its parts, as the
training profiles load it from ``pkg://cobalt.reward``).

The logic lives in :mod:`cobalt.reward`.
"""

from cobalt.reward import compute_score, score_details

__all__ = ["compute_score", "score_details"]
