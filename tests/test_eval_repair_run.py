"""The placebo repair runner (python -m cobalt.eval.repair_run) on the real sandbox, with a scripted
model in place of the engine: the arms' prompts, pairing by problem, only turn-0 failures, the
output placebo_table reads, resume, bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from infer_fixtures import FAILED, PID, ScriptedModel, answer, problem_records, programs

from cobalt.common.errors import DataError
from cobalt.common.jsonl import load_jsonl, write_jsonl
from cobalt.common.prompts import FEEDBACK_HEADER, initial_messages, placebo_message
from cobalt.eval import repair_run
from cobalt.eval.hidden import evaluate_record
from cobalt.eval.repair import REPAIR_ARMS, RepairDecoding, placebo_samples, placebo_table
from cobalt.infer.multi_turn import debug_problem
from cobalt.infer.runtime import Runtime
from cobalt.infer.single_turn import Sampling

DECODING = RepairDecoding(temperature=0.6, top_p=0.95, max_tokens=64, samples=4)


def arm_of(messages: list[dict]) -> str:
    """Which arm a prompt is, from its last message alone."""
    last = messages[-1]["content"]
    if len(messages) == 2:
        return "fresh"
    return "placebo" if last == placebo_message() else "feedback"


def by_arm(right: str, wrong: str, solves=("feedback",)):
    """A script: a right program in the arms of ``solves``, a wrong one elsewhere."""
    return lambda messages: answer(right if arm_of(messages) in solves else wrong)


def evaluated(executor_factory, turn0: dict[str, list[bool]]) -> list[dict]:
    """Evaluated one-feedback-turn records of the embedded problem, one per id: its conversations'
    turn-0 answers right (True) or wrong (False), as the quickstart's chain makes them."""
    problem = problem_records([PID])[0]
    right, wrong = programs(PID)
    model = ScriptedModel(lambda messages: answer(wrong))  # the feedback turn: wrong again
    out = []
    for pid, rights in turn0.items():
        single = {
            **problem,
            "id": pid,
            "responses": [answer(right if r else wrong) for r in rights],
            "exec_results": [FAILED] * len(rights),
        }
        rec = asyncio.run(
            debug_problem(
                single,
                model,
                executor_factory(),
                Sampling(n=1),
                turns=1,
                public_field="public_test_cases",
                thinking=True,
            )
        )
        out.append(asyncio.run(evaluate_record(rec, executor_factory(), "hidden_test_cases")))
    return out


def test_the_arms_prompts_differ_exactly_as_designed(executor_factory):
    (record,) = evaluated(executor_factory, {"p": [False]})
    right, wrong = programs(PID)
    model = ScriptedModel(by_arm(right, wrong))
    asyncio.run(repair_run.repair_record(record, model, executor_factory(), DECODING, "hidden_test_cases"))
    prompts = {arm_of(messages): messages for messages, _, _ in model.calls}
    assert len(model.calls) == 3 and set(prompts) == set(REPAIR_ARMS)
    conversation = record["conversations"][0]
    # feedback: the very turn the self-debugging evaluation showed (the real public-test feedback)
    assert prompts["feedback"] == conversation[:4]
    assert FEEDBACK_HEADER in prompts["feedback"][3]["content"]
    # placebo: the same prefix and failed answer, then the placebo turn with no test detail
    assert prompts["placebo"] == [*conversation[:3], {"role": "user", "content": placebo_message()}]
    # fresh: the turn-0 prompt again
    assert prompts["fresh"] == conversation[:2] == initial_messages(record["instruction"])
    # one decoding for all three, samples answers each
    assert {n for _, n, _ in model.calls} == {4}
    assert all(s == {"temperature": 0.6, "top_p": 0.95, "max_tokens": 64} for _, _, s in model.calls)


def test_only_turn_0_failures_are_repaired_and_samples_are_judged_on_hidden_tests(executor_factory):
    records = evaluated(executor_factory, {"solved": [True], "mixed": [True, False, False]})
    right, wrong = programs(PID)
    model = ScriptedModel(by_arm(right, wrong, solves=("feedback", "fresh")))
    failing = [r for r in records if repair_run.turn0_failures(r)]
    assert [r["id"] for r in failing] == ["mixed"]
    out = asyncio.run(
        repair_run.repair_record(failing[0], model, executor_factory(), DECODING, "hidden_test_cases")
    )
    assert out["failed_conversations"] == [1, 2]  # conversation 0 passed at turn 0
    assert len(model.calls) == 2 * 3  # three arms per failure
    for arm in REPAIR_ARMS:
        assert [len(row) for row in out["arms"][arm]["solved"]] == [4, 4]
    assert out["arms"]["feedback"]["solved"] == [[1] * 4] * 2
    assert out["arms"]["fresh"]["hidden_pass_rates"] == [[1.0] * 4] * 2
    assert out["arms"]["placebo"]["solved"] == [[0] * 4] * 2
    assert all(r < 1 for row in out["arms"]["placebo"]["hidden_pass_rates"] for r in row)
    assert out["arms"]["placebo"]["responses"][0] == [answer(wrong)] * 4


# ----------------------------------------------------------------------------- the command line
@pytest.fixture
def engine(monkeypatch, executor_factory):
    """The command's runtime with the scripted model and the local sandbox (no Ray, no engine)."""
    from cobalt.infer import cli

    right, wrong = programs(PID)
    model = ScriptedModel(by_arm(right, wrong))
    model.context_exceeded = 0
    evaluator = executor_factory().evaluator

    @contextlib.contextmanager
    def runtime(**kwargs):
        yield Runtime(evaluator=evaluator, model=model)

    async def reachable(model):
        return None

    monkeypatch.setattr(cli, "open_runtime", runtime)
    monkeypatch.setattr(cli, "check_reachable", reachable)
    return model


def run(argv: list) -> int:
    with pytest.raises(SystemExit) as stop:
        repair_run.main([str(a) for a in argv])
        raise SystemExit(0)
    return stop.value.code


def command(inputs, out, *extra) -> list:
    return ["-i", *inputs, "-o", out, "--model", "scripted", "--evaluator", "local",
            "--temperature", 0.6, "--top_p", 0.95, "--max_tokens", 64, *extra]  # fmt: skip


def test_the_command_writes_what_placebo_table_reads_and_resumes(tmp_path, executor_factory, engine, capsys):
    records = evaluated(executor_factory, {"a": [False], "b": [True], "c": [False]})
    heldout, families = tmp_path / "eval.jsonl", tmp_path / "families.jsonl"
    write_jsonl(heldout, records[:2])
    write_jsonl(families, records[2:])
    out = tmp_path / "repair/repair.jsonl"
    out.parent.mkdir()
    # an interrupted run: problem a written, a torn line after it
    first = asyncio.run(
        repair_run.repair_record(records[0], engine, executor_factory(), DECODING, "hidden_test_cases")
    )
    out.write_text(json.dumps(first) + "\n" + '{"id": "c", "arms"')
    engine.calls.clear()
    assert run(command([heldout, families], out)) == 0
    written = load_jsonl(out)
    assert [r["id"] for r in written] == ["a", "c"]  # b passed at turn 0; a not sampled again
    assert len(engine.calls) == 3 and (tmp_path / "repair/repair.jsonl.torn").exists()
    summary = json.loads((tmp_path / "repair/repair.summary.json").read_text())
    table = placebo_table(placebo_samples(out))
    assert summary["placebo_table"] == table and table["problems"] == 2
    assert table["rates"]["feedback"]["mean"] == 100.0 and table["rates"]["placebo"]["mean"] == 0.0
    assert table["feedback_minus_placebo"]["mean"] == 100.0
    assert (summary["evaluated_problems"], summary["problems_with_failure"], summary["failures"]) == (3, 2, 2)
    # a finished output: a re-run samples nothing and writes nothing again
    before = out.read_bytes()
    assert run(command([heldout, families], out)) == 0
    assert out.read_bytes() == before and len(engine.calls) == 3
    # another decoding on the same output is refused, naming the file, line and field
    capsys.readouterr()
    assert run(command([heldout, families], out, "--samples", 5)) == 2
    assert f"{out}:1: field 'decoding'" in capsys.readouterr().err
    assert out.read_bytes() == before
    # seeds pool within an instance
    pooled = placebo_samples(out, out)
    assert pooled["placebo"]["a"] == [0.0] * 8


def test_fewer_than_four_samples_or_greedy_decoding_is_refused(tmp_path, capsys):
    assert run(command([tmp_path / "none.jsonl"], tmp_path / "o.jsonl", "--samples", 3)) == 2
    assert "at least 4" in capsys.readouterr().err
    assert run(command([tmp_path / "none.jsonl"], tmp_path / "o.jsonl", "--temperature", 0)) == 2
    assert "sample" in capsys.readouterr().err


def test_bad_input_names_the_file_line_and_field(tmp_path, executor_factory, capsys):
    good, bad = evaluated(executor_factory, {"a": [False], "b": [False]})
    path = tmp_path / "eval.jsonl"
    cases = [
        ({k: v for k, v in bad.items() if k != "public_results"}, "field 'public_results'"),
        ({k: v for k, v in bad.items() if k != "all_pass_rates"}, "field 'all_pass_rates'"),
        ({k: v for k, v in bad.items() if k != "hidden_test_cases"}, "field 'hidden_test_cases'"),
        ({**bad, "all_pass_rates": [[1.5, 0.0]]}, "field 'all_pass_rates'"),
        ({**bad, "id": "a"}, "field 'id': duplicate id 'a'"),
    ]
    for record, message in cases:
        write_jsonl(path, [good, record], overwrite=True)
        with pytest.raises(DataError, match=f"eval.jsonl:2: {message}"):
            repair_run.load_failures([str(path)])
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(DataError, match=r"eval.jsonl:2: invalid JSON"):
        repair_run.load_failures([str(path)])
    # the command says it and exits 2 before any runtime starts; no output is made
    assert run(command([path], tmp_path / "out.jsonl")) == 2
    assert "eval.jsonl:2: invalid JSON" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()
    # placebo_samples names a bad output line too
    out = tmp_path / "repair.jsonl"
    out.write_text(json.dumps({"id": "a", "arms": {"feedback": {"solved": [[1]]}}}) + "\n")
    with pytest.raises(DataError, match=r"repair.jsonl:1: field 'arms.placebo.solved'"):
        placebo_samples(out)
