"""VeRPO-MT's reward: difficulty-weighted partial success plus the global outcome.

VeRPO is arXiv 2601.03525 (Wang et al., "VeRPO: Verifiable Dense Reward Policy Optimization for Code
Generation"). Its method section could not be read from the machine this was written on. What was
read, through the project's page search on 2026-11-28 (openings of pages only):

* the abstract (v1/v2, arxiv.org/abs/2601.03525 and arxiv.org/html/2601.03525v2): "by dynamically
  estimating the difficulty weight of each unit test based on the execution statistics during
  training, a dense reward is derived from the sum of weights of the passed unit tests", and
  "VeRPO further integrates the dense signal with global execution outcomes";
* the v3 abstract (hugmap.com, awesomepapers.io): a weighted-sum formulation has a "cardinality
  bias" that favours "gains from easy-test successes over progress on frontier tests"; VeRPO's
  "dynamic, density-calibrated local reward" corrects it;
* themoonlight.io's review: the reward is "the sum of difficulty-weighted passed unit tests at each
  turn"; the weight of a test comes from "its online execution statistics within a sampled group of
  trajectories G_x = {tau_1, ..., tau_N} for a given prompt x"; "the empirical pass rate rho_j for
  each unit test u_j is calculated as the propo[rtion ...]" (the opening stops there).

No equation of the paper was read; the equations below are this module's, built on those sentences.
With a group of N episodes of one problem and m hidden tests, ``pass[e][t][j]`` = episode e's turn-t
program passes test j:

1. rho_j = (programs of the group passing test j) / (programs of the group)   -- every turn of every
   episode counts once (choice: the paper's "proportion" is cut off before its denominator);
2. w_j = (1 - rho_j) / sum_k (1 - rho_k): harder tests weigh more, and the weights sum to 1, so the
   dense reward lies in [0, 1] whatever m is (choice: our reading of "density-calibrated"; the
   paper's exact formula is unknown). When every program passes every test, sum_k (1 - rho_k) = 0 and
   the weights are uniform, 1/m (choice);
3. a turn's dense reward d_t = sum_j w_j * pass[t][j]  (the sentence above);
4. an episode's dense reward D = the mean of d_t over the turns it took (choice: the paper's
   per-turn rewards are folded into the one reward veRL's GRPO gives an episode; the mean neither
   rewards long episodes, as a sum would, nor ignores the repair path, as the last turn would);
5. the outcome O = 1 when the final turn passes every hidden test, else 0; the reward is
   R = O + alpha * D with alpha = ``dense_weight`` (choice, default 0.5: the outcome always
   dominates, since D <= 1 and a passing episode gets at least 1).

A group where every program fails every test has rho_j = 0, w_j = 1/m, d_t = 0 and R = 0 for every
episode: GRPO sees no spread and learns nothing from it, as with the outcome reward alone.
"""

from __future__ import annotations

import dataclasses

PassMatrix = list[list[bool]]  # [turn][test]


@dataclasses.dataclass(frozen=True)
class VerpoReward:
    score: float  # R = outcome + dense_weight * dense
    outcome: float  # O: the final turn passes every hidden test
    dense: float  # D: the mean over turns of the weighted passed tests


def per_test_pass_rates(group: list[PassMatrix]) -> list[float]:
    """rho_j over every program (every turn of every episode) of the group."""
    programs = [turn for episode in group for turn in episode]
    if not programs:
        raise ValueError("a VeRPO group needs at least one program")
    width = len(programs[0])
    if width == 0 or any(len(turn) != width for turn in programs):
        raise ValueError("every program of a VeRPO group must have a verdict for each of the same tests")
    return [sum(turn[j] for turn in programs) / len(programs) for j in range(width)]


def difficulty_weights(pass_rates: list[float]) -> list[float]:
    """w_j = (1 - rho_j) / sum_k (1 - rho_k); uniform when every test always passes."""
    difficulty = [1.0 - rate for rate in pass_rates]
    total = sum(difficulty)
    if total == 0:
        return [1.0 / len(pass_rates)] * len(pass_rates)
    return [d / total for d in difficulty]


def turn_reward(passing: list[bool], weights: list[float]) -> float:
    """d_t: the weights of the tests this turn's program passes."""
    return sum(w for w, p in zip(weights, passing, strict=True) if p)


def episode_reward(episode: PassMatrix, weights: list[float], dense_weight: float = 0.5) -> VerpoReward:
    if not episode:
        raise ValueError("an episode needs at least one turn")
    dense = sum(turn_reward(turn, weights) for turn in episode) / len(episode)
    outcome = float(all(episode[-1]))
    return VerpoReward(score=outcome + dense_weight * dense, outcome=outcome, dense=dense)


def group_rewards(group: list[PassMatrix], dense_weight: float = 0.5) -> list[VerpoReward]:
    """The reward of every episode of one problem's group."""
    weights = difficulty_weights(per_test_pass_rates(group))
    return [episode_reward(episode, weights, dense_weight) for episode in group]
