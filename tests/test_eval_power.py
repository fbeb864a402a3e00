"""The power analysis behind a pre-registered comparison (cobalt.eval.significance): its rejection
rule is the reports' own paired test on pass / fail outcomes, and its power behaves as a power must."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from cobalt.eval.significance import paired_power, problems_needed, sign_flip_p_value


def mcnemar_exact_p(plus: int, minus: int) -> float:
    d = plus + minus
    tail = sum(math.comb(d, k) for k in range(max(plus, minus), d + 1)) / 2**d
    return min(1.0, 2 * tail)


@pytest.mark.parametrize("plus,minus,ties", [(7, 1, 4), (5, 0, 3), (6, 3, 5), (2, 2, 0)])
def test_the_sign_flip_test_on_pass_fail_pairs_is_mcnemars_exact_test(plus, minus, ties):
    differences = [1.0] * plus + [-1.0] * minus + [0.0] * ties
    assert sign_flip_p_value(differences) == pytest.approx(mcnemar_exact_p(plus, minus))


@pytest.mark.parametrize("plus,minus,ties", [(20, 8, 272), (31, 30, 300), (12, 0, 0)])
def test_on_hundreds_of_pass_fail_pairs_the_p_value_is_still_exact(plus, minus, ties):
    """A pre-registered comparison of 300+ greedy answers gets McNemar's exact p, not a Monte Carlo
    estimate of it (20,000 random sign patterns are off by about 0.003)."""
    differences = [1.0] * plus + [-1.0] * minus + [0.0] * ties
    assert sign_flip_p_value(differences) == pytest.approx(mcnemar_exact_p(plus, minus), rel=1e-9)
    assert sign_flip_p_value([-x for x in differences]) == pytest.approx(
        mcnemar_exact_p(plus, minus), rel=1e-9
    )


def test_all_discordant_in_favour_rejects_exactly_from_six_problems():
    # 2 / 2**5 = 0.0625 > 0.05 >= 2 / 2**6
    assert paired_power(5, 1.0, 0.0) == pytest.approx(0.0)
    assert paired_power(6, 1.0, 0.0) == pytest.approx(1.0)


def test_without_an_effect_it_rejects_at_most_alpha_of_the_time():
    for n in (20, 100, 300):
        assert paired_power(n, 0.1, 0.1) <= 0.05


def test_power_matches_a_simulation_of_the_decision():
    rng = np.random.default_rng(0)
    n, better, worse = 60, 0.2, 0.05
    outcomes = rng.choice([1, -1, 0], p=[better, worse, 1 - better - worse], size=(4000, n))
    plus, minus = (outcomes == 1).sum(axis=1), (outcomes == -1).sum(axis=1)
    simulated = np.mean([mcnemar_exact_p(int(a), int(b)) <= 0.05 for a, b in zip(plus, minus)])
    assert paired_power(n, better, worse) == pytest.approx(simulated, abs=0.025)


def test_problems_needed_has_the_power_and_is_near_the_normal_approximation():
    better, worse = 0.15, 0.05
    n = problems_needed(better, worse)
    assert paired_power(n, better, worse) >= 0.8 > paired_power(n // 2, better, worse)
    delta, share = better - worse, better + worse
    connor = (1.959964 * math.sqrt(share) + 0.841621 * math.sqrt(share - delta**2)) ** 2 / delta**2
    assert abs(n - connor) / connor < 0.15


def test_cli_prints_the_size_and_refuses_no_improvement():
    run = [sys.executable, "-m", "cobalt.eval.significance"]
    done = subprocess.run(
        run + ["--better", "0.3", "--worse", "0.1", "--problems", "10"], capture_output=True, text=True
    )
    assert (
        done.returncode == 0
        and "problems for power 0.8" in done.stdout
        and "10 problems: power" in done.stdout
    )
    bad = subprocess.run(run + ["--better", "0.1", "--worse", "0.2"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no improvement to detect" in bad.stderr
