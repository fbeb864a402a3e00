"""How sure a mean over problems is: percentile-bootstrap intervals, a paired sign-flip test, the
verdict these numbers support, and how many problems a comparison needs (power).

Problems are the unit of resampling (a model's samples of one problem are not independent). The
paired test flips the sign of each problem's difference (trained − base): exactly, over every
sign pattern, up to :data:`EXACT_UP_TO` problems, else over seeded random patterns. With one
greedy answer per problem and model the differences are −1, 0 or +1, and the test is McNemar's
exact test: only the discordant problems count, each a fair coin under no difference; it is then
computed exactly for any number of problems (from the binomial distribution).

Across training seeds, :func:`pooled_paired_test` (the test docs/preregistration.md fixes)
flips the signs of each instance's difference averaged over the seeds.

    python -m cobalt.eval.significance --better 0.15 --worse 0.05   # problems for 80 % power
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from cobalt.common.cli import ArgumentParser

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


def bootstrap_interval(
    values, level: float = LEVEL, resamples: int = 10_000, seed: int = 0, weights=None
) -> Interval:
    """The mean of ``values`` and its percentile-bootstrap interval (resampling the values); with
    positive ``weights``, the weighted mean (each resample weighs the values it drew)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("a bootstrap interval needs at least one value")
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, values.size, size=(resamples, values.size))
    if weights is None:
        mean, means = values.mean(), values[drawn].mean(axis=1)
    else:
        w = np.asarray(weights, dtype=float)
        mean, means = np.average(values, weights=w), (values * w)[drawn].sum(axis=1) / w[drawn].sum(axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(mean), float(low), float(high))


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
    nonzero = np.abs(d[d != 0])
    if np.allclose(nonzero, nonzero[0]):  # one magnitude, e.g. pass/fail pairs: McNemar's exact test
        return _equal_magnitude_p_value(int(np.sum(d > 0)), nonzero.size)
    flipped = np.abs((sign_patterns(d.size, resamples, seed) * d).mean(axis=1))
    extreme = int(np.sum(flipped >= observed * (1 - 1e-9)))
    if d.size <= EXACT_UP_TO:
        return extreme / len(flipped)
    return (extreme + 1) / (len(flipped) + 1)  # the observed pattern counts once


def _equal_magnitude_p_value(positive: int, nonzero: int) -> float:
    """The exact sign-flip p-value when ``nonzero`` differences share one magnitude and
    ``positive`` of them are positive: the number of positive signs is Binomial(nonzero, 1/2)."""
    k = np.arange(nonzero + 1)
    as_extreme = np.abs(2 * k - nonzero) >= abs(2 * positive - nonzero)
    return float(min(1.0, _binomial_pmf(nonzero, 0.5)[as_extreme].sum()))


def smallest_p_value(problems: int) -> float:
    """The smallest p-value the exact test can give with this many problems (2 / 2**n)."""
    return 2.0 / 2**problems if problems <= EXACT_UP_TO else 0.0


def paired_difference(base, trained, seed: int = 0, weights=None) -> PairedDifference:
    """trained − base, problem by problem (same order in both); with ``weights``, their weighted
    mean, and the sign-flip test on each problem's weighted difference."""
    differences = np.asarray(trained, dtype=float) - np.asarray(base, dtype=float)
    interval = bootstrap_interval(differences, seed=seed, weights=weights)
    weighted = differences if weights is None else differences * np.asarray(weights, dtype=float)
    p_value = sign_flip_p_value(weighted, seed=seed)
    return PairedDifference(interval.mean, interval.low, interval.high, p_value, int(differences.size))


@dataclasses.dataclass(frozen=True)
class PooledDifference:
    """The pooled test across training seeds: the mean over instances of each instance's mean
    (over seeds) difference, its bootstrap interval over instances, the two-sided p-value of the
    sign-flip test on those per-instance means, and each seed's own mean difference."""

    mean: float
    low: float
    high: float
    p_value: float
    problems: int
    seeds: int
    per_seed: tuple[float, ...]


def pooled_paired_test(
    first: list[dict], second: list[dict], resamples: int = 100_000, seed: int = 0
) -> PooledDifference:
    """``first`` − ``second`` (e.g. trained − control) pooled across training seeds, as
    docs/preregistration.md fixes it. ``first[s]`` and ``second[s]`` map an instance id to its
    score (Pass@1, 0/1 or %) under seed ``s``; the instances are those every map holds.

    Each instance's differences are averaged over the seeds, and the signs of these per-instance
    means are flipped (exactly up to :data:`EXACT_UP_TO` instances, else over ``resamples`` seeded
    patterns): the instance is the unit, so three seeds of one instance are not counted as three
    independent observations, and the p-value never falls below what one seed's instances allow."""
    if not first or len(first) != len(second):
        raise ValueError(
            f"need the same number (> 0) of seeds in both arms, got {len(first)} and {len(second)}"
        )
    ids = [i for i in first[0] if all(i in m for m in (*first, *second))]
    if not ids:
        raise ValueError("the seeds' evaluations share no instance")
    d = np.array([[a[i] - b[i] for i in ids] for a, b in zip(first, second)], dtype=float)  # seeds x ids
    per_instance = d.mean(axis=0)
    interval = bootstrap_interval(per_instance, seed=seed)
    p_value = sign_flip_p_value(per_instance, resamples=resamples, seed=seed)
    return PooledDifference(
        interval.mean,
        interval.low,
        interval.high,
        p_value,
        len(ids),
        len(first),
        tuple(float(x) for x in d.mean(axis=1)),
    )


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


# --- power of the paired test on pass / fail outcomes ----------------------------------------------


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    """P(X = k) for k = 0..n, X ~ Binomial(n, p)."""
    k = np.arange(n + 1)
    if p <= 0.0 or p >= 1.0:
        return (k == (n if p >= 1.0 else 0)).astype(float)
    log_choose = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in k])
    return np.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))


def _rejects(discordant: int, alpha: float) -> np.ndarray:
    """Which counts k of "trained better" among ``discordant`` problems McNemar's exact two-sided
    test rejects at ``alpha`` (p = 2 min(P(X <= k), P(X >= k)), X ~ Binomial(discordant, 1/2))."""
    pmf = _binomial_pmf(discordant, 0.5)
    lower, upper = np.cumsum(pmf), np.cumsum(pmf[::-1])[::-1]
    return np.minimum(1.0, 2 * np.minimum(lower, upper)) <= alpha


def paired_power(problems: int, better: float, worse: float, alpha: float = ALPHA) -> float:
    """Power of the paired test on ``problems`` pass/fail pairs when a problem is solved by the
    trained model only with probability ``better`` and by the base model only with ``worse``
    (the effect is ``better - worse``; ``better + worse`` is the discordant share)."""
    discordant_share = better + worse
    if not 0.0 <= better <= 1.0 or not 0.0 <= worse <= 1.0 or discordant_share > 1.0:
        raise ValueError(f"better={better}, worse={worse}: need two probabilities with a sum <= 1")
    if discordant_share == 0.0:
        return 0.0
    share_better = better / discordant_share
    by_discordant = _binomial_pmf(problems, discordant_share)
    return float(
        sum(
            by_discordant[d] * _binomial_pmf(d, share_better)[_rejects(d, alpha)].sum()
            for d in range(1, problems + 1)
        )
    )


def problems_needed(
    better: float, worse: float, alpha: float = ALPHA, power: float = 0.8, most: int = 20_000
) -> int:
    """The fewest problems whose paired test has at least ``power`` (the exact power is not
    monotone in n: the first n from which it stays above, checked over the next 20)."""
    if better <= worse:
        raise ValueError(f"better={better} <= worse={worse}: no improvement to detect")
    n = 1
    while n <= most:
        if paired_power(n, better, worse, alpha) >= power and all(
            paired_power(m, better, worse, alpha) >= power for m in range(n + 1, n + 21)
        ):
            return n
        n = n + 1 if n < 50 else int(n * 1.02) + 1
    raise ValueError(f"more than {most} problems needed for power {power}")


def main(argv=None) -> None:
    parser = ArgumentParser(
        prog="python -m cobalt.eval.significance",
        description="How many problems a paired base-vs-trained comparison needs, one greedy answer "
        "each (McNemar's exact test, as the reports' sign-flip test reduces to), and the power at "
        "given sizes.",
    )
    parser.add_argument("--better", type=float, required=True, help="P(trained solves, base does not)")
    parser.add_argument("--worse", type=float, required=True, help="P(base solves, trained does not)")
    parser.add_argument("--alpha", type=float, default=ALPHA, help="two-sided level (default 0.05)")
    parser.add_argument("--power", type=float, default=0.8, help="power wanted (default 0.8)")
    parser.add_argument(
        "--problems", type=int, nargs="*", default=[], help="also print the power at these sizes"
    )
    args = parser.parse_args(argv)
    try:
        needed = problems_needed(args.better, args.worse, args.alpha, args.power)
    except ValueError as error:
        parser.error(str(error))
    print(
        f"effect {args.better - args.worse:+.3f} (discordant share {args.better + args.worse:.3f}), "
        f"alpha {args.alpha}: {needed} problems for power {args.power}"
    )
    for n in args.problems:
        print(f"  {n} problems: power {paired_power(n, args.better, args.worse, args.alpha):.3f}")


if __name__ == "__main__":
    main()
