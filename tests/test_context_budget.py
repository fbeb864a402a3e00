"""cobalt.infer.context_budget: how many feedback turns fit the context, estimated for the dry run."""

from __future__ import annotations

import json

from data_fixtures import lcb_file

from cobalt.common.jsonl import write_jsonl
from cobalt.infer.context_budget import estimate, per_turn_tokens, turns_that_fit


def test_a_turn_fits_while_its_prompt_plus_the_answer_budget_is_within_the_window():
    assert turns_that_fit(prompt=400, context=16384, answer_budget=6144, per_turn=2500) == 3
    assert turns_that_fit(prompt=400, context=6544, answer_budget=6144, per_turn=2500) == 0  # turn 0 only
    assert turns_that_fit(prompt=400, context=6000, answer_budget=6144, per_turn=2500) == -1
    # a thinking model keeps at most 6,000 characters of an answer; another keeps all of it
    assert per_turn_tokens(6144, thinking=True) < per_turn_tokens(6144, thinking=False)
    assert per_turn_tokens(6144, thinking=False) > 6144


def test_the_papers_eight_turns_are_cut_at_16k_and_fit_the_models_own_window(tmp_path):
    lcb = lcb_file(tmp_path / "test6.jsonl", limit=3)
    write_jsonl(tmp_path / "long.jsonl", [{"id": "p", "instruction": "x" * 60000, "test_cases": "{}"}])
    (tmp_path / "model").mkdir()
    (tmp_path / "model/config.json").write_text(json.dumps({"max_position_embeddings": 40960}))
    args = {"answer_budget": 6144, "thinking": True, "turns": 8}
    capped = estimate({"lcb": lcb}, context=16384, model="unused", **args)["files"]["lcb"]
    assert capped["turns_fit"]["longest_prompt"] < 8 and capped["problems_that_may_be_cut"] == 3
    own = estimate(
        {"lcb": lcb, "long": tmp_path / "long.jsonl"}, context=None, model=tmp_path / "model", **args
    )
    assert own["context"] == 40960 and own["files"]["lcb"]["problems_that_may_be_cut"] == 0
    assert own["files"]["long"]["prompt_tokens"]["max"] > 10000  # 60,000 characters
    assert (
        own["files"]["long"]["turns_fit"]["longest_prompt"] < 8
        and own["files"]["long"]["problems_that_may_be_cut"] == 1
    )
    unknown = estimate({"lcb": lcb}, context=None, model="Org/not-local", **args)
    assert unknown["context"] is None and "turns_fit" not in unknown["files"]["lcb"]
    assert unknown["files"]["lcb"]["needed_at_last_turn"]["max"] > 16384


def test_a_run_of_max_problems_counts_only_the_problems_it_keeps(tmp_path):
    lcb = lcb_file(tmp_path / "test6.jsonl", limit=3)
    args = {"context": 16384, "model": "unused", "answer_budget": 6144, "thinking": True, "turns": 8}
    every = estimate({"lcb": lcb}, **args)["files"]["lcb"]
    kept = estimate({"lcb": lcb}, limit=2, **args)["files"]["lcb"]
    assert (every["problems"], every["problems_that_may_be_cut"]) == (3, 3)
    assert (kept["problems"], kept["problems_that_may_be_cut"]) == (2, 2)
