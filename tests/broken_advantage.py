"""A deliberately broken advantage, to show that the learning check fails when the policy update
is pushed the wrong way while the rewards stay true (docs/training.md, "The learning check"):

    PYTHONPATH=$PWD/tests VERL_USE_EXTERNAL_MODULES=broken_advantage \\
        bash scripts/learning_check.sh algorithm.adv_estimator=grpo_sign_flipped

veRL imports this module in each of its processes (``VERL_USE_EXTERNAL_MODULES``; the launcher
adds it to the profile's own plugin) and the trainer then finds ``grpo_sign_flipped`` in veRL's
estimator registry: GRPO's advantages with their sign flipped, as a sign error in a loss would.
The logged rewards (``critic/score``) are the true ones.
"""

from __future__ import annotations

from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, register_adv_est


@register_adv_est("grpo_sign_flipped")
def sign_flipped_grpo_advantage(token_level_rewards, response_mask, index, *args, **kwargs):
    advantages, returns = compute_grpo_outcome_advantage(
        token_level_rewards, response_mask, index, *args, **kwargs
    )
    return -advantages, -returns
