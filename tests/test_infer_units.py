"""Inference and evaluation logic on the real sandbox, with a scripted model in place of the engine."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from infer_fixtures import FAILED, PID, ScriptedModel, answer, problem_records, programs

from cobalt.common.errors import DataError
from cobalt.common.jsonl import append_jsonl, load_jsonl, resume_appending, write_jsonl
from cobalt.common.passk import pass_at_1_per_turn, pass_at_k
from cobalt.common.prompts import ALL_PUBLIC_PASSED_MARKER
from cobalt.data.bandit import build_bandit_prompts
from cobalt.data.execute import Executor
from cobalt.data.trajectories import validate
from cobalt.eval.hidden import evaluate_record
from cobalt.eval.report import pass_at_1_figure, summarize, write_reports
from cobalt.infer.multi_turn import debug_problem
from cobalt.infer.records import load_problems, load_single_turn
from cobalt.infer.single_turn import Sampling, sample_problem
from cobalt.infer.stream import stream_records


# ------------------------------------------------------------------------------------ pass@k
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_is_the_probability_over_subsets(nck):
    n, c, k = nck
    subsets = list(itertools.combinations(range(n), k))
    exact = sum(any(i < c for i in s) for s in subsets) / len(subsets)
    assert math.isclose(pass_at_k(n, c, k), exact, abs_tol=1e-12)


def test_pass_at_1_per_turn_uses_the_actual_sample_count():
    # problem A: 2 samples, problem B: 4 samples; a sample counts only when every hidden test passes
    grids = [[[0.0, 1.0], [1.0, 1.0]], [[0.5, 1.0], [0.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]
    assert pass_at_1_per_turn(grids) == [
        pytest.approx(100 * (1 / 2 + 1 / 4) / 2),
        pytest.approx(100 * (1 + 3 / 4) / 2),
    ]


# ---------------------------------------------------------------------------------- records
def test_bad_problem_lines_name_file_line_and_field(tmp_path):
    good = problem_records([PID])[0]
    path = tmp_path / "p.jsonl"
    write_jsonl(path, [good, {**good, "id": "x", "test_cases": json.dumps({"inputs": ["1"], "outputs": []})}])
    with pytest.raises(DataError, match=r"p.jsonl:2: field 'test_cases'"):
        load_problems(str(path))
    write_jsonl(path, [good, good], overwrite=True)
    with pytest.raises(DataError, match=r"p.jsonl:2: field 'id': duplicate"):
        load_problems(str(path))
    write_jsonl(path, [{**good, "responses": ["a"], "exec_results": [{"passing": True}]}], overwrite=True)
    with pytest.raises(DataError, match=r"p.jsonl:1: field 'exec_results'"):
        load_single_turn(str(path), "public_test_cases")


# ------------------------------------------------------------------------- single and multi
def test_single_turn_runs_every_completion_on_all_tests(executor_factory):
    problem = problem_records([PID])[0]
    right, _ = programs(PID)
    model = ScriptedModel(lambda messages: answer(right))
    record = asyncio.run(sample_problem(problem, model, executor_factory(), Sampling(n=3, max_tokens=64)))
    n_tests = len(json.loads(problem["test_cases"])["inputs"])
    assert record["responses"] == [answer(right)] * 3
    assert [len(r["passing"]) for r in record["exec_results"]] == [n_tests] * 3
    assert all(all(r["passing"]) for r in record["exec_results"])
    assert model.calls[0][1] == 3 and model.calls[0][2]["max_tokens"] == 64


def test_multi_turn_writes_a_trajectory_the_bandit_builder_reads(executor_factory):
    problem = problem_records([PID])[0]
    right, wrong = programs(PID)

    def script(messages):  # a wrong program is fixed after failure feedback; a right one is kept
        fixed = any("did not pass" in m["content"] or right in m["content"] for m in messages[2:])
        return answer(right) if fixed else answer(wrong)

    single = {
        **problem,
        "responses": [answer(wrong), answer(right), answer(None)],
        "exec_results": [FAILED] * 3,
    }
    model = ScriptedModel(script)
    rec = asyncio.run(
        debug_problem(
            single,
            model,
            executor_factory(),
            Sampling(n=1),
            turns=2,
            public_field="public_test_cases",
            thinking=True,
        )
    )
    validate(rec)  # the docs/data.md contract
    assert len(rec["conversations"]) == 3 and all(len(c) == 2 + 2 * 3 for c in rec["conversations"])
    assert rec["public_pass_rates"][0][0] < 1 and rec["public_pass_rates"][0][1:] == [1.0, 1.0]
    assert rec["public_pass_rates"][1] == [1.0, 1.0, 1.0]
    assert ALL_PUBLIC_PASSED_MARKER in rec["conversations"][1][3]["content"]
    assert "<think>" not in rec["conversations"][0][2]["content"]  # thinking stripped
    assert rec["responses"][0][0] == answer(wrong)  # raw responses kept
    assert rec["turn0_results"] == [FAILED] * 3
    evaluated = asyncio.run(evaluate_record(rec, executor_factory(), "hidden_test_cases"))
    assert evaluated["all_pass_rates"][1] == [1.0, 1.0, 1.0]
    assert evaluated["all_pass_rates"][2][0] == 0.0  # no code block
    validate(evaluated, need_hidden=True)
    prompts, counts = build_bandit_prompts([evaluated], lambda messages: 100)
    assert counts.emitted == len(prompts) >= 2  # the turn-0 prompt and at least one partial context


def test_a_prompt_outgrowing_the_context_window_ends_that_conversation_not_the_run(executor_factory):
    # Regression: one held-out conversation past max_model_len stopped the whole quickstart.
    from cobalt.infer.llm import ContextWindowExceeded

    problem = problem_records([PID])[0]
    _, wrong = programs(PID)

    def script(messages):  # the window fits the statement and one feedback turn, no more
        if len(messages) > 4:  # system, statement, answer, feedback
            raise ContextWindowExceeded("prompt too long")
        return answer(wrong)

    model = ScriptedModel(script)
    single = {**problem, "responses": [answer(wrong)], "exec_results": [FAILED]}
    rec = asyncio.run(
        debug_problem(
            single,
            model,
            executor_factory(),
            Sampling(n=1),
            turns=3,
            public_field="public_test_cases",
            thinking=False,
        )
    )
    validate(rec)  # every turn is still there: K x (1 + turns)
    assert rec["responses"][0] == [answer(wrong), answer(wrong), "", ""]
    assert rec["public_pass_rates"][0][2:] == [0.0, 0.0]
    assert len(model.calls) == 2  # turn 1, then turn 2 was refused; turn 3 was not asked for

    model = ScriptedModel(lambda messages: (_ for _ in ()).throw(ContextWindowExceeded("too long")))
    record = asyncio.run(sample_problem(problem, model, executor_factory(), Sampling(n=2)))
    assert record["responses"] == ["", ""] and not any(any(r["passing"]) for r in record["exec_results"])


def test_an_execution_failure_is_recorded_not_dropped():
    class Broken:
        async def evaluate(self, code, tests):
            raise ConnectionError("evaluator gone")

    problem = problem_records([PID])[0]
    model = ScriptedModel(lambda m: answer("print(1)"))
    executor = Executor(Broken(), concurrency=2, timeout_s=5)
    record = asyncio.run(sample_problem(problem, model, executor, Sampling(n=2)))
    assert (
        record["exec_results"]
        == [{"passing": [False], "feedback": ["Exception: ConnectionError: evaluator gone"]}] * 2
    )
    assert executor.failures == 2


# --------------------------------------------------------------------------- stream / resume
def test_stream_resumes_repairs_a_torn_line_and_never_duplicates(tmp_path):
    out = tmp_path / "out.jsonl"
    append_jsonl(out, {"id": 1, "v": 1})
    with open(out, "a") as f:
        f.write('{"id": 2, "v"')  # a crash mid-write
    records = [{"id": i} for i in range(1, 6)]

    async def step(r):
        return {**r, "v": r["id"]}

    stats = asyncio.run(stream_records(records, step, str(out), concurrency=2, desc="t"))
    assert stats.skipped == 1 and stats.written == 4
    assert sorted(r["id"] for r in load_jsonl(out)) == [1, 2, 3, 4, 5]
    assert (tmp_path / "out.jsonl.torn").read_text() == '{"id": 2, "v"\n'
    assert resume_appending(out) == {1, 2, 3, 4, 5}


def test_stream_writes_into_a_directory_that_does_not_exist_yet(tmp_path):
    # python -m cobalt.eval.repair_run -o runs/design/repair-seed0/repair.jsonl failed here, after
    # its engine had started: FileNotFoundError on the first append
    out = tmp_path / "repair-seed0" / "repair.jsonl"

    async def step(r):
        return r

    stats = asyncio.run(stream_records([{"id": 1}, {"id": 2}], step, str(out), concurrency=2, desc="t"))
    assert stats.written == 2 and sorted(r["id"] for r in load_jsonl(out)) == [1, 2]


def test_stream_stops_at_the_first_failure_and_keeps_finished_records(tmp_path):
    out = tmp_path / "out.jsonl"

    async def step(r):
        if r["id"] == 3:
            raise RuntimeError("engine down")
        return r

    with pytest.raises(RuntimeError, match="engine down"):
        asyncio.run(stream_records([{"id": i} for i in range(1, 6)], step, str(out), concurrency=1, desc="t"))
    assert [r["id"] for r in load_jsonl(out)] == [1, 2]


# ----------------------------------------------------------------------------------- reports
def test_summary_table_and_plot(tmp_path):
    out = tmp_path / "eval.jsonl"
    write_jsonl(
        out,
        [
            {"id": 1, "all_pass_rates": [[0.0, 1.0], [1.0, 1.0]]},
            {"id": 2, "all_pass_rates": [[0.0, 0.0], [0.0, 1.0]]},
        ],
    )
    summary = summarize(str(out))
    assert summary["pass_at_1"] == [25.0, 75.0]
    assert summary["absolute_change"] == [0.0, 50.0] and summary["relative_change"] == [0.0, 200.0]
    paths = write_reports({"m": summary}, tmp_path / "eval")
    assert json.loads((tmp_path / "eval.summary.json").read_text())["pass_at_1"] == [25.0, 75.0]
    assert "| 1 | 75.00 | +50.00 |" in (tmp_path / "eval.summary.md").read_text()
    with open(paths["plot"], "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_plot_counts_turns_in_whole_numbers_and_percentages_from_zero():
    import matplotlib.pyplot as plt

    flat = {"base": {"pass_at_1": [0.0] * 5}, "trained": {"pass_at_1": [0.0] * 5}}
    ax = pass_at_1_figure(flat).axes[0]
    assert list(ax.get_xticks()) == [0, 1, 2, 3, 4]  # no "turn 0.5"
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 0  # a 0 % curve sits on the axis
    high = pass_at_1_figure({"m": {"pass_at_1": [50.0, 100.0]}}).axes[0]
    assert high.get_ylim() == (0, 105.0)
    plt.close("all")


def test_engine_errors_transient_ones_are_retried_and_context_overflow_says_what_to_change(monkeypatch):
    import litellm

    from cobalt.infer.llm import ChatModel, ContextWindowExceeded, EngineError

    model = ChatModel("openai/m", "http://127.0.0.1:9/v1", backoff_s=0.0)
    assert logging.getLogger("LiteLLM").level == logging.WARNING  # no log line per request
    calls = []

    async def overflow(**kwargs):
        calls.append(kwargs)
        raise litellm.ContextWindowExceededError("prompt too long", model="m", llm_provider="openai")

    monkeypatch.setattr(litellm, "acompletion", overflow)
    with pytest.raises(ContextWindowExceeded, match="max_model_len"):
        asyncio.run(model.complete([{"role": "user", "content": "hi"}]))
    assert len(calls) == 1 and model.context_exceeded == 1  # not transient: no retry

    async def down(**kwargs):
        calls.append(kwargs)
        raise litellm.APIConnectionError("refused", llm_provider="openai", model="m")

    calls.clear()
    monkeypatch.setattr(litellm, "acompletion", down)
    model.max_retries = 2
    with pytest.raises(EngineError, match="gave up after 3 attempts"):
        asyncio.run(model.complete([{"role": "user", "content": "hi"}]))
    assert len(calls) == 3 and model.activity.in_flight == 0


def test_a_busy_endpoint_passes_the_probe_and_a_closed_port_fails_it(caplog):
    """The probe before a chain's work: an engine that takes the request but answers late (busy
    with another chain's requests) is reachable, with a warning; nothing listening is not."""
    from cobalt.infer.llm import ChatModel, EngineError, check_reachable
    from cobalt.serve.cluster import free_port

    async def main():
        async def hold(reader, writer):  # takes the request, never answers
            await asyncio.sleep(30)
            writer.close()

        server = await asyncio.start_server(hold, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            busy = ChatModel("openai/warm", f"http://127.0.0.1:{port}/v1")
            with caplog.at_level(logging.WARNING, logger="cobalt.infer"):
                await check_reachable(busy, timeout_s=1.0)
        assert "did not answer a probe in 1 s: busy; going on" in caplog.text
        closed = ChatModel("openai/warm", f"http://127.0.0.1:{free_port()}/v1")
        with pytest.raises(EngineError, match="is not reachable"):
            await check_reachable(closed, timeout_s=1.0)

    asyncio.run(main())
