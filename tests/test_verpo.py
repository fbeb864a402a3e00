"""VeRPO-MT's reward (cobalt/reward/verpo.py) on hand-computed groups, and its group meeting point."""

from __future__ import annotations

import asyncio

import pytest

from cobalt.reward.verpo import difficulty_weights, group_rewards, per_test_pass_rates

T, F = True, False


def test_weights_favour_the_tests_the_group_rarely_passes():
    # 3 programs (2 turns of episode 1, 1 of episode 2) on 3 tests: pass rates 3/3, 1/3, 0/3
    group = [[[T, F, F], [T, T, F]], [[T, F, F]]]
    assert per_test_pass_rates(group) == pytest.approx([1, 1 / 3, 0])
    # difficulty 0, 2/3, 1 (sum 5/3) -> weights 0, 2/5, 3/5
    assert difficulty_weights(per_test_pass_rates(group)) == pytest.approx([0, 0.4, 0.6])
    first, second = group_rewards(group, dense_weight=0.5)
    # episode 1: turns score 0 and 0.4, mean 0.2; its final turn fails test 3: outcome 0
    assert (first.dense, first.outcome, first.score) == pytest.approx((0.2, 0.0, 0.1))
    assert (second.dense, second.outcome, second.score) == pytest.approx((0.0, 0.0, 0.0))


def test_a_passing_episode_gets_the_outcome_plus_its_dense_term():
    # pass rates 1/3, 2/3 -> difficulty 2/3, 1/3 (sum 1) -> weights 2/3, 1/3
    group = [[[T, T]], [[F, T], [F, F]]]
    solved, failed = group_rewards(group, dense_weight=0.5)
    assert (solved.outcome, solved.dense, solved.score) == pytest.approx((1.0, 1.0, 1.5))
    # turns score 1/3 and 0: dense 1/6, reward 1/12
    assert (failed.outcome, failed.dense, failed.score) == pytest.approx((0.0, 1 / 6, 1 / 12))


def test_a_group_where_every_sample_fails_every_test_scores_zero_for_all():
    group = [[[F, F, F], [F, F, F], [F, F, F]], [[F, F, F]], [[F, F, F], [F, F, F]]]
    assert difficulty_weights(per_test_pass_rates(group)) == pytest.approx([1 / 3] * 3)
    assert [r.score for r in group_rewards(group)] == [0.0, 0.0, 0.0]


def test_a_group_where_every_sample_passes_every_test_has_uniform_weights():
    group = [[[T, T]], [[T, T]]]
    assert difficulty_weights(per_test_pass_rates(group)) == pytest.approx([0.5, 0.5])
    assert [r.score for r in group_rewards(group, dense_weight=0.5)] == pytest.approx([1.5, 1.5])


def test_programs_judged_on_different_tests_are_refused():
    with pytest.raises(ValueError, match="same tests"):
        per_test_pass_rates([[[T, F]], [[T]]])


def test_the_sessions_of_a_problem_meet_before_any_is_scored():
    pytest.importorskip("verl")
    from cobalt.train.online_reward import GroupBoard

    async def main():
        board = GroupBoard(timeout_s=5)
        return await asyncio.gather(*(board.join("uid-1", i, 3, f"m{i}") for i in range(3))), board

    results, board = asyncio.run(main())
    assert all(sorted(r) == ["m0", "m1", "m2"] for r in results)
    assert board.groups == {}  # the group is forgotten once every member has read it


def test_a_lost_session_does_not_stall_its_group():
    pytest.importorskip("verl")
    from cobalt.train.online_reward import GroupBoard

    async def main():
        return await GroupBoard(timeout_s=0.05).join("uid-2", 0, 2, "alone")

    assert asyncio.run(main()) == ["alone"]
