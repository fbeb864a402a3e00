"""The report's statistics, its reader of veRL's metrics file, its figures and the quickstart's
report.md, on small synthetic files (no Ray, no model)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from cobalt.eval import training_curves
from cobalt.eval.comparison import compare, plot_comparison
from cobalt.eval.significance import (
    Interval,
    PairedDifference,
    bootstrap_interval,
    paired_difference,
    sign_flip_p_value,
    verdict,
)
from cobalt.recipes.quickstart.report import RunRecord, step_table, write_report

PNG = b"\x89PNG"


# ------------------------------------------------------------------------------------ statistics
def test_bootstrap_interval_holds_the_mean_and_narrows_with_more_problems():
    rng = np.random.default_rng(1)
    few, many = rng.uniform(0, 100, 10), rng.uniform(0, 100, 1000)
    small, large = bootstrap_interval(few, seed=3), bootstrap_interval(many, seed=3)
    for values, interval in ((few, small), (many, large)):
        assert interval.low <= values.mean() <= interval.high and interval.mean == pytest.approx(
            values.mean()
        )
    assert (large.high - large.low) < (small.high - small.low) / 5
    assert bootstrap_interval(few, seed=3) == small  # seeded: the same interval every time
    assert bootstrap_interval([40.0]) == bootstrap_interval([40.0, 40.0]) == Interval(40.0, 40.0, 40.0)
    with pytest.raises(ValueError):
        bootstrap_interval([])


def test_sign_flip_test_separates_a_clear_difference_from_none():
    rng = np.random.default_rng(2)
    base = rng.uniform(0, 50, 30)
    assert sign_flip_p_value(base + 30 + rng.normal(0, 5, 30) - base) < 0.001  # random patterns
    assert sign_flip_p_value(np.zeros(30)) == 1.0
    assert paired_difference(base, base).p_value == 1.0
    # exact below 17 problems: all 5 differences positive is 2 of the 32 sign patterns
    assert sign_flip_p_value([10, 20, 10, 30, 10]) == pytest.approx(2 / 32)
    assert sign_flip_p_value([10, -10, 10, -10]) == 1.0


def test_paired_difference_is_trained_minus_base_problem_by_problem():
    base, trained = [0, 50, 100, 0, 0, 50, 100, 0], [50, 100, 100, 50, 0, 100, 100, 50]
    d = paired_difference(base, trained)
    assert d.mean == pytest.approx(31.25) and d.low <= 31.25 <= d.high and d.problems == 8
    assert d.p_value == pytest.approx(2 / 2**5)  # five non-zero differences, all positive
    assert paired_difference(trained, base).mean == pytest.approx(-31.25)


def test_the_verdict_follows_the_numbers():
    better = PairedDifference(12.5, 4.0, 20.0, 0.01, 20)
    worse = PairedDifference(-12.5, -20.0, -4.0, 0.01, 20)
    unsure = PairedDifference(3.0, -2.0, 8.0, 0.4, 20)
    assert verdict({0: unsure, 3: better}) == (
        "Trained vs base, held-out Pass@1 over 20 problems — turn 0: no significant change "
        "(+3.0 points, 95% CI -2.0 to +8.0, p = 0.40); turn 3: improved "
        "(+12.5 points, 95% CI +4.0 to +20.0, p = 0.01)."
    )
    assert "turn 3: worse (-12.5 points" in verdict({0: unsure, 3: worse})
    assert "improved" not in verdict({0: unsure, 3: unsure})
    few = PairedDifference(0.0, 0.0, 0.0, 1.0, 3)
    assert verdict({0: few}).endswith("With 3 problems no difference can reach p < 0.05.")


# --------------------------------------------------------------------------- veRL's metrics file
def verl_metrics_file(path, steps=3):
    """Lines as veRL's file logger writes them: validation before training, one line per step."""
    lines = [{"step": 0, "data": {"val-core/code/acc/mean@1": 0.0, "val-aux/code/reward/mean@1": -1.0}}]
    for step in range(1, steps + 1):
        lines.append({"step": step, "data": {
            "critic/score/mean": -1.0 + 0.2 * step, "reward/correctness/mean": -0.5 + 0.1 * step,
            "reward/improvement/mean": 0.05 * step, "reward/format_reward/mean": -0.1,
            "reward/pass_rate/mean": 0.1 * step, "reward/groups_with_spread/fraction": 0.25 * step,
            "response_length/mean": 80.0 + step, "response_length/max": 96, "response_length/clip_ratio": 0.5,
            "training/rollout_probs_diff_mean": 1e-6, "actor/ppo_kl": 0.0, "actor/pg_loss": 0.01,
            "training/global_step": step, "note": "not a number", "flag": True,
        }})  # fmt: skip
    lines.append({"step": steps, "data": {"val-core/code/acc/mean@1": 0.5}})  # validation at the end
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_metrics_reader_merges_lines_per_step_and_keeps_numbers_only(tmp_path):
    metrics = training_curves.read_metrics(verl_metrics_file(tmp_path / "m.jsonl"))
    assert sorted(metrics) == [0, 1, 2, 3]
    assert metrics[0] == {"val-core/code/acc/mean@1": 0.0, "val-aux/code/reward/mean@1": -1.0}
    assert metrics[3]["val-core/code/acc/mean@1"] == 0.5 and metrics[3]["critic/score/mean"] == pytest.approx(
        -0.4
    )
    assert "note" not in metrics[1] and "flag" not in metrics[1]
    assert metrics[2][training_curves.NO_SPREAD] == pytest.approx(0.5)  # 1 - groups with spread
    assert training_curves.series(metrics, "val-core/code/acc/mean@1") == ([0, 3], [0.0, 0.5])


def test_every_panel_with_data_is_drawn_and_the_png_written(tmp_path):
    metrics = training_curves.read_metrics(verl_metrics_file(tmp_path / "m.jsonl"))
    fig = training_curves.curves_figure(metrics)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == [panel.title for panel in training_curves.PANELS]
    reward_panel = fig.axes[0]
    assert [line.get_label() for line in reward_panel.get_lines()] == [
        "reward", "correctness", "improvement", "format"
    ]  # fmt: skip
    only_reward = {1: {"critic/score/mean": -1.0}, 2: {"critic/score/mean": -0.5}}
    assert len([ax for ax in training_curves.curves_figure(only_reward).axes if ax.get_visible()]) == 1
    png = training_curves.plot(tmp_path / "m.jsonl", tmp_path / "out/curves.png")
    assert png.read_bytes()[:4] == PNG


def test_curves_command_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as help_exit:
        training_curves.main(["--help"])
    assert help_exit.value.code == 0 and "METRICS" in capsys.readouterr().out.upper()
    metrics = verl_metrics_file(tmp_path / "m.jsonl")
    assert training_curves.main([str(metrics)]) == 0 and (tmp_path / "m.png").read_bytes()[:4] == PNG
    (tmp_path / "empty.jsonl").write_text("")
    assert training_curves.main([str(tmp_path / "empty.jsonl")]) == 1
    assert "no logged step" in capsys.readouterr().err


# -------------------------------------------------------------------------- base vs trained files
def evaluated_file(path, grids: dict[str, list[list[float]]]):
    path.write_text("".join(json.dumps({"id": i, "all_pass_rates": g}) + "\n" for i, g in grids.items()))
    return path


def test_comparison_pairs_problems_by_id_and_reports_each_turn(tmp_path):
    # grids: samples (rows) x turns (columns) of hidden-test pass rates; 1.0 = solved
    base = evaluated_file(tmp_path / "base.jsonl", {f"p{i}": [[0.0, 0.0], [0.0, 0.0]] for i in range(8)})
    trained_grids = {"p0": [[1.0, 1.0], [1.0, 1.0]]}
    trained_grids.update({f"p{i}": [[0.0, 1.0], [0.0, 1.0]] for i in range(1, 5)})
    trained_grids.update({f"p{i}": [[0.0, 0.0], [0.0, 1.0]] for i in range(5, 8)})
    trained = evaluated_file(tmp_path / "trained.jsonl", dict(reversed(trained_grids.items())))
    result = compare(base, trained, seed=7)
    assert result["problems"] == 8 and len(result["difference"]) == 2
    assert [i.mean for i in result["base"]] == [0.0, 0.0]
    assert [i.mean for i in result["trained"]] == [12.5, 81.25]
    assert result["difference"][0].p_value == 1.0  # one problem changed: every sign pattern as far
    assert result["difference"][1].p_value == pytest.approx(2 / 2**8)  # all 8 improved
    assert "turn 0: no significant change" in result["verdict"] and "turn 1: improved" in result["verdict"]
    plot_comparison(result, tmp_path / "pass_at_1.png")
    assert (tmp_path / "pass_at_1.png").read_bytes()[:4] == PNG


# ----------------------------------------------------------------------- the quickstart's report
def quickstart_run_dir(root):
    (root / "data/verl").mkdir(parents=True)
    (root / "models/warm").mkdir(parents=True)
    for name, count in (("train_problems", 3), ("heldout_problems", 2), ("bandit_train", 2)):
        (root / f"data/{name}.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in range(count)))
    pd.DataFrame({"prompt": ["a", "b"]}).to_parquet(root / "data/verl/train.parquet")
    trajectories = evaluated_file(root / "traj.jsonl", {"a": [[0.0, 0.5]], "b": [[0.0, 0.0]]})
    base = evaluated_file(root / "base.jsonl", {"h1": [[0.0, 0.0]], "h2": [[0.0, 1.0]]})
    trained = evaluated_file(root / "trained.jsonl", {"h1": [[0.0, 1.0]], "h2": [[1.0, 1.0]]})
    (root / "models/warm/warm_up.json").write_text(
        json.dumps({"steps": 2, "first_loss": 2.0, "last_loss": 1.0})
    )
    verl_metrics_file(root / "grpo_metrics.jsonl", steps=2)
    files = {"train": root / "data/train_problems.jsonl", "heldout": root / "data/heldout_problems.jsonl",
             "trajectories": trajectories, "bandit": root / "data/bandit_train.jsonl",
             "parquet": root / "data/verl", "base_eval": base, "trained_eval": trained}  # fmt: skip
    state = {
        "GRPO": {"seconds": 100.0},
        "eval": {"seconds": 5.0, "concurrent": True},
        "commands": {"grpo": "x"},
    }
    return RunRecord(root, "test", {"model": "smollm2", "seed": 1}, state, files, 3.0)


def test_quickstart_report_has_the_figures_the_tables_and_a_computed_verdict(tmp_path):
    md = write_report(quickstart_run_dir(tmp_path)).read_text()
    report = json.loads((tmp_path / "report/report.json").read_text())
    for png in ("pass_at_1.png", "training.png"):
        assert (tmp_path / "report" / png).read_bytes()[:4] == PNG and f"]({png})" in md
    assert [s["step"] for s in report["grpo"]] == [1, 2]  # the validation-only step 0 is no training step
    assert report["grpo"][1]["groups_with_spread"] == 0.5 and report["grpo"][1]["truncated_fraction"] == 0.5
    assert report["counts"]["train_rows"] == 2 and report["counts"]["trajectories_with_spread"] == 1
    assert report["stages_total_s"] == 100.0 and report["concurrent_stages"] == ["eval"]
    assert f"**Verdict.** {report['heldout']['comparison']['verdict']}" in md
    assert "over 2 problems — turn 0: no significant change (+50.0 points" in md
    assert "| 1 | +50.0 points, 95% CI" in md and "| **all stages** | 100 |" in md
    assert "| step | reward mean | pass rate mean | groups with reward spread | truncated |" in md
    assert (
        "## Repair rate on held-out problems (hidden tests)" in md
        and report["heldout"]["repair"]["problems"] == 2
    )


def test_the_header_says_how_many_training_problems_the_warm_up_learned(tmp_path):
    """The warm-up may learn a subset (warmup.problems) or other problems (LiveCodeBench runs)."""
    run = quickstart_run_dir(tmp_path)  # 3 training problems, ids 0, 1, 2
    warm_file = tmp_path / "models/warm/warm_up.json"
    for problems, words in (
        ([0, 1, 2], "an SFT warm-up on the 3 training problems' reference solutions (2 step(s)"),
        ([0, 1], "an SFT warm-up on the reference solutions of 2 of the 3 training problems (2 step(s)"),
        (
            [0, "e1", "e2", "e3"],
            "an SFT warm-up on the reference solutions of 4 problems, 1 of them training",
        ),
    ):
        warm_file.write_text(
            json.dumps({"steps": 2, "first_loss": 2.0, "last_loss": 1.0, "problems": problems})
        )
        assert words in write_report(run).read_text()


def test_the_step_table_shows_the_columns_some_step_has():
    steps = [
        {"step": 1, "reward_mean": -1.0, "ppo_kl": None},
        {"step": 2, "reward_mean": -0.5, "ppo_kl": 1e-5},
    ]
    assert step_table(steps) == [
        "| step | reward mean | actor ppo_kl |",
        "|---:|---:|---:|",
        "| 1 | -1 |  |",
        "| 2 | -0.5 | 1e-05 |",
    ]
    assert step_table([{"step": 1, "reward_mean": -1.0, "ppo_kl": None}])[0] == "| step | reward mean |"


def test_a_run_that_evaluated_training_problems_reports_them_beside_the_held_out_ones(tmp_path):
    run = quickstart_run_dir(tmp_path)
    base = evaluated_file(tmp_path / "base_train.jsonl", {"a": [[0.0, 0.0]], "b": [[1.0, 1.0]]})
    trained = evaluated_file(tmp_path / "trained_train.jsonl", {"a": [[1.0, 1.0]], "b": [[1.0, 1.0]]})
    run.files.update(base_train_eval=base, trained_train_eval=trained)
    md = write_report(run).read_text()
    report = json.loads((tmp_path / "report/report.json").read_text())
    train = report["training_problems"]
    assert (
        train["pass_at_1"]["base"]["pass_at_1"][0] == 50.0
        and train["pass_at_1"]["trained"]["pass_at_1"][0] == 100.0
    )
    assert train["comparison"]["verdict"].startswith("Trained vs base, training Pass@1 over 2 problems")
    assert report["heldout"]["comparison"]["verdict"].startswith("Trained vs base, held-out Pass@1")
    assert f"**On training problems.** {train['comparison']['verdict']}" in md
    assert "## Pass@1 per turn on training problems (hidden tests)" in md
    assert (tmp_path / "report/pass_at_1_train.png").read_bytes()[
        :4
    ] == PNG and "](pass_at_1_train.png)" in md
    # a run without them has neither the section nor the figure
    plain = quickstart_run_dir(tmp_path / "plain")
    assert "on training problems" not in write_report(plain).read_text().lower()
    assert not (tmp_path / "plain/report/pass_at_1_train.png").exists()


def test_a_preregistered_test_and_the_held_out_families_are_reported_with_a_computed_outcome(tmp_path):
    """The generalize profile: the test fixed in its config is applied to the run's numbers (here
    40 held-out problems, 12 solved by trained only after feedback, none by base only: McNemar's
    exact p = 2 / 2**12), and the held-out families get a section of their own."""
    run = quickstart_run_dir(tmp_path)
    grids = {f"h{i}": [[0.0, 1.0 if i < 12 else 0.0]] for i in range(40)}
    run.files["base_eval"] = evaluated_file(tmp_path / "b.jsonl", {i: [[0.0, 0.0]] for i in grids})
    run.files["trained_eval"] = evaluated_file(tmp_path / "t.jsonl", grids)
    run.files["base_families_eval"] = evaluated_file(
        tmp_path / "bf.jsonl", {"f1": [[0.0, 0.0]], "f2": [[1.0, 1.0]]}
    )
    run.files["trained_families_eval"] = evaluated_file(
        tmp_path / "tf.jsonl", {"f1": [[0.0, 0.0]], "f2": [[1.0, 1.0]]}
    )
    prereg = {"primary": "heldout", "turn": "last", "alpha": 0.05, "test": "McNemar's exact test"}
    run = dataclasses.replace(run, config={**run.config, "preregistration": prereg})
    md = write_report(run).read_text()
    report = json.loads((tmp_path / "report/report.json").read_text())
    outcome = report["preregistered"]
    assert outcome["turn"] == 1 and outcome["improved"] is True and outcome["problem_set"] == "held-out"
    assert outcome["difference"]["p_value"] == pytest.approx(2 / 2**12, rel=1e-9)
    assert outcome["difference"]["mean"] == pytest.approx(30.0)
    assert "- test: McNemar's exact test" in md and "An improvement at α = 0.05 is **shown**." in md
    assert "## Pass@1 per turn on held-out-family problems (hidden tests)" in md
    assert f"**Out of family.** {report['heldout_families']['comparison']['verdict']}" in md
    # at turn 0 nothing changed: the same test, fixed on turn 0, shows nothing
    at_turn_0 = dataclasses.replace(run, config={**run.config, "preregistration": {**prereg, "turn": 0}})
    assert "An improvement at α = 0.05 is **not shown**." in write_report(at_turn_0).read_text()
    wrong = dataclasses.replace(run, config={**run.config, "preregistration": {**prereg, "primary": "dev"}})
    with pytest.raises(ValueError, match=r"preregistration\.primary: 'dev' was not evaluated"):
        write_report(wrong)


def test_procedural_problems_are_reported_per_family_and_a_dev_run_says_dev(tmp_path):
    """Each family's mean Pass@1 at turn 0 and the last turn, base and trained, with the families
    the base model solves entirely or not at all marked; a tuning run (``procedural.evaluate:
    dev``) calls its evaluated set dev, not held-out."""
    run = quickstart_run_dir(tmp_path)
    base = {
        "fam-add_two-000001": [[1.0, 0.0]],
        "fam-add_two-000002": [[0.0, 0.0]],
        "fam-list_max-000003": [[1.0, 1.0]],
    }
    trained = {
        "fam-add_two-000001": [[1.0, 1.0]],
        "fam-add_two-000002": [[1.0, 1.0]],
        "fam-list_max-000003": [[0.0, 1.0]],
    }
    run.files["base_eval"] = evaluated_file(tmp_path / "b.jsonl", base)
    run.files["trained_eval"] = evaluated_file(tmp_path / "t.jsonl", trained)
    md = write_report(run).read_text()
    families = json.loads((tmp_path / "report/report.json").read_text())["heldout"]["per_family"]
    assert families == [
        {"family": "add_two", "problems": 2, "base": [50.0, 0.0], "trained": [100.0, 100.0]},
        {"family": "list_max", "problems": 1, "base": [100.0, 100.0], "trained": [0.0, 100.0]},
    ]
    assert "## Pass@1 per family on held-out problems (hidden tests, %)" in md
    assert (
        "| add_two | 2 | 50 | 0 | 100 | 100 |" in md and "| list_max (all) | 1 | 100 | 100 | 0 | 100 |" in md
    )
    dev = dataclasses.replace(run, config={**run.config, "procedural": {"evaluate": "dev"}})
    md = write_report(dev).read_text()
    assert "## Pass@1 per turn on dev problems (hidden tests)" in md and "Dev problems (" in md
    assert "held-out problems" not in md.lower()
    # problems that are not procedural ones get no family section
    plain = quickstart_run_dir(tmp_path / "plain")
    assert "per family" not in write_report(plain).read_text()


def test_held_out_results_split_by_program_novelty_from_kept_per_instance_rows(tmp_path):
    """A run of procedural problems: the held-out instances whose normalized reference program is a
    training program (seen) are reported apart from the others (unseen, the primary split); the
    per-instance rows are kept in report.json and the split is recomputed from them alone."""
    from cobalt.data.novelty import run_novelty
    from cobalt.data.procedural.splits import write_splits
    from cobalt.recipes.quickstart.report import novelty_comparisons

    run = quickstart_run_dir(tmp_path)
    write_splits(tmp_path / "data/procedural", {"train": 72, "dev": 0, "heldout": 72, "heldout_families": 0})
    novelty = run_novelty(tmp_path)["heldout"]
    unseen = [i for i, k in novelty.items() if k == "unseen"]
    seen = [i for i, k in novelty.items() if k != "unseen"]
    assert len(unseen) >= 4 and len(seen) >= 4
    # synthetic results: trained solves every seen-program instance after feedback, no unseen one
    base = {i: [[0.0, 0.0]] for i in novelty}
    trained = {i: [[0.0, 1.0 if i in seen else 0.0]] for i in novelty}
    run.files["base_eval"] = evaluated_file(tmp_path / "b.jsonl", base)
    run.files["trained_eval"] = evaluated_file(tmp_path / "t.jsonl", trained)
    run = dataclasses.replace(run, config={**run.config, "problems": "procedural"})
    md = write_report(run).read_text()
    held = json.loads((tmp_path / "report/report.json").read_text())["heldout"]
    split = held["by_novelty"]
    assert split["counts"]["unseen"] == len(unseen)
    assert split["counts"]["seen_sft"] + split["counts"]["seen_grpo"] == len(seen)
    assert split["unseen"]["problems"] == len(unseen) and split["seen"]["problems"] == len(seen)
    assert (
        split["unseen"]["difference"][1]["mean"] == 0.0 and split["unseen"]["difference"][1]["p_value"] == 1.0
    )
    assert split["seen"]["difference"][1]["mean"] == 100.0
    assert held["comparison"]["difference"][1]["mean"] == pytest.approx(100.0 * len(seen) / 72)
    rows = {r["id"]: r for r in held["per_instance"]}
    assert set(rows) == set(novelty) and all(rows[i]["novelty"] == novelty[i] for i in novelty)
    assert rows[seen[0]]["trained"] == [0.0, 100.0] and rows[unseen[0]]["trained"] == [0.0, 0.0]
    assert novelty_comparisons(held["per_instance"], seed=1) == split  # recomputed from the kept rows
    assert "## Held-out problems by program novelty (hidden tests, last turn)" in md
    assert f"| unseen-program | {len(unseen)} | 0.0 | 0.0 | +0.0 points" in md
    assert f"{len(seen)} of them have a training instance's program" in md
    # rows without a novelty (not procedural problems) give no split
    assert novelty_comparisons([{"id": "a", "base": [0.0], "trained": [100.0]}]) is None


def test_the_report_says_which_arm_and_training_seed_the_run_is(tmp_path):
    trained = quickstart_run_dir(tmp_path / "trained")
    md = write_report(trained).read_text()
    report = json.loads((tmp_path / "trained/report/report.json").read_text())
    assert report["arm"] == "trained" and report["train_seed"] is None
    assert "**Arm: trained** (training seed unset (the train profile's seeds); warm-up seed 0)" in md

    control = quickstart_run_dir(tmp_path / "control")
    control = dataclasses.replace(control, config={**control.config, "arm": "control", "train_seed": 2})
    (tmp_path / "control/models/control").mkdir(parents=True)
    (tmp_path / "control/models/control/warm_up.json").write_text(json.dumps(
        {"examples": 144, "steps": 30, "batch_size": 4, "lr": 1e-4, "seed": 2, "first_loss": 1.5, "last_loss": 0.5}))  # fmt: skip
    md = write_report(control).read_text()
    report = json.loads((tmp_path / "control/report/report.json").read_text())
    assert report["arm"] == "control" and report["train_seed"] == 2
    assert (
        "**Arm: control** (training seed 2; warm-up seed 0): the model called *trained* below is the control"
        in md
    )
    assert "## Control SFT" in md and "30 step(s) of batch 4, lr 0.0001, seed 2, loss 1.5 → 0.5" in md
    assert "## GRPO training" not in md


def test_the_report_of_an_online_method_names_it_and_counts_no_trajectories(tmp_path):
    run = quickstart_run_dir(tmp_path)
    files = {k: v for k, v in run.files.items() if k not in ("trajectories", "bandit")}
    online = dataclasses.replace(
        run, files=files, config={**run.config, "train_profile": "grpo_mt_quickstart"}
    )
    md = write_report(online).read_text()
    report = json.loads((tmp_path / "report/report.json").read_text())
    assert md.startswith("# GRPO-MT quickstart — ") and "the base trained with GRPO-MT's GRPO" in md
    assert report["counts"]["trajectories"] == report["counts"]["bandit_prompts"] == 0
