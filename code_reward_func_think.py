"""veRL's custom reward function: ``reward.custom_reward_function.path=code_reward_func_think.py``.

The logic lives in :mod:`cobalt.reward`.
"""

from cobalt.reward import compute_score

__all__ = ["compute_score"]
