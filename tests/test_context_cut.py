"""A turn that no longer fits the context window is recorded as cut (``context_cut``) by single-
and multi-turn inference, survives the hidden-test evaluation, and is counted per turn in the
paper chain's report beside Pass@1 (real sandbox; a scripted model in place of the engine)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from infer_fixtures import FAILED, PID, ScriptedModel, answer, problem_records, programs

from cobalt.common.errors import DataError
from cobalt.common.jsonl import write_jsonl
from cobalt.data.trajectories import validate
from cobalt.eval.hidden import evaluate_record
from cobalt.infer.llm import ContextWindowExceeded
from cobalt.infer.multi_turn import debug_problem
from cobalt.infer.single_turn import Sampling, sample_problem
from cobalt.recipes.paper.report import write_paper_report


def window(limit: int):
    """A model whose context holds ``limit`` messages: longer prompts are refused."""
    _, wrong = programs(PID)

    def script(messages):
        if len(messages) > limit:
            raise ContextWindowExceeded("prompt too long")
        return answer(wrong)

    return ScriptedModel(script)


def debugged(executor_factory, limit: int, turns: int = 3) -> dict:
    problem = problem_records([PID])[0]
    _, wrong = programs(PID)
    single = {**problem, "responses": [answer(wrong)] * 2, "exec_results": [FAILED] * 2}
    return asyncio.run(debug_problem(single, window(limit), executor_factory(), Sampling(n=1), turns=turns,
                                     public_field="public_test_cases", thinking=False))  # fmt: skip


def test_turns_past_the_context_window_are_recorded_as_cut(executor_factory):
    rec = validate(debugged(executor_factory, limit=4))  # statement + one feedback turn fit
    assert rec["context_cut"] == [[False, False, True, True]] * 2
    assert rec["responses"][0][2:] == ["", ""]
    assert validate(debugged(executor_factory, limit=100))["context_cut"] == [[False] * 4] * 2
    problem = problem_records([PID])[0]
    single = asyncio.run(sample_problem(problem, window(1), executor_factory(), Sampling(n=2)))
    assert single["context_cut"] == [True, True] and single["responses"] == ["", ""]
    with pytest.raises(DataError, match="context_cut"):
        validate({**rec, "context_cut": [[False, 1, True, True]] * 2})


def test_a_context_cut_turn_is_counted_per_turn_in_the_report_beside_pass_at_1(executor_factory, tmp_path):
    for model, limit in (("base", 4), ("trained", 6)):  # base loses turns 2 and 3, trained turn 3
        record = debugged(executor_factory, limit)
        evaluated = asyncio.run(evaluate_record(record, executor_factory(), "hidden_test_cases"))
        write_jsonl(tmp_path / f"{model}.jsonl", [evaluated])
    run = SimpleNamespace(root=tmp_path / "run", cfg=SimpleNamespace(paper={}, rehearse=False),
                          state={"GRPO": {"seconds": 1.0}})  # fmt: skip
    bases = {"eval_base": tmp_path / "base.jsonl", "eval_base_dev": tmp_path / "base.jsonl"}
    trained = {"eval_trained": tmp_path / "trained.jsonl", "eval_trained_dev": tmp_path / "trained.jsonl"}
    md = write_paper_report(run, "p", bases, trained, seconds=1.0).read_text()
    lcb = md.split("## LiveCodeBench (test6)", 1)[1].split("**Verdict.**", 1)[0]
    assert "**Turns cut by the context window**" in lcb
    assert "- base: 0, 0, 2, 2 (turn 0 onwards; of 2 conversations)" in lcb
    assert "- trained: 0, 0, 0, 2 (turn 0 onwards; of 2 conversations)" in lcb
    report = json.loads((run.root / "report/report.json").read_text())
    assert report["livecodebench"]["context_cut"]["base"]["per_turn"] == [0, 0, 2, 2]
