"""VeRPO-MT's per-turn advantages (cobalt/reward/verpo.py, Eqs. 3-14) on hand-computed groups, and
its group meeting point."""

from __future__ import annotations

import math

import pytest

from cobalt.reward.verpo import (
    VerpoConstants,
    calibrated_weights,
    group_advantages,
    kde_density,
    per_test_pass_rates,
)

T, F = True, False


def advantages(group, constants=VerpoConstants()):
    """Every turn's advantage, episode after episode."""
    return [a for episode in group_advantages(group, constants) for a in episode.turn_advantages]


def test_two_sessions_two_tests_mixed_turns_by_hand():
    # session a: turn 0 passes test 2, turn 1 passes both (solved in 2 turns); session b fails both
    group = [[[F, T], [T, T]], [[F, F]]]
    constants = VerpoConstants(alpha=2.0, beta=0.5, gamma=0.9, delta=0.25, sigma_scale=0.5)
    # Eq. 3: 3 programs; test 1 passed once, test 2 twice
    assert per_test_pass_rates(group) == pytest.approx([1 / 3, 2 / 3])
    # Eq. 7: std(rho) = 1/6, sigma = 1/12, 2 sigma^2 = 1/72; (1/3)^2 * 72 = 8
    assert kde_density([1 / 3, 2 / 3], 0.5) == pytest.approx([1 + math.exp(-8)] * 2)
    # Eqs. 8-9
    w1 = math.exp(-2 / 3) / (1 + math.exp(-8) + 0.25)
    w2 = math.exp(-4 / 3) / (1 + math.exp(-8) + 0.25)
    assert calibrated_weights([1 / 3, 2 / 3], constants) == pytest.approx([w1, w2])
    assert (w1, w2) == pytest.approx((0.410623, 0.210822), abs=1e-6)
    a, b = group_advantages(group, constants)
    # Eq. 10
    assert a.turn_rewards == pytest.approx([w2, w1 + w2]) and b.turn_rewards == [0.0]
    # Eq. 12: the mean over the group's 3 turns
    turn_mean = (w1 + 2 * w2) / 3
    # Eqs. 11 and 13: a solved in 2 turns, R~ = 0.9^2 = 0.81; b 0; mean 0.405
    assert (a.outcome, b.outcome) == (1.0, 0.0)
    # Eq. 14
    assert a.turn_advantages == pytest.approx(
        [0.405 + 0.5 * (w2 - turn_mean), 0.405 + 0.5 * (w1 + w2 - turn_mean)]
    )
    assert b.turn_advantages == pytest.approx([-0.405 + 0.5 * (0 - turn_mean)])
    assert a.dense == pytest.approx((w1 + 2 * w2) / 2)


def test_a_group_where_every_sample_fails_every_test_gets_zero_advantages():
    group = [[[F, F, F], [F, F, F], [F, F, F]], [[F, F, F]], [[F, F, F], [F, F, F]]]
    assert calibrated_weights(per_test_pass_rates(group), VerpoConstants()) == pytest.approx(
        [1 / (3 + 1e-6)] * 3
    )
    assert advantages(group) == [0.0] * 6
    assert [e.outcome for e in group_advantages(group, VerpoConstants())] == [0.0] * 3


def test_a_group_where_every_sample_passes_everything_in_as_many_turns_gets_zero_advantages():
    group = [[[T, T], [T, T]], [[T, T], [T, T]]]  # 2 turns each (the public tests may lag)
    assert advantages(group, VerpoConstants(gamma=0.8)) == pytest.approx([0.0] * 4, abs=1e-12)
    group = [[[T, T]], [[T, T]], [[T, T]]]
    assert advantages(group, VerpoConstants(gamma=0.8)) == pytest.approx([0.0] * 3, abs=1e-12)


def test_the_outcome_decays_with_the_turns_taken():
    # both solve it; the 1-turn one gets gamma - mean, the 2-turn one gamma^2 - mean, turn terms off
    group = [[[T]], [[F], [T]]]
    assert advantages(group, VerpoConstants(beta=0.0, gamma=0.5)) == pytest.approx([0.125, -0.125, -0.125])


def test_tests_with_equal_pass_rates_have_the_number_of_tests_as_their_density():
    group = [[[T, F, T, F]], [[F, T, F, T]]]  # every test passed by 1 of 2 programs
    assert per_test_pass_rates(group) == [0.5] * 4
    assert kde_density([0.5] * 4, 0.5) == [4.0] * 4
    weight = math.exp(-2 * 0.5) / (4 + 1e-6)
    assert calibrated_weights([0.5] * 4, VerpoConstants()) == pytest.approx([weight] * 4)


def test_the_density_counts_the_tests_near_each_pass_rate():
    # rho = 0, 0, 1: std = sqrt(2)/3, sigma = sqrt(2)/6, 2 sigma^2 = 1/9
    assert kde_density([0.0, 0.0, 1.0], 0.5) == pytest.approx(
        [2 + math.exp(-9), 2 + math.exp(-9), 1 + 2 * math.exp(-9)]
    )


def test_programs_judged_on_different_tests_are_refused():
    with pytest.raises(ValueError, match="same tests"):
        per_test_pass_rates([[[T, F]], [[T]]])
    with pytest.raises(ValueError, match="at least one turn"):
        per_test_pass_rates([[[T]], []])


@pytest.mark.parametrize(
    "bad", [{"gamma": 0.0}, {"gamma": 1.5}, {"delta": 0.0}, {"beta": -1.0}, {"sigma_scale": 0}]
)
def test_constants_out_of_range_are_refused(bad):
    with pytest.raises(ValueError):
        VerpoConstants(**bad)
