"""How sure a mean over problems is: percentile-bootstrap intervals, a paired sign-flip test, and
the verdict these numbers support.

Problems are the unit of resampling (a model's samples of one problem are not independent). The
paired test flips the sign of each problem's difference (trained − base): exactly, over every
sign pattern, up to :data:`EXACT_UP_TO` problems, else over seeded random patterns.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

LEVEL = 0.95
ALPHA = 0.05
EXACT_UP_TO = 16  # problems: 2**16 sign patterns


@dataclasses.dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float


@dataclasses.dataclass(frozen=True)
class PairedDifference:
    """Mean of trained − base over problems, its interval, the two-sided p-value of no difference."""

    mean: float
    low: float
    high: float
    p_value: float
    problems: int


def bootstrap_interval(values, level: float = LEVEL, resamples: int = 10_000, seed: int = 0) -> Interval:
    """The mean of ``values`` and its percentile-bootstrap interval (resampling the values)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("a bootstrap interval needs at least one value")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(values.mean()), float(low), float(high))


def sign_patterns(n: int, resamples: int, seed: int) -> np.ndarray:
    """Every ±1 pattern of length ``n`` when few, else ``resamples`` seeded random ones."""
    if n <= EXACT_UP_TO:
        return np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    return np.random.default_rng(seed).choice((1.0, -1.0), size=(resamples, n))


def sign_flip_p_value(differences, resamples: int = 20_000, seed: int = 0) -> float:
    """Two-sided p-value that the paired ``differences`` are centred on 0: the share of sign
    patterns whose mean is at least as far from 0 as the observed one."""
    d = np.asarray(differences, dtype=float)
    observed = abs(d.mean()) if d.size else 0.0
    if observed == 0.0:
        return 1.0
    flipped = np.abs((sign_patterns(d.size, resamples, seed) * d).mean(axis=1))
    extreme = int(np.sum(flipped >= observed * (1 - 1e-9)))
    if d.size <= EXACT_UP_TO:
        return extreme / len(flipped)
    return (extreme + 1) / (len(flipped) + 1)  # the observed pattern counts once


def smallest_p_value(problems: int) -> float:
    """The smallest p-value the exact test can give with this many problems (2 / 2**n)."""
    return 2.0 / 2**problems if problems <= EXACT_UP_TO else 0.0


def paired_difference(base, trained, seed: int = 0) -> PairedDifference:
    """trained − base, problem by problem (same order in both)."""
    differences = np.asarray(trained, dtype=float) - np.asarray(base, dtype=float)
    interval = bootstrap_interval(differences, seed=seed)
    p_value = sign_flip_p_value(differences, seed=seed)
    return PairedDifference(interval.mean, interval.low, interval.high, p_value, int(differences.size))


def outcome(difference: PairedDifference, alpha: float = ALPHA) -> str:
    if difference.p_value >= alpha:
        return "no significant change"
    return "improved" if difference.mean > 0 else "worse"


def format_p(p_value: float) -> str:
    return f"{p_value:.2f}" if p_value >= 0.01 else f"{p_value:.1e}"


def describe(difference: PairedDifference, unit: str = "points") -> str:
    d = difference
    return f"{d.mean:+.1f} {unit}, 95% CI {d.low:+.1f} to {d.high:+.1f}, p = {format_p(d.p_value)}"


def verdict(by_turn: dict[int, PairedDifference], alpha: float = ALPHA, problem_set: str = "held-out") -> str:
    """One line: the outcome at each given turn with its numbers, computed from them."""
    problems = next(iter(by_turn.values())).problems
    parts = [f"turn {turn}: {outcome(d, alpha)} ({describe(d)})" for turn, d in by_turn.items()]
    line = f"Trained vs base, {problem_set} Pass@1 over {problems} problems — " + "; ".join(parts) + "."
    if smallest_p_value(problems) >= alpha:
        line += f" With {problems} problems no difference can reach p < {alpha:g}."
    return line
