"""The paper chain's report on hand-made evaluation files (fast; the whole chain writing it is the
slow rehearsal test in tests/test_reproduce_paper.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from cobalt.common.jsonl import write_jsonl
from cobalt.recipes.paper.report import write_paper_report


def evaluated(path, grids):
    """Records as the evaluation writes them: K conversations x (1 + T) hidden pass rates."""
    write_jsonl(path, [{"id": f"p{i}", "all_pass_rates": grid} for i, grid in enumerate(grids)])
    return path


PAPER_SETTING = {
    "split": "released",
    "model": "Qwen/Qwen3-8B",
    "paper_model": "Qwen/Qwen3-8B",
    "rehearsal": False,
    "eval_samples": 16,
    "eval_turns": 8,
    "trajectory_samples": 16,
    "trajectory_turns": 2,
    "context": None,
    "max_problems": None,
    "perturbed_mix": True,
    "perturbed_ratio": 0.25,
    "overlaps": 0,
}


def setting(run, **changes):
    (run.root / "data").mkdir(parents=True, exist_ok=True)
    (run.root / "data/setting.json").write_text(json.dumps(PAPER_SETTING | changes))


def report_of(tmp_path, **changes):
    """The report of a run whose setting is the paper's but for ``changes``: base 50 % at every
    turn, trained 50 % then 100 %."""
    files = {}
    for suffix in ("", "_dev"):
        files[f"eval_base{suffix}"] = evaluated(
            tmp_path / f"base{suffix}.jsonl", [[[0.0, 0.0], [1.0, 1.0]]] * 4
        )
        files[f"eval_trained{suffix}"] = evaluated(
            tmp_path / f"trained{suffix}.jsonl", [[[0.0, 1.0], [1.0, 1.0]]] * 4
        )
    paper = {"lcb_base": 30.0, "lcb_cobalt": 40.0, "taco_dev": 50.0}
    run = SimpleNamespace(
        root=tmp_path / "run",
        cfg=SimpleNamespace(paper={"p": paper}, rehearse=False),
        state={"GRPO": {"seconds": 1.0}},
    )
    setting(run, **changes)
    bases = {k: v for k, v in files.items() if "base" in k}
    trained = {k: v for k, v in files.items() if "trained" in k}
    return write_paper_report(run, "p", bases, trained, seconds=1.0).read_text()


def test_each_problem_set_has_pass_at_1_beside_the_paper_and_its_repair_rates(tmp_path):
    # base: 2 conversations per problem, never repairs; trained: repairs every failure at turn 1
    base = [[[0.0, 0.0], [1.0, 1.0]] for _ in range(6)]
    trained = [[[0.0, 1.0], [1.0, 1.0]] for _ in range(6)]
    files = {}
    for suffix in ("", "_dev"):
        files[f"eval_base{suffix}"] = evaluated(tmp_path / f"base{suffix}.jsonl", base)
        files[f"eval_trained{suffix}"] = evaluated(tmp_path / f"trained{suffix}.jsonl", trained)
    paper = {"lcb_base": 30.0, "lcb_cobalt": 40.0, "taco_dev": 50.0}
    run = SimpleNamespace(
        root=tmp_path / "run",
        cfg=SimpleNamespace(paper={"profile_x": paper}, rehearse=False),
        state={"GRPO": {"seconds": 12.0}, "commands": {"grpo": "launch"}},
    )
    setting(run)  # the paper's setting in every aspect: its figures stand beside this run's
    bases = {k: v for k, v in files.items() if "base" in k}
    trained_files = {k: v for k, v in files.items() if "trained" in k}
    md = write_paper_report(run, "profile_x", bases, trained_files, seconds=1.0).read_text()
    report = json.loads((run.root / "report/report.json").read_text())

    assert "| LiveCodeBench (test6) | trained | 40.0 | 50.0 | 100.0 |" in md
    assert "| TACO-dev, perturbed public tests | base |  | 50.0 | 50.0 |" in md
    for key, title in (
        ("livecodebench", "LiveCodeBench (test6)"),
        ("taco_dev", "TACO-dev, perturbed public tests"),
    ):
        (trained_row,) = report[key]["repair"]["trained"]
        (base_row,) = report[key]["repair"]["base"]
        assert trained_row["failed"] == base_row["failed"] == 6
        assert trained_row["repair"]["mean"] == 100.0 and base_row["repair"]["mean"] == 0.0
        # the resample: the other conversation of each problem solved turn 0
        assert trained_row["resample"]["mean"] == 100.0
        assert f"## Repair rate on {title} problems (hidden tests)" in md
    assert (run.root / "report/livecodebench.png").is_file() and "| **all stages** | 12 |" in md


def test_a_run_that_trained_on_evaluation_problems_says_so_in_the_reports_first_lines(tmp_path):
    files = {
        f"eval_{m}{s}": evaluated(tmp_path / f"{m}{s}.jsonl", [[[0.0, 1.0]]])
        for m in ("base", "trained")
        for s in ("", "_dev")
    }
    run = SimpleNamespace(
        root=tmp_path / "run", cfg=SimpleNamespace(paper={}, rehearse=False), state={"GRPO": {"seconds": 1.0}}
    )
    (run.root / "data").mkdir(parents=True)
    overlap = {"eval_set": "LiveCodeBench", "train_id": "t7", "eval_id": "lcb-3", "how": "statement"}
    (run.root / "data/overlap.json").write_text(json.dumps({"allowed": True, "overlaps": [overlap]}))
    bases = {k: v for k, v in files.items() if "base" in k}
    trained = {k: v for k, v in files.items() if "trained" in k}
    first = write_paper_report(run, "p", bases, trained, seconds=1.0).read_text().splitlines()[:4]
    assert any("--allow-overlap" in line and "t7 = LiveCodeBench lcb-3" in line for line in first), first
    (run.root / "data/overlap.json").write_text(json.dumps({"allowed": False, "overlaps": []}))
    md = write_paper_report(run, "p", bases, trained, seconds=1.0).read_text()
    assert "allow_overlap" not in md


def test_without_the_perturbed_mix_the_report_says_so_and_leaves_out_the_perturbed_training_figure(tmp_path):
    md = report_of(tmp_path, perturbed_mix=False)
    assert "**No perturbed training rows**" in md and "| mix |" in md
    assert "| TACO-dev, perturbed public tests | trained | — (mix differ) |" in md
    assert "| LiveCodeBench (test6) | trained | 40.0 | 50.0 | 100.0 |" in md  # COBALT's LCB figure stays
    mixed = report_of(tmp_path / "mixed")
    assert "| TACO-dev, perturbed public tests | trained | 50.0 | 50.0 | 100.0 |" in mixed
    assert "No perturbed training rows" not in mixed


def test_the_comparability_section_lists_each_difference_and_only_matching_figures_stand_beside(tmp_path):
    md = report_of(tmp_path, split="deterministic", context=16384, eval_turns=4)
    table = md.split("## Comparability", 1)[1].split("## Beside the paper", 1)[0]
    for aspect in ("split", "context", "turns"):
        assert f"| {aspect} |" in table
    for aspect in ("model", "samples", "mix", "problems", "training"):
        assert f"| {aspect} |" not in table
    assert "its TACO-dev is not the paper's" in table
    assert "| LiveCodeBench (test6) | base | — (turns, context differ) |" in md
    assert "| TACO-dev, perturbed public tests | trained | — (turns, context, split differ) |" in md
    same = report_of(tmp_path / "same")
    assert (
        "its numbers stand beside the paper's" in same and "| LiveCodeBench (test6) | base | 30.0 |" in same
    )
