"""The second design's analysis (docs/preregistration_ft.md) from synthetic run directories."""

from __future__ import annotations

import json

import pytest

from cobalt.common.errors import DataError
from cobalt.recipes.design.design import load_design, main
from cobalt.recipes.design.report_ft import design_report, group_ids, read_seeds

N = 24
HELDOUT = [f"fam-add_two-{400000 + i}" for i in range(N)]
FAMILIES = [f"fam-acronym-{600000 + i}" for i in range(N // 2)] + [
    f"fam-word_count-{600000 + i}" for i in range(N // 2)
]
DESIGN = {**load_design("design_ft"), "repair": {"arms": ["cobalt", "grpo_mt"], "seeds": [0, 1, 2]}}


def grid(last: float) -> list[float]:
    """Pass@1 % at turns 0..3: unsolved until the last turn, then ``last``."""
    return [0.0, 0.0, 0.0, last]


def write_run(root, arm, seed, sft=4, trained=4, sha="start-0", labels=None, steps=3):
    """report/report.json of ``<arm>-seed<seed>``: SFT solves the first ``sft`` instances of each set
    at the last turn, the trained model the first ``trained``."""
    run = root / f"runs/design_ft/{arm}-seed{seed}"
    report = {
        "arm": "trained",
        "train_seed": seed,
        "start_model": {"model": str(run / "models/warm"), "sha256": sha},
        "heldout": {
            "per_instance": [
                {
                    "id": i,
                    "base": grid(100.0 * (n < sft)),
                    "trained": grid(100.0 * (n < trained)),
                    "novelty": "unseen",
                }
                for n, i in enumerate(HELDOUT)
            ]
        },
        "heldout_families": {
            "per_instance": [
                {"id": i, "base": grid(100.0 * (n < sft)), "trained": grid(100.0 * (n < trained))}
                for n, i in enumerate(FAMILIES)
            ]
        },
        "counts": {"bandit_prompts": 200 if arm == "cobalt" else 0},
        "grpo": [
            {"step": s, "evaluator_requests": 16 if arm == "cobalt" else 40} for s in range(1, steps + 1)
        ],
        "stages": {"GRPO": 120.0, "trajectories: single-turn": 50.0, "trajectories: multi-turn": 50.0},
        "stages_machine_cpu_s": {"GRPO": 200.0},
    }
    (run / "report").mkdir(parents=True, exist_ok=True)
    (run / "report/report.json").write_text(json.dumps(report))
    (run / "report/report.md").write_text("")  # written last: the run is done
    if arm == "cobalt":
        labels = labels or {}
        ids = {
            "heldout": {i: {"form": "unseen", "behaviour": labels.get(i, "unseen")} for i in HELDOUT},
            "heldout_families": {
                i: {"form": "unseen", "behaviour": labels.get(i, "unseen")} for i in FAMILIES
            },
        }
        (run / "novelty_by_behaviour.json").write_text(json.dumps(ids))
    return run


def write_design(root, cobalt=16, grpo_mt=10, sft=4, labels=None):
    for k in (0, 1, 2):
        write_run(root, "cobalt", k, sft=sft, trained=cobalt, sha=f"start-{k}", labels=(labels or {}).get(k))
        write_run(root, "grpo_mt", k, sft=sft, trained=grpo_mt, sha=f"start-{k}")


def test_cobalt_better_than_its_start_gives_the_claim_with_the_secondary_tests_and_costs(tmp_path):
    write_design(tmp_path)
    report = design_report(DESIGN, tmp_path)
    p = report["primary"]
    assert p["claim"] and p["pooled"]["problems"] == N and p["pooled"]["mean"] == pytest.approx(100 * 12 / N)
    assert report["verdict"].startswith(
        "Primary: SFT + COBALT − SFT on 24 held-out instances unseen by behaviour"
    )
    first = report["secondary"][0]  # COBALT − GRPO-MT: +25 points, far outside ±5
    assert (first["first"], first["second"], first["group"]) == ("cobalt", "grpo_mt", "primary")
    assert first["pooled"]["mean"] == pytest.approx(25.0) and not first["matches"]
    assert [c["p_holm"] >= c["pooled"]["p_value"] for c in report["secondary"]] == [True] * 5
    assert report["pass_at_1"]["primary"]["sft"] == [[0.0, 0.0, 0.0, pytest.approx(100 * 4 / N)]] * 3
    cost = report["cost"]
    assert cost["cobalt"][0]["examples"] == 3 * 4 and cost["cobalt"][0]["per_example_s"] == pytest.approx(
        10.0
    )
    assert cost["grpo_mt"][0]["per_example_requests"] == pytest.approx(40 / 4)
    assert cost["cobalt"][0]["trajectories"]["per_prompt_s"] == pytest.approx(100 / 200)


def test_equal_arms_match_and_give_no_claim(tmp_path):
    write_design(tmp_path, cobalt=4, grpo_mt=4)
    report = design_report(DESIGN, tmp_path)
    assert not report["primary"]["claim"] and report["verdict"].endswith("not detected at this power.")
    assert report["secondary"][0]["matches"]


def test_the_primary_set_is_unseen_by_behaviour_for_every_seed_and_a_solved_family_is_left_out(tmp_path):
    labels = {
        1: {HELDOUT[0]: "seen_training", FAMILIES[0]: "seen_training"},
        2: {HELDOUT[1]: "seen_training"},
    }
    write_design(tmp_path, labels=labels)
    data = read_seeds(tmp_path / "runs/design_ft", [0, 1, 2])
    groups = group_ids(data)
    assert groups["primary"] == sorted(HELDOUT[2:])
    assert groups["families_dropped"] == ["acronym"] and groups["families_kept"] == ["word_count"]
    assert groups["out_of_family"] == sorted(FAMILIES[N // 2 :])
    assert design_report(DESIGN, tmp_path)["primary"]["pooled"]["problems"] == N - 2


def test_a_grpo_mt_run_from_other_weights_or_sft_scores_is_refused_naming_the_field(tmp_path):
    write_design(tmp_path)
    write_run(tmp_path, "grpo_mt", 1, sha="another start")
    with pytest.raises(
        DataError, match=r"grpo_mt-seed1/report/report\.json: field 'start_model\.sha256': seed 1"
    ):
        design_report(DESIGN, tmp_path)
    write_run(tmp_path, "grpo_mt", 1, sft=5, sha="start-1")
    with pytest.raises(
        DataError,
        match=r"field 'heldout\.per_instance\.base': instance 'fam-add_two-400004': SFT scores differ",
    ):
        design_report(DESIGN, tmp_path)


def test_the_report_command_names_the_missing_runs_before_any_verdict(tmp_path, capsys):
    write_run(tmp_path, "cobalt", 0)
    assert main(["--report", "--config", "design_ft", "--root", str(tmp_path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("No verdict") and "grpo_mt-seed0" in first and "cobalt-seed0" not in first
    assert (tmp_path / "runs/design_ft/design_report.md").read_text().splitlines()[0] == first
    write_design(tmp_path)
    assert main(["--report", "--config", "design_ft", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Primary: SFT + COBALT − SFT") and "| 1 | cobalt − grpo_mt |" in out
    assert (tmp_path / "runs/design_ft/design_ft_pass_at_1.png").read_bytes()[:4] == b"\x89PNG"


def test_the_figure_has_one_tick_per_feedback_turn_and_pass_at_1_from_zero(tmp_path):
    from cobalt.recipes.design.report_ft import figure

    write_design(tmp_path)
    report = design_report(load_design("design_ft"), tmp_path)
    turns = len(next(iter(report["pass_at_1"]["primary"].values()))[0])
    for ax in figure(report).axes:
        assert list(ax.get_xticks()) == list(range(turns)) and ax.get_ylim()[0] == 0


def test_kept_records_give_the_same_analysis_and_are_never_overwritten(tmp_path, capsys):
    """--keep copies what the analysis reads (a session's machine keeps nothing else); --report on
    the records gives the report of the runs; a repair file is kept without its responses' text."""
    runs, records = tmp_path / "checkout", tmp_path / "records"
    write_design(runs)
    repair = runs / "runs/design_ft/repair_cobalt-seed0"
    repair.mkdir(parents=True)
    sample = {"id": HELDOUT[0], "arms": {"feedback": {"responses": [["long text"]], "solved": [[1]]}}}
    (repair / "repair.jsonl").write_text(json.dumps(sample) + "\n")
    (repair / "repair.summary.json").write_text("{}")
    (runs / "runs/design_ft/cobalt-seed0/models").mkdir()  # not kept: only what the analysis reads
    args = ["--config", "design_ft", "--root", str(runs), "--records", str(records)]
    assert main(["--keep", *args]) == 0
    assert "kept 17 files" in capsys.readouterr().out  # 6 runs x (report, done marker), 3 labels, 2 repair
    kept = records / "runs/design_ft"
    assert not (kept / "cobalt-seed0/models").exists()
    assert json.loads((kept / "repair_cobalt-seed0/repair.jsonl").read_text())["arms"]["feedback"] == {
        "solved": [[1]]
    }
    ours = design_report(DESIGN, runs)
    theirs = design_report(DESIGN, records)
    assert theirs["primary"]["pooled"] == ours["primary"]["pooled"] and theirs["cost"] == ours["cost"]
    assert main(["--keep", *args]) == 0 and "kept 0 files" in capsys.readouterr().out  # idempotent
    write_run(runs, "grpo_mt", 2, trained=3, sha="start-2")  # a run changed after it was kept
    assert main(["--keep", *args]) == 2
    assert "grpo_mt-seed2/report/report.json is kept already with other content" in capsys.readouterr().err


def test_the_pilots_curve_is_kept_as_pass_rate_grids_and_read_back(tmp_path, capsys):
    from test_design import write_eval

    runs, records = tmp_path / "checkout", tmp_path / "records"
    pilot = runs / "runs/design_ft_pilot"
    for arm in ("cobalt", "grpo_mt"):
        for tag, n in (
            ("eval_base", 1),
            ("eval_trained_step10", 2),
            ("eval_trained_step20", 3),
            ("eval_trained_step30", 3),
            ("eval_trained", 2),
        ):
            write_eval(pilot / arm / tag / "eval.jsonl", [i < n for i in range(4)])
    assert main(["--keep", "--config", "design_ft", "--root", str(runs), "--records", str(records)]) == 0
    capsys.readouterr()
    kept = json.loads(
        (records / "runs/design_ft_pilot/cobalt/eval_base/eval.jsonl").read_text().splitlines()[0]
    )
    assert set(kept) == {"id", "all_pass_rates"}
    assert main(["--pilot", "--config", "design_ft", "--root", str(records)]) == 0
    assert "dose: 20 steps" in capsys.readouterr().out
