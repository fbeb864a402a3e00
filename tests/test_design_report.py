"""The design's pooled analysis (docs/preregistration.md) from synthetic run directories."""

from __future__ import annotations

import json

import pytest

from cobalt.common.errors import DataError
from cobalt.eval.repair import placebo_samples, placebo_table
from cobalt.eval.significance import pooled_paired_test
from cobalt.recipes.design.report import (
    describe_design_report,
    design_report,
    holm,
    write_design_report,
)

DESIGN = {"seeds": [0, 1, 2], "runs_dir": "runs/design", "repair": {"seeds": [0, 1, 2]}}
N = 20  # instances per set: unseen-program, seen-program (half seen_sft, half seen_grpo), out-of-family
SETS = {
    "unseen": [f"fam-add_two-{i:06d}" for i in range(N)],
    "seen": [f"fam-subtract-{i:06d}" for i in range(N)],
    "families": [f"fam-max_three-{i:06d}" for i in range(N)],
}


def solved(ids, first):
    """100 for the first ``first`` instances, else 0."""
    return {i: 100.0 * (n < first) for n, i in enumerate(ids)}


def scores(base=5, model=5):
    """``{set: (base scores, model scores)}`` at the last turn; turn 0 is 0 for every instance."""
    return {name: (solved(ids, base), solved(ids, model)) for name, ids in SETS.items()}


def rows(last: tuple[dict, dict], novelty=None) -> list[dict]:
    base, model = last
    out = []
    for n, i in enumerate(base):
        row = {"id": i, "base": [0.0, base[i]], "trained": [0.0, model[i]]}
        if novelty:
            row["novelty"] = novelty if novelty != "seen" else ("seen_sft" if n % 2 else "seen_grpo")
        out.append(row)
    return out


def write_run(root, arm, seed, last, drop=()):
    """report/report.json (and the done marker) of ``<arm>-seed<seed>`` with ``last`` (from :func:`scores`); ``drop``:
    ids the run lacks."""
    keep = lambda rs: [r for r in rs if r["id"] not in drop]  # noqa: E731
    report = {
        "arm": arm,
        "train_seed": seed,
        "heldout": {"per_instance": keep(rows(last["unseen"], "unseen") + rows(last["seen"], "seen"))},
        "heldout_families": {"per_instance": keep(rows(last["families"]))},
    }
    path = root / f"runs/design/{arm}-seed{seed}/report/report.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report))
    path.with_name("report.md").write_text("")  # written last: the run is done
    return path


def write_design(root, trained=15, control=3, seeds=(0, 1, 2), skip=()):
    """Every trained and control run: the trained model solves the first ``trained`` instances of
    every set, the control the first ``control``, the base the first 5."""
    for s in seeds:
        for arm, k in (("trained", trained), ("control", control)):
            if f"{arm}-seed{s}" not in skip:
                write_run(root, arm, s, scores(model=k))


def test_a_trained_arm_better_than_control_gives_the_claim_and_equal_arms_do_not(tmp_path):
    write_design(tmp_path / "better")
    report = design_report(DESIGN, tmp_path / "better")
    primary = report["primary"]
    assert report["complete"] and report["missing"] == []
    # 12 of 20 discordant, all in favour, in every seed: McNemar's 2 / 2**12
    assert primary["pooled"]["p_value"] == pytest.approx(2 / 2**12)
    assert primary["pooled"]["mean"] == pytest.approx(60.0) and primary["pooled"]["problems"] == N
    assert primary["claim"] is True
    assert [d["seed"] for d in primary["per_seed"]] == [0, 1, 2]
    assert primary["spread"] == {"mean": 60.0, "min": 60.0, "max": 60.0, "sd": 0.0}
    assert report["verdict"].startswith("Primary: trained − control on 20 unseen-program")
    assert "is made" in report["verdict"]

    write_design(tmp_path / "equal", trained=10, control=10)
    equal = design_report(DESIGN, tmp_path / "equal")
    assert equal["primary"]["pooled"]["p_value"] == 1.0 and equal["primary"]["claim"] is False
    assert "not detected at this power" in equal["verdict"]

    write_design(tmp_path / "worse", trained=3, control=15)
    worse = design_report(DESIGN, tmp_path / "worse")
    assert worse["primary"]["pooled"]["p_value"] < 0.05 and worse["primary"]["claim"] is False
    assert "the control is better" in worse["verdict"]


def test_three_identical_seeds_give_one_seeds_mcnemar_p(tmp_path):
    # trained solves instances 0..7 of the unseen set, control 6..9: 6 discordant for trained,
    # 2 for control; McNemar's exact p = 2 P(X <= 2), X ~ Binomial(8, 1/2) = 74 / 256
    ids = SETS["unseen"]
    trained = {i: 100.0 * (n < 8) for n, i in enumerate(ids)}
    control = {i: 100.0 * (6 <= n < 10) for n, i in enumerate(ids)}
    for s in (0, 1, 2):
        for arm, model in (("trained", trained), ("control", control)):
            write_run(tmp_path, arm, s, {**scores(), "unseen": (solved(ids, 5), model)})
    three = design_report(DESIGN, tmp_path)["primary"]
    one = design_report({**DESIGN, "seeds": [0]}, tmp_path)["primary"]
    assert one["pooled"]["p_value"] == pytest.approx(74 / 256)
    assert three["pooled"]["p_value"] == pytest.approx(one["pooled"]["p_value"])
    assert [d["p_value"] for d in three["per_seed"]] == pytest.approx([74 / 256] * 3)
    assert three["pooled"]["mean"] == pytest.approx(100 * (6 - 2) / 20)


def test_the_pooled_test_pairs_seed_s_of_trained_with_seed_s_of_control(tmp_path):
    ids = SETS["unseen"]
    models = {0: (15, 3), 1: (10, 10), 2: (8, 12)}  # (trained, control) solved per seed
    for s, (t, c) in models.items():
        write_run(tmp_path, "trained", s, {**scores(), "unseen": (solved(ids, 5), solved(ids, t))})
        write_run(tmp_path, "control", s, {**scores(), "unseen": (solved(ids, 5), solved(ids, c))})
    primary = design_report(DESIGN, tmp_path)["primary"]
    want = pooled_paired_test(
        [solved(ids, t) for t, _ in models.values()],
        [solved(ids, c) for _, c in models.values()],
        resamples=100_000,
        seed=0,
    )
    assert primary["pooled"]["p_value"] == pytest.approx(want.p_value)
    assert [d["mean"] for d in primary["per_seed"]] == pytest.approx([60.0, 0.0, -20.0])
    assert primary["spread"]["mean"] == pytest.approx(40 / 3)
    assert (primary["spread"]["min"], primary["spread"]["max"]) == (-20.0, 60.0)
    deviations = (60 - 40 / 3, 0 - 40 / 3, -20 - 40 / 3)  # sample sd of the seeds' means (n − 1)
    assert primary["spread"]["sd"] == pytest.approx((sum(d * d for d in deviations) / 2) ** 0.5)


def test_holm_adjusts_by_rank_and_keeps_the_order():
    # sorted: 0.005 x 5 = 0.025; 0.01 x 4 = 0.04; 0.03 x 3 = 0.09; 0.04 x 2 = 0.08 -> 0.09 (monotone);
    # 0.5 x 1 = 0.5
    assert holm([0.01, 0.04, 0.03, 0.005, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.025, 0.5])
    assert holm([0.3, 0.6]) == pytest.approx([0.6, 0.6])
    assert holm([0.9, 0.8, 0.7]) == pytest.approx([1.0, 1.0, 1.0])  # capped at 1


def test_the_five_secondary_comparisons_in_the_documents_order_with_holm(tmp_path):
    write_design(tmp_path, trained=15, control=3)
    secondary = design_report(DESIGN, tmp_path)["secondary"]
    assert [(c["first"], c["second"], c["group"]) for c in secondary] == [
        ("trained", "base", "unseen"),
        ("trained", "control", "seen"),
        ("trained", "base", "seen"),
        ("trained", "control", "out_of_family"),
        ("trained", "base", "out_of_family"),
    ]
    p = [c["pooled"]["p_value"] for c in secondary]
    assert [c["p_holm"] for c in secondary] == pytest.approx(holm(p))
    # trained − base: base solves 5, trained 15 of 20 (10 discordant); − control: 12 discordant
    assert p == pytest.approx([2 / 2**10, 2 / 2**12, 2 / 2**10, 2 / 2**12, 2 / 2**10])
    assert secondary[1]["pooled"]["problems"] == N  # seen_sft and seen_grpo instances together
    assert all(c["significant"] for c in secondary)


def test_turn_0_and_last_turn_means_per_arm_and_family(tmp_path):
    write_design(tmp_path, trained=15, control=3)
    report = design_report(DESIGN, tmp_path)
    unseen = report["pass_at_1"]["unseen"]
    per_seed = {"base": [25.0] * 3, "trained": [75.0] * 3, "control": [15.0] * 3}
    assert unseen["last"] == {
        "instances": N,
        "left_out": 0,
        "base": 25.0,
        "trained": 75.0,
        "control": 15.0,
        "per_seed": per_seed,
    }
    assert unseen["turn0"]["trained"] == 0.0
    families = {f["family"]: f for f in report["turn0_per_family"]}
    assert set(families) == {"add_two", "subtract", "max_three"} and families["add_two"]["instances"] == N


def test_a_missing_control_seed_gives_no_verdict_and_names_the_run(tmp_path):
    write_design(tmp_path, skip={"control-seed1"})
    report = design_report(DESIGN, tmp_path)
    assert not report["complete"] and report["missing"] == ["control-seed1"]
    assert report["primary"] is None and report["secondary"] == [] and report["pass_at_1"] is None
    assert report["verdict"].startswith("No verdict") and "control-seed1" in report["verdict"]
    states = {r["run"]: r["done"] for r in report["runs"]}
    assert states["control-seed1"] is False and states["trained-seed1"] is True
    text = describe_design_report(report)
    assert text.splitlines()[0] == report["verdict"]
    assert "| control-seed1 | missing |" in text
    write_design_report(DESIGN, tmp_path)
    assert not (tmp_path / "runs/design/design_pass_at_1.png").exists()  # no figure of a partial design


def test_an_instance_missing_from_one_run_is_left_out_and_counted(tmp_path):
    write_design(tmp_path)
    lost = SETS["unseen"][3]
    write_run(tmp_path, "control", 2, scores(model=3), drop={lost})
    report = design_report(DESIGN, tmp_path)
    primary = report["primary"]
    assert primary["pooled"]["problems"] == N - 1
    assert primary["left_out"] == 1 and primary["left_out_ids"] == [lost]
    assert [d["problems"] for d in primary["per_seed"]] == [N, N, N - 1]  # each seed's own pairs
    assert report["secondary"][0]["left_out"] == 0  # trained − base does not need the control run
    assert report["pass_at_1"]["unseen"]["turn0"]["left_out"] == 1


def test_malformed_reports_raise_a_data_error_naming_the_file_and_field(tmp_path):
    write_design(tmp_path)
    path = tmp_path / "runs/design/trained-seed1/report/report.json"
    report = json.loads(path.read_text())
    del report["heldout_families"]["per_instance"]
    path.write_text(json.dumps(report))
    with pytest.raises(DataError, match=r"trained-seed1/report/report\.json.*heldout_families\.per_instance"):
        design_report(DESIGN, tmp_path)

    report = json.loads(write_run(tmp_path, "trained", 1, scores(model=15)).read_text())
    report["heldout"]["per_instance"][4]["trained"] = "100"
    path.write_text(json.dumps(report))
    with pytest.raises(DataError, match=r"trained-seed1.*heldout\.per_instance\[4\]\.trained"):
        design_report(DESIGN, tmp_path)

    report["heldout"]["per_instance"][4]["trained"] = [0.0, 100.0]
    del report["heldout"]["per_instance"][0]["novelty"]
    path.write_text(json.dumps(report))
    with pytest.raises(DataError, match=r"heldout\.per_instance\[0\]\.novelty"):
        design_report(DESIGN, tmp_path)

    path.write_text(json.dumps({**report, "arm": "control"}))  # a run in the wrong directory
    with pytest.raises(DataError, match=r"trained-seed1.*'arm'"):
        design_report(DESIGN, tmp_path)

    path.write_text("{not json")
    with pytest.raises(DataError, match="trained-seed1"):
        design_report(DESIGN, tmp_path)


def write_repair(root, seed, records, complete=True):
    path = root / f"runs/design/repair-seed{seed}/repair.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    if complete:
        (path.parent / "repair.summary.json").write_text("{}")
    return path


def repair_record(pid, feedback, placebo, fresh):
    return {
        "id": pid,
        "arms": {
            "feedback": {"solved": [feedback]},
            "placebo": {"solved": [placebo]},
            "fresh": {"solved": [fresh]},
        },
    }


def test_the_repair_table_pools_the_complete_repair_files(tmp_path):
    write_design(tmp_path)
    first = write_repair(
        tmp_path,
        0,
        [
            repair_record("a", [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]),
            repair_record("b", [1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]),
        ],
    )
    second = write_repair(tmp_path, 1, [repair_record("a", [1, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0])])
    write_repair(tmp_path, 2, [repair_record("c", [1, 1, 1, 1], [0] * 4, [0] * 4)], complete=False)
    repair = design_report(DESIGN, tmp_path)["repair"]
    assert repair["missing"] == ["repair-seed2"]  # written but not finished: not used
    assert repair["files"] == [str(first), str(second)]
    assert repair["table"] == placebo_table(placebo_samples(first, second))
    # a: feedback 6 of 8 samples over the two seeds (75 %), b: 25 %; placebo a 1/8, b 1/4
    assert repair["table"]["problems"] == 2
    assert repair["table"]["rates"]["feedback"]["mean"] == pytest.approx(50.0)
    assert repair["table"]["rates"]["placebo"]["mean"] == pytest.approx((12.5 + 25) / 2)
    assert "Missing or incomplete repair runs: repair-seed2." in describe_design_report(
        design_report(DESIGN, tmp_path)
    )


def test_no_repair_file_says_so(tmp_path):
    write_design(tmp_path)
    repair = design_report(DESIGN, tmp_path)["repair"]
    assert repair["table"] is None and repair["missing"] == ["repair-seed0", "repair-seed1", "repair-seed2"]
    assert "No table" in describe_design_report(design_report(DESIGN, tmp_path))


def test_write_design_report_writes_json_and_markdown_verdict_first(tmp_path):
    write_design(tmp_path)
    md = write_design_report(DESIGN, tmp_path)
    assert md == tmp_path / "runs/design/design_report.md"
    saved = json.loads((tmp_path / "runs/design/design_report.json").read_text())
    assert saved["primary"]["claim"] is True
    text = md.read_text()
    assert text.splitlines()[0] == saved["verdict"] and "is made" in text.splitlines()[0]
    assert "## Secondary comparisons" in text and "| 1 | trained − base | unseen-program held-out |" in text
    figure = tmp_path / "runs/design/design_pass_at_1.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "(design_pass_at_1.png)" in text
    for s in (0, 1, 2):  # the control now as good: regenerated from the runs each time
        write_run(tmp_path, "control", s, scores(model=15))
    write_design_report(DESIGN, tmp_path)
    assert json.loads((tmp_path / "runs/design/design_report.json").read_text())["primary"]["claim"] is False


def test_runs_that_disagree_on_an_instances_program_novelty_raise(tmp_path):
    write_design(tmp_path)
    path = tmp_path / "runs/design/control-seed2/report/report.json"
    report = json.loads(path.read_text())
    report["heldout"]["per_instance"][0]["novelty"] = "seen_sft"  # an unseen-program instance elsewhere
    path.write_text(json.dumps(report))
    with pytest.raises(DataError, match=r"control-seed2.*'seen_sft' here but 'unseen'"):
        design_report(DESIGN, tmp_path)


def test_runs_with_different_base_scores_raise_naming_the_shared_base(tmp_path):
    write_design(tmp_path)
    write_run(tmp_path, "control", 1, scores(base=6, model=3))  # its base solved one more instance
    with pytest.raises(
        DataError, match=r"control-seed1.*\[0\.0, 100\.0\] here but \[0\.0, 0\.0\].*--base-run"
    ):
        design_report(DESIGN, tmp_path)
