"""Section 7: trajectories → bandit prompts, pinned rule by rule, plus properties."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from data_fixtures import trajectory
from hypothesis import given, settings
from hypothesis import strategies as st

from cobalt.data.bandit import BanditOptions, build_bandit_prompts, combined_pass_rates, max_variance_subset


def count_messages(messages):  # a stand-in tokenizer: 1 token per message
    return len(messages)


def build(records, **opts):
    return build_bandit_prompts(records, count_messages, BanditOptions(**opts))


def by_length(prompts, pid):
    return sorted((p for p in prompts if p["example_id"] == pid), key=lambda p: len(p["conversation"]))


# --- step 1-2: dynamic sampling and the turn-0 prompt ------------------------------------------
def test_problem_solved_by_every_turn0_sample_is_skipped():
    prompts, counts = build([trajectory("a", [[0.0, 1.0, 1.0]] * 16, turn0_pass=True)])
    assert prompts == [] and counts.skipped == 1 and counts.emitted == 0


def test_one_failing_turn0_sample_keeps_the_problem():
    flags = [True] * 15 + [False]
    prompts, counts = build([trajectory("a", [[0.0, 0.0, 0.0]] * 16, turn0_pass=flags)])
    assert counts.skipped == 0 and len(prompts) == 1


def test_turn0_prompt_always_emitted_with_zero_prev_best():
    rec = trajectory("a", [[0.0, 0.0, 0.0]] * 16)  # no candidate conversation at all
    prompts, counts = build([rec])
    assert len(prompts) == 1 and counts.kept == 0
    assert prompts[0]["conversation"] == rec["conversations"][0][:2]
    assert prompts[0]["prev_best_pass_rate"] == 0.0
    assert prompts[0]["test_cases"] == rec["test_cases"] and prompts[0]["difficulty"] == "EASY"


# --- step 3: combined pass rate ----------------------------------------------------------------
def test_combined_pass_rate_assumes_four_public_tests():
    rates = combined_pass_rates([[0.5]], [[1.0]], n_tests=10)
    assert rates[0][0] == pytest.approx((0.5 * 6 + 1.0 * 4) / 10)


def test_combined_rate_used_for_prev_best_and_actual_count_flag():
    # hidden 0.5 / public 1.0 at turn 0 → combined 0.7 with 10 tests and the assumed 4 public.
    rec = trajectory(
        "a", [[0.5, 0.5, 1.0]] + [[0.0] * 3] * 15, public_rates=[[1.0, 1.0, 1.0]] + [[0.0] * 3] * 15
    )
    prompts, _ = build([rec])
    cut4 = by_length(prompts, "a")[1]
    assert len(cut4["conversation"]) == 4 and cut4["prev_best_pass_rate"] == pytest.approx(0.7)
    rec["public_test_cases"] = json.dumps({"inputs": ["1", "2"], "outputs": ["1", "2"]})
    prompts, _ = build([rec], actual_public_count=True)
    assert by_length(prompts, "a")[1]["prev_best_pass_rate"] == pytest.approx((0.5 * 8 + 2) / 10)


# --- step 4: candidates ------------------------------------------------------------------------
def test_training_candidates_need_a_fully_passing_turn():
    rates = [[0.0, 0.5, 0.9]] + [[0.0] * 3] * 15  # spread > 0 but max < 1
    prompts, counts = build([trajectory("a", rates)])
    assert len(prompts) == 1 and counts.kept == 0
    prompts, counts = build([trajectory("a", rates)], is_test=True)
    assert counts.kept == 1 and len(prompts) > 1


# --- step 5: test mode -------------------------------------------------------------------------
def test_is_test_keeps_lowest_spread_conversation_cut_to_8_messages():
    rates = [[0.0] * 9 for _ in range(16)]
    rates[3] = [0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # spread 0.9
    rates[7] = [0.2, 0.4, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0]  # spread 0.8: the lowest
    rates[9] = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # spread 1.0
    rec = trajectory("t", rates)
    assert len(rec["conversations"][7]) == 20
    prompts, _counts = build([rec], is_test=True)
    cuts = by_length(prompts, "t")
    assert [len(p["conversation"]) for p in cuts] == [2, 4, 6, 8]
    for p in cuts[1:]:
        assert p["conversation"] == rec["conversations"][7][: len(p["conversation"])]
    assert [p["prev_best_pass_rate"] for p in cuts[1:]] == pytest.approx([0.2, 0.4, 0.5])


# --- step 6: max-variance down-sampling --------------------------------------------------------
def test_max_variance_swaps_in_the_highest_spread_when_variance_grows():
    spread = [0.1, 0.2, 0.3, 0.4, 0.5, 1.0]
    # k=1: [.1 .2 .3 1.0] var .125 > .0125 → swap; k=2: [.1 .2 .5 1.0] var .1225 (no);
    # k=3: [.1 .4 .5 1.0] var .105 (no).
    assert max_variance_subset(list(range(6)), spread) == [0, 1, 2, 5]


def test_max_variance_takes_two_from_the_top_when_better():
    spread = [0.1, 0.1, 0.1, 0.1, 0.9, 0.9]
    # k=1: [.1 .1 .1 .9] var .12 → swap; k=2: [.1 .1 .9 .9] var .16 → swap; k=3: same set, no.
    assert max_variance_subset(list(range(6)), spread) == [0, 1, 4, 5]


def test_max_variance_keeps_all_of_four_or_fewer_in_conversation_order():
    assert max_variance_subset([1, 2, 0], [0.3, 0.1, 0.2]) == [0, 1, 2]


def test_max_variance_quirk_with_more_than_16_candidates():
    spread = [0.01 * (i + 1) for i in range(20)]
    # reference slice: k=0 already appends ordered[16:], so the subset grows past 4
    assert max_variance_subset(list(range(20)), spread) == [0, 1, 2, 3, 16, 17, 18, 19]
    strict = max_variance_subset(list(range(20)), spread, strict_size=True)
    assert len(strict) == 4 and max(strict) <= 15 and 15 in strict


def test_training_mode_emits_for_the_down_sampled_conversations():
    spreads = [0.1, 0.2, 0.3, 0.4, 0.5, 1.0]
    rates = [[1.0 - s, 1.0 - s, 1.0] for s in spreads] + [[0.0] * 3] * 10
    prompts, counts = build([trajectory("a", rates)])
    rec = trajectory("a", rates)
    used = {
        next(
            i for i, c in enumerate(rec["conversations"]) if c[: len(p["conversation"])] == p["conversation"]
        )
        for p in prompts
        if len(p["conversation"]) > 2
    }
    assert used == {0, 1, 2, 5} and counts.kept == 1


# --- step 7: cuts and the three stop rules -----------------------------------------------------
def single_candidate(row, **kw):
    return trajectory("a", [row] + [[0.0] * len(row)] * 15, **kw)


def test_cuts_after_4_6_8_with_prev_best_of_earlier_turns():
    prompts, _ = build([single_candidate([0.2, 0.6, 1.0])])
    cuts = by_length(prompts, "a")
    assert [len(p["conversation"]) for p in cuts] == [2, 4, 6, 8]
    assert [p["prev_best_pass_rate"] for p in cuts] == pytest.approx([0.0, 0.2, 0.6, 1.0])


def test_stop_when_marker_in_both_feedbacks():
    markers = [[True, True, False]] + [[False] * 3] * 15
    prompts, _ = build([single_candidate([0.2, 0.6, 1.0], markers=markers)])
    assert [len(p["conversation"]) for p in by_length(prompts, "a")] == [2, 4]


def test_marker_in_one_feedback_only_does_not_stop():
    markers = [[False, True, False]] + [[False] * 3] * 15
    prompts, _ = build([single_candidate([0.2, 0.6, 1.0], markers=markers)])
    assert [len(p["conversation"]) for p in by_length(prompts, "a")] == [2, 4, 6, 8]


def test_stop_when_prompt_exceeds_token_limit():
    rec = single_candidate([0.2, 0.6, 1.0])
    prompts, _ = build_bandit_prompts([rec], lambda m: 1000 * len(m), BanditOptions(max_prompt_tokens=5000))
    assert [len(p["conversation"]) for p in by_length(prompts, "a")] == [2, 4]
    prompts, _ = build_bandit_prompts([rec], lambda m: 1000 * len(m), BanditOptions(max_prompt_tokens=6000))
    assert [len(p["conversation"]) for p in by_length(prompts, "a")] == [2, 4, 6]


def test_stop_when_pass_rate_one_at_turn0_and_turn2():
    prompts, counts = build([single_candidate([1.0, 0.0, 1.0])])
    assert [len(p["conversation"]) for p in by_length(prompts, "a")] == [2]
    assert counts.public_passes == 1


def test_solved_rule_only_checks_turn_4():
    prompts, counts = build([single_candidate([0.0, 1.0, 1.0])])
    assert [len(p["conversation"]) for p in by_length(prompts, "a")] == [2, 4, 6, 8]
    assert counts.public_passes == 0


def test_token_limit_with_a_real_chat_template(tiny_tokenizer_dir):
    from cobalt.data.tokens import load_tokenizer, prompt_token_counter

    count = prompt_token_counter(load_tokenizer(tiny_tokenizer_dir))
    rec = single_candidate([0.2, 0.6, 1.0])
    lengths = [count(rec["conversations"][0][:n]) for n in (4, 6, 8)]
    assert lengths[0] < lengths[1] < lengths[2]
    prompts, _ = build_bandit_prompts([rec], count, BanditOptions(max_prompt_tokens=lengths[1]))
    assert [len(p["conversation"]) for p in by_length(prompts, "a")] == [2, 4, 6]


# --- step 8: shuffle and counts ----------------------------------------------------------------
def test_shuffle_is_seeded_and_counts_match():
    recs = [single_candidate([0.2, 0.6, 1.0]) | {"id": f"p{i}"} for i in range(5)]
    a, counts = build(recs)
    b, _ = build(recs)
    c, _ = build(recs, seed=7)
    assert a == b and a != c
    assert sorted(map(json.dumps, a)) == sorted(map(json.dumps, c))
    assert counts.emitted == len(a) == 20 and counts.kept == 5 and counts.skipped == 0
    unshuffled = [p for r in recs for p in by_length(a, r["id"])]
    random.Random(42).shuffle(unshuffled)
    assert a == unshuffled


# --- properties --------------------------------------------------------------------------------
RATE = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
PROBLEM = st.tuples(
    st.lists(st.lists(RATE, min_size=3, max_size=3), min_size=16, max_size=16),
    st.lists(st.booleans(), min_size=16, max_size=16),
    st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=16, max_size=16),
)


def records_from(problems):
    return [
        trajectory(f"p{i}", rates, turn0_pass=flags, markers=marks)
        for i, (rates, flags, marks) in enumerate(problems)
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(PROBLEM, min_size=1, max_size=6), st.booleans())
def test_properties_of_bandit_prompts(problems, is_test):
    records = records_from(problems)
    prompts, counts = build(records, is_test=is_test)
    again, _ = build(records, is_test=is_test)
    assert prompts == again
    assert counts.emitted == len(prompts)
    per_problem = 1 + 3 * (1 if is_test else 4)
    for rec, (rates, flags, _) in zip(records, problems):
        mine = [p for p in prompts if p["example_id"] == rec["id"]]
        if all(flags):
            assert mine == []
            continue
        assert 1 <= len(mine) <= per_problem
        assert sum(len(p["conversation"]) == 2 for p in mine) == 1
        keys = set()
        for p in mine:
            conv = p["conversation"]
            k = next(i for i, c in enumerate(rec["conversations"]) if c[: len(conv)] == conv)
            keys.add((k, len(conv)))
            if len(conv) > 2:
                assert max(rates[k]) - min(rates[k]) > 0
                assert p["prev_best_pass_rate"] == pytest.approx(max(rates[k][: (len(conv) - 2) // 2]))
                assert is_test or max(rates[k]) == 1.0
        assert len(keys) == len(mine)  # no prompt duplicated
    assert counts.skipped == sum(all(f) for _, f, _ in problems)


@settings(max_examples=200, deadline=None)
@given(st.lists(RATE.filter(lambda r: r > 0), min_size=0, max_size=20), st.booleans())
def test_max_variance_subset_properties(spreads, strict):
    if not strict:
        spreads = spreads[:16]
    ordered = sorted(range(len(spreads)), key=lambda i: spreads[i])
    subset = max_variance_subset(ordered, spreads, strict_size=strict)
    assert len(subset) == min(4, len(spreads)) and len(set(subset)) == len(subset)
    assert set(subset) <= set(ordered[:16])
    if len(spreads) > 4:
        assert np.var([spreads[i] for i in subset]) >= np.var([spreads[i] for i in ordered[:4]])
