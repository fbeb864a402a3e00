"""The pooled test across training seeds (docs/preregistration.md): p-values checked against
sign patterns enumerated by hand."""

from __future__ import annotations

import numpy as np
import pytest

from cobalt.eval.significance import pooled_paired_test, sign_flip_p_value


def arms(first_rows, second_rows):
    """Per-seed {id: score} maps from rows of scores (one row per seed, one column per instance)."""
    to_maps = lambda rows: [{f"i{j}": v for j, v in enumerate(row)} for row in rows]  # noqa: E731
    return to_maps(first_rows), to_maps(second_rows)


def test_four_instances_three_seeds_hand_enumerated():
    # differences (first − second) per seed:   i0  i1  i2  i3
    #   seed 0: 1 1 1 1; seed 1: 1 1 1 0; seed 2: 1 1 0 0
    # per-instance means over seeds: 1, 1, 2/3, 1/3 (sum 3). Of the 16 sign patterns of
    # ±1 ±1 ±2/3 ±1/3 only all-plus (+3) and all-minus (−3) reach |sum| >= 3: p = 2/16.
    first, second = arms([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]], [[0] * 4] * 3)
    result = pooled_paired_test(first, second)
    assert result.p_value == pytest.approx(2 / 16)
    assert result.mean == pytest.approx(3 / 4) and result.problems == 4 and result.seeds == 3
    assert result.per_seed == pytest.approx((1.0, 0.75, 0.5))


def test_mixed_signs_hand_enumerated():
    # per-instance means (in thirds): 3, 1, 1, −1 → |sum| = 4 thirds. With +3 the other three
    # ±1 must sum to >= 1: 3 + 1 patterns (sums 1 and 3); with −3, symmetric: 4. p = 8/16.
    first = [
        {"a": 1, "b": 1, "c": 0, "d": 0},
        {"a": 1, "b": 0, "c": 1, "d": 0},
        {"a": 1, "b": 0, "c": 0, "d": 0},
    ]
    second = [
        {"a": 0, "b": 0, "c": 0, "d": 1},
        {"a": 0, "b": 0, "c": 0, "d": 0},
        {"a": 0, "b": 0, "c": 0, "d": 0},
    ]
    result = pooled_paired_test(first, second)
    assert result.p_value == pytest.approx(8 / 16)
    assert result.mean == pytest.approx((1 + 1 / 3 + 1 / 3 - 1 / 3) / 4)


def test_three_instances_hand_enumerated():
    # per-instance means 1, 2/3, −1/3: sum 4/3; patterns' |sums|: 2, 4/3, 2/3, 0 (each twice);
    # |sum| >= 4/3: 4 of 8, p = 0.5
    first, second = arms([[1, 1, 0], [1, 0, 0], [1, 1, 0]], [[0, 0, 0], [0, 0, 0], [0, 0, 1]])
    assert pooled_paired_test(first, second).p_value == pytest.approx(0.5)


def test_repeating_one_seed_three_times_is_not_three_times_the_evidence():
    """Seeds are averaged within an instance, not counted as more instances: three copies of one
    seed give that seed's p-value (here McNemar's, 6 of 6 discordant in favour: 2/64)."""
    row = [1, 1, 1, 1, 1, 1, 0, 0]
    first, second = arms([row] * 3, [[0] * 8] * 3)
    once = pooled_paired_test(first[:1], second[:1]).p_value
    assert once == pytest.approx(2 / 2**6)
    assert pooled_paired_test(first, second).p_value == pytest.approx(once)


def test_instances_are_paired_by_id_and_limited_to_those_every_seed_has():
    first = [{"x": 1, "y": 0, "only_here": 1}, {"y": 1, "x": 1}]
    second = [{"y": 0, "x": 0}, {"x": 0, "y": 0, "only_there": 0}]
    result = pooled_paired_test(first, second)
    assert result.problems == 2 and result.mean == pytest.approx((1 + 0.5) / 2)
    assert result.p_value == pytest.approx(sign_flip_p_value([1.0, 0.5]))  # 4 patterns: 2 as far, 0.5
    with pytest.raises(ValueError, match="same number"):
        pooled_paired_test(first, second[:1])


def test_no_effect_rejects_about_alpha_of_the_time():
    rng = np.random.default_rng(0)
    rejections = 0
    for trial in range(200):
        a = rng.integers(0, 2, size=(3, 40))
        b = rng.integers(0, 2, size=(3, 40))
        first, second = arms(a.tolist(), b.tolist())
        rejections += pooled_paired_test(first, second, resamples=2000, seed=trial).p_value < 0.05
    assert rejections / 200 <= 0.09
