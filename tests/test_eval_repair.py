"""The repair rate and its independent-resample baseline (cobalt.eval.repair) on hand-made grids:
K conversations (rows) × turns (columns) of hidden-test pass rates, 1.0 = solved."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cobalt.eval.repair import compare_repair, problem_repair, repair_rates, repair_section
from cobalt.eval.significance import bootstrap_interval, paired_difference


def evaluated_file(path, grids: dict[str, list[list[float]]]):
    path.write_text("".join(json.dumps({"id": i, "all_pass_rates": g}) + "\n" for i, g in grids.items()))
    return path


def independent_draws(rng, problems: int, conversations: int, turns: int, repair: float | None = None):
    """Each problem has a solve rate p; every turn is a fresh draw at p, or, with ``repair``, a
    turn after a failure is solved with that probability instead."""
    grids = []
    for p in rng.uniform(0.05, 0.95, problems):
        grid = []
        for _ in range(conversations):
            row = [float(rng.random() < p)]
            for _ in range(turns - 1):
                chance = repair if repair is not None and row[-1] < 1 else p
                row.append(float(rng.random() < chance))
            grid.append(row)
        grids.append(grid)
    return grids


def test_a_model_that_always_fixes_its_failure_at_the_next_turn_repairs_100_percent():
    grids = [[[0.0, 1.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0]], [[0.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0]]]
    turns = repair_rates(grids)
    assert [t.turn for t in turns] == [0, 1, 2]
    for t in (turns[0], turns[2]):
        assert (t.repair.mean, t.repair.low, t.repair.high) == (100.0, 100.0, 100.0)
    assert turns[1].problems == 0 and turns[1].repair is None and turns[1].difference is None


@pytest.mark.parametrize(("conversations", "tolerance"), [(2, 10.0), (4, 6.0)])
def test_a_second_independent_draw_is_no_repair(conversations, tolerance):
    # 400 problems: over 50 seeds the difference had a spread of 3.1 points (2 conversations) and
    # 1.9 (4), mean ≈ 0, and p < 0.01 in 1 % of the cases, as a calibrated test should
    grids = independent_draws(np.random.default_rng(5), 400, conversations, 3)
    for t in repair_rates(grids, seed=1):
        assert abs(t.difference.mean) < tolerance and t.difference.p_value > 0.01
        assert t.repair.mean - t.resample.mean == pytest.approx(t.difference.mean)
    if conversations == 2:  # a plain mean of per-problem rates would see a loss at turn 0
        rows = [r for grid in grids if (r := problem_repair(grid, 0))]
        assert np.mean([r.repair for r in rows]) - np.mean([r.resample for r in rows]) < -5.0


def test_a_real_repair_beats_the_resample():
    grids = independent_draws(np.random.default_rng(6), 60, 4, 2, repair=0.9)
    (t,) = repair_rates(grids)
    assert t.repair.mean > 85.0 and t.resample.mean < 65.0
    assert t.difference.low > 0.0 and t.difference.p_value < 0.001


def test_the_resample_leaves_the_failing_draw_out():
    # turn 0 solved by 2 of 4 conversations: a failed one's baseline is the other 3's rate, 2/3
    # (counting itself it would be 2/4)
    grid = [[1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    first = problem_repair(grid, 0)
    assert first.failed == 2 and first.repair == 50.0 and first.resample == pytest.approx(200 / 3)
    # at turn 1 a conversation that solved turn 0 does not count its own success
    second = problem_repair(grid, 1)
    assert second.failed == 2 and second.resample == pytest.approx(100 * (1 / 3 + 2 / 3) / 2)
    # one conversation: a repair rate, no baseline, said so
    (alone,) = repair_rates([[[0.0, 1.0]]])
    assert alone.repair.mean == 100.0 and alone.resample is None and alone.difference is None
    assert alone.without_baseline == 1


def test_problems_without_a_failure_at_t_are_left_out_and_failures_are_pooled():
    solved_first = [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]  # no failure at turn 0
    repaired = [[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]  # 2 failures at turn 0, both repaired
    missed = [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]  # 1 failure at turn 0, not repaired
    zero, one = repair_rates([solved_first, repaired, missed])
    assert zero.problems == 2 and zero.failed == 3
    assert zero.repair.mean == pytest.approx(200 / 3)  # 2 of the 3 failed conversations
    assert one.problems == 2 and one.failed == 2 and one.repair.mean == 50.0


def test_trained_minus_base_is_paired_by_problem_and_the_section_renders(tmp_path):
    never = {f"p{i}": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]] for i in range(8)}
    always = {f"p{i}": [[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]] for i in reversed(range(8))}
    always["extra"] = [[0.0, 1.0, 1.0]]
    repair = compare_repair(
        evaluated_file(tmp_path / "b.jsonl", never), evaluated_file(tmp_path / "t.jsonl", always)
    )
    assert repair["problems"] == 8 and len(repair["trained_minus_base"]) == 2
    zero = repair["trained_minus_base"][0]
    assert zero["mean"] == 100.0 and zero["p_value"] == pytest.approx(2 / 2**8)
    assert repair["trained_minus_base"][1]["mean"] == 100.0
    assert repair["base"][0]["repair"]["mean"] == 0.0 and repair["base"][0]["resample"]["mean"] == 100.0
    lines = repair_section(json.loads(json.dumps(repair)), "held-out")
    text = "\n".join(lines)
    assert lines[0] == "## Repair rate on held-out problems (hidden tests)"
    assert "| 0 → 1 | base | 8 (8) | 0.0 (0.0 to 0.0) | 100.0 (100.0 to 100.0) | -100.0 points" in text
    assert "| 0 → 1 | trained | 8 (8) | 100.0 (100.0 to 100.0) |" in text
    assert "| 1 → 2 | +100.0 points, 95% CI +100.0 to +100.0, p = 7.8e-03 |" in text
    # a model without failures at a turn and one-conversation problems render too
    solved = evaluated_file(tmp_path / "s.jsonl", {"p0": [[1.0, 1.0]]})
    single = compare_repair(evaluated_file(tmp_path / "one.jsonl", {"p0": [[0.0, 1.0]]}), solved)
    text = "\n".join(repair_section(single, "training"))
    assert "| 0 → 1 | base | 1 (1; 1 without baseline) | 100.0 (100.0 to 100.0) | — | — |" in text
    assert "| 0 → 1 | trained | 0 (0) | — | — | — |" in text and "| 0 → 1 | — |" in text


def test_weights_make_the_mean_and_the_test_weighted():
    assert bootstrap_interval([0.0, 100.0], weights=[1, 3]).mean == 75.0
    assert bootstrap_interval([0.0, 100.0]).mean == 50.0
    d = paired_difference([0.0, 0.0], [-10.0, 10.0], weights=[1, 3])
    assert d.mean == 5.0 and d.p_value == 1.0  # flips of -10 and +30: every |mean| is >= 10


def test_compare_of_two_evaluated_files_adds_their_repair_rates(tmp_path, capsys):
    from cobalt.eval.cli import main

    base = evaluated_file(
        tmp_path / "b.jsonl", {"p0": [[0.0, 0.0], [1.0, 1.0]], "p1": [[0.0, 0.0], [0.0, 1.0]]}
    )
    trained = evaluated_file(
        tmp_path / "t.jsonl", {"p0": [[0.0, 1.0], [1.0, 1.0]], "p1": [[0.0, 1.0], [0.0, 1.0]]}
    )
    main(["--compare", str(base), str(trained), "--labels", "warm", "rl", "-o", str(tmp_path / "cmp")])
    out = json.loads(capsys.readouterr().out)
    assert out["repair"]["trained"][0]["repair"]["mean"] == 100.0
    md = (tmp_path / "cmp.summary.md").read_text()
    assert md.startswith("| turn | warm Pass@1 (%)") and "## Repair rate on the compared problems" in md
    assert "| 0 → 1 | warm | 3 (2) | 33.3" in md and "| turn | rl − warm repair rate" in md
