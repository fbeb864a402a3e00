"""Deliberately broken reward functions, to show that the learning check fails when learning is
broken (tests/test_learning_check.py). Passed to veRL as an override, e.g.

    bash scripts/learning_check.sh reward.custom_reward_function.path=$PWD/tests/broken_rewards.py \\
        reward.custom_reward_function.name=shifted_score_details

Both compute COBALT's true reward (``cobalt.reward.score_details``: the evaluator, pass rate,
improvement, format) and then break its link to the response:

* ``shifted_score_details``: each response gets the true score of the response scored just before
  it in the same reward worker (scores are handed on in completion order, which is how the
  concurrent items of a batch finish). The batch's scores are a shift of the true ones -- the same
  values, the same mean, hence the same logged per-step reward -- but aligned with the wrong
  responses, so the advantages carry no information about what the policy wrote.
* ``negated_score_details``: the score with its sign flipped, as a flipped advantage would be;
  the policy is pushed away from what the evaluator rewards. The logged ``critic/score`` is the
  negated one; the details (``reward/pass_rate/mean``) stay true.
"""

from __future__ import annotations

from cobalt.reward import score_details

_previous: list[float] = []  # the last true score seen in this process


async def shifted_score_details(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    details = await score_details(data_source, solution_str, ground_truth, extra_info)
    true_score = details["score"]
    given = _previous[0] if _previous else true_score
    _previous[:] = [true_score]
    return {**details, "score": given}


async def negated_score_details(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    details = await score_details(data_source, solution_str, ground_truth, extra_info)
    return {**details, "score": -details["score"]}
