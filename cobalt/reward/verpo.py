"""VeRPO-MT's per-turn advantages: density-calibrated partial success fused with the outcome.

VeRPO is arXiv 2601.03525 (Wang et al.; v3 "Beyond Binary: Turning Partial Success into Dense
Verifiable Rewards for Reinforcement Learning in Code Generation"). The equations below are the v3
paper's as reported SECONDHAND: an LLM-written summary of the paper's text found in a public
repository, corroborated by two third-party notes. The PDF itself was not read here.

A group G_x = {tau_1..tau_N} is the N episodes of one problem x; ``group[i][t][j]`` = p^(j)_{t,i}
is whether episode i's turn-t program passes hidden test j.

* Eq. 3: rho_j = (1/M_x) sum_i sum_t p^(j)_{t,i}, with M_x = sum_i |tau_i| (every turn counts once).
* Eq. 7: N(rho_j) = sum_j' exp(-(rho_j - rho_j')^2 / (2 sigma^2)), a Gaussian KDE of the tests'
  pass rates. sigma = ``sigma_scale`` * std(rho) (population std); when std(rho) = 0 the kernel's
  limit is taken: N(rho_j) = the number of tests with rho_j' = rho_j.
* Eq. 8: w_j = exp(-alpha rho_j).  Eq. 9: w'_j = w_j / (N(rho_j) + delta), not normalised.
* Eq. 10: R_turn(tau_i, t) = sum_j w'_j p^(j)_{t,i}.
* Eq. 11: R_traj(tau_i) = 1 when the final turn passes every hidden test, else 0;
  R~(tau_i) = R_traj(tau_i) * gamma^|tau_i|.
* Eq. 12: A_turn(tau_i, t) = R_turn(tau_i, t) - the mean of R_turn over every turn of the group.
* Eq. 13: A_traj(tau_i) = R~(tau_i) - the mean of R~ over the group's episodes (no std division:
  the paper's F_norm = 1).
* Eq. 14: A(tau_i, t) = A_traj(tau_i) + beta A_turn(tau_i, t): each turn's tokens get their turn's
  advantage in a clipped PPO update (the ``cobalt_sync`` trainer, :mod:`cobalt.train.trainer`).

The constants (:class:`VerpoConstants`) the summary leaves open or that come from elsewhere:
alpha = 2.0 (reported); sigma = std(rho)/2 (one third-party implementation's, not confirmed);
beta = 1.0 (unknown; a third-party default); gamma = 1.0 (unknown, range (0, 1]: no decay);
delta = 1e-6 (unknown, > 0; since N(rho_j) >= 1 it only has to keep the division defined).
"""

from __future__ import annotations

import dataclasses
import math

PassMatrix = list[list[bool]]  # [turn][test]


@dataclasses.dataclass(frozen=True)
class VerpoConstants:
    """VeRPO's constants; set with ``+reward.reward_kwargs.verpo.<name>=<value>``."""

    alpha: float = 2.0  # Eq. 8, the difficulty weight's slope: reported
    beta: float = 1.0  # Eq. 14, the dense advantage's weight: unknown (a third-party default)
    gamma: float = 1.0  # Eq. 11, the outcome's decay per turn, in (0, 1]: unknown (1 = none)
    delta: float = 1e-6  # Eq. 9, > 0: unknown (N >= 1, so it only keeps the division defined)
    sigma_scale: float = 0.5  # Eq. 7, sigma = sigma_scale * std(rho): one implementation's, unconfirmed

    def __post_init__(self):
        if not (self.alpha >= 0 and self.beta >= 0 and 0 < self.gamma <= 1 and self.delta > 0):
            raise ValueError(f"VeRPO needs alpha >= 0, beta >= 0, 0 < gamma <= 1 and delta > 0 (got {self})")
        if self.sigma_scale <= 0:
            raise ValueError(f"VeRPO needs sigma_scale > 0 (got {self.sigma_scale})")


@dataclasses.dataclass(frozen=True)
class VerpoEpisode:
    outcome: float  # R_traj: the final turn passes every hidden test
    turn_rewards: list[float]  # R_turn of each turn (Eq. 10)
    turn_advantages: list[float]  # A of each turn (Eq. 14)

    @property
    def dense(self) -> float:
        """The mean R_turn over the episode's turns (for the logs)."""
        return sum(self.turn_rewards) / len(self.turn_rewards)


def per_test_pass_rates(group: list[PassMatrix]) -> list[float]:
    """rho_j over every program (every turn of every episode) of the group (Eq. 3)."""
    programs = [turn for episode in group for turn in episode]
    if not programs or any(not episode for episode in group):
        raise ValueError("a VeRPO group needs episodes of at least one turn")
    width = len(programs[0])
    if width == 0 or any(len(turn) != width for turn in programs):
        raise ValueError("every program of a VeRPO group must have a verdict for each of the same tests")
    return [sum(turn[j] for turn in programs) / len(programs) for j in range(width)]


def kde_density(rates: list[float], sigma_scale: float) -> list[float]:
    """N(rho_j), the Gaussian KDE of the pass rates at each test's own (Eq. 7)."""
    mean = sum(rates) / len(rates)
    sigma = sigma_scale * math.sqrt(sum((r - mean) ** 2 for r in rates) / len(rates))
    if sigma == 0:  # every rate is equal: the kernel's limit counts the equal rates
        return [float(sum(other == rate for other in rates)) for rate in rates]
    return [sum(math.exp(-((rate - other) ** 2) / (2 * sigma**2)) for other in rates) for rate in rates]


def calibrated_weights(rates: list[float], constants: VerpoConstants) -> list[float]:
    """w'_j = exp(-alpha rho_j) / (N(rho_j) + delta) (Eqs. 8 and 9)."""
    density = kde_density(rates, constants.sigma_scale)
    return [math.exp(-constants.alpha * r) / (n + constants.delta) for r, n in zip(rates, density)]


def turn_reward(passing: list[bool], weights: list[float]) -> float:
    """R_turn: the calibrated weights of the tests this turn's program passes (Eq. 10)."""
    return sum(w for w, p in zip(weights, passing, strict=True) if p)


def group_advantages(group: list[PassMatrix], constants: VerpoConstants) -> list[VerpoEpisode]:
    """Every episode's outcome, turn rewards and per-turn advantages A(tau_i, t) (Eqs. 3-14)."""
    weights = calibrated_weights(per_test_pass_rates(group), constants)
    rewards = [[turn_reward(turn, weights) for turn in episode] for episode in group]
    turns = [r for episode in rewards for r in episode]
    turn_baseline = sum(turns) / len(turns)  # Eq. 12's mean over every turn of the group
    outcomes = [float(all(episode[-1])) for episode in group]
    decayed = [o * constants.gamma ** len(episode) for o, episode in zip(outcomes, group)]  # Eq. 11
    traj_baseline = sum(decayed) / len(decayed)  # Eq. 13
    return [
        VerpoEpisode(
            outcome=outcome,
            turn_rewards=episode_rewards,
            turn_advantages=[
                (own - traj_baseline) + constants.beta * (r - turn_baseline) for r in episode_rewards
            ],
        )
        for outcome, own, episode_rewards in zip(outcomes, decayed, rewards)
    ]
