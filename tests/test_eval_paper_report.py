"""The paper chain's report on hand-made evaluation files (fast; the whole chain writing it is the
slow rehearsal test in tests/test_reproduce_paper.py)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from cobalt.eval.paper_report import write_paper_report
from cobalt.jsonl import write_jsonl


def evaluated(path, grids):
    """Records as the evaluation writes them: K conversations x (1 + T) hidden pass rates."""
    write_jsonl(path, [{"id": f"p{i}", "all_pass_rates": grid} for i, grid in enumerate(grids)])
    return path


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
    files = {f"eval_{m}{s}": evaluated(tmp_path / f"{m}{s}.jsonl", [[[0.0, 1.0]]]) for m in ("base", "trained")
             for s in ("", "_dev")}  # fmt: skip
    run = SimpleNamespace(root=tmp_path / "run", cfg=SimpleNamespace(paper={}, rehearse=False),
                          state={"GRPO": {"seconds": 1.0}})  # fmt: skip
    (run.root / "data").mkdir(parents=True)
    overlap = {"eval_set": "LiveCodeBench", "train_id": "t7", "eval_id": "lcb-3", "how": "statement"}
    (run.root / "data/overlap.json").write_text(json.dumps({"allowed": True, "overlaps": [overlap]}))
    bases = {k: v for k, v in files.items() if "base" in k}
    trained = {k: v for k, v in files.items() if "trained" in k}
    first = write_paper_report(run, "p", bases, trained, seconds=1.0).read_text().splitlines()[:4]
    assert any("--allow_overlap" in line and "t7 = LiveCodeBench lcb-3" in line for line in first), first
    (run.root / "data/overlap.json").write_text(json.dumps({"allowed": False, "overlaps": []}))
    md = write_paper_report(run, "p", bases, trained, seconds=1.0).read_text()
    assert "allow_overlap" not in md
