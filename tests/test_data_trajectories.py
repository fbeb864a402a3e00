"""The trajectory record: validating reader, reference-layout adapter, synthetic generator."""

from __future__ import annotations

import asyncio
import json

import pytest
from data_fixtures import trajectory

from cobalt.common.errors import DataError
from cobalt.common.jsonl import write_jsonl
from cobalt.common.prompts import ALL_PUBLIC_PASSED_MARKER, NO_CODE_BLOCK
from cobalt.common.testcases import dump_test_cases
from cobalt.data import synthetic
from cobalt.data.bandit import build_bandit_prompts
from cobalt.data.trajectories import assistant_content, from_reference, read_trajectories, validate


def good():
    return trajectory("a", [[0.0, 0.5, 1.0]] * 16)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda r: r.pop("conversations"), "conversations"),
        (lambda r: r["responses"].pop(), "responses"),
        (lambda r: r["public_pass_rates"][3].append(0.5), "public_pass_rates"),
        (lambda r: r["all_pass_rates"][0].__setitem__(1, 1.5), "all_pass_rates"),
        (lambda r: r["all_pass_rates"][0].__setitem__(1, True), "all_pass_rates"),
        (lambda r: r["conversations"][2].pop(), "conversations"),
        (lambda r: r["conversations"][2][2].__setitem__("role", "user"), "conversations"),
        (lambda r: r["turn0_results"][0]["feedback"].pop(), "turn0_results"),
        (lambda r: r.__setitem__("test_cases", json.dumps({"inputs": ["1"], "outputs": []})), "test_cases"),
        (lambda r: r.__setitem__("hidden_test_cases", "{not json"), "hidden_test_cases"),
    ],
)
def test_invalid_records_name_file_line_and_field(mutate, field):
    rec = good()
    mutate(rec)
    with pytest.raises(DataError) as e:
        validate(rec, path="t.jsonl", line=9, need_hidden=True)
    assert str(e.value).startswith(f"t.jsonl:9: field '{field}'")


def test_all_pass_rates_required_only_when_asked():
    rec = good()
    del rec["all_pass_rates"]
    assert validate(rec) is rec
    with pytest.raises(DataError, match="all_pass_rates"):
        validate(rec, need_hidden=True)


def test_reader_reports_line_numbers_and_truncated_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    bad = good()
    bad["responses"] = bad["responses"][:3]
    path.write_text(json.dumps(good()) + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=r"t\.jsonl:3: field 'responses'"):
        list(read_trajectories(path))
    path.write_text(json.dumps(good()) + "\n" + json.dumps(good())[:50] + "\n")
    with pytest.raises(DataError, match=r"t\.jsonl:2: invalid JSON"):
        list(read_trajectories(path))
    with pytest.raises(DataError, match="does not exist"):
        list(read_trajectories(tmp_path / "nope.jsonl"))


def test_reference_layout_is_converted(tmp_path):
    ours = good()
    ref = {k: v for k, v in ours.items() if k not in ("turn0_results", "responses", "public_pass_rates")}
    ref["exec_results"] = ours["turn0_results"]
    ref["raw_responses"] = [list(col) for col in zip(*ours["responses"])]  # [turn][conv]
    ref["public_pass_rates"] = [list(col) for col in zip(*ours["public_pass_rates"])]
    ref["responses"] = ref["raw_responses"][0]
    converted = from_reference(ref)
    for field in ("turn0_results", "responses", "public_pass_rates", "conversations", "all_pass_rates"):
        assert converted[field] == ours[field]
    write_jsonl(tmp_path / "r.jsonl", [ref])
    [(line, rec)] = list(read_trajectories(tmp_path / "r.jsonl", need_hidden=True))
    assert line == 1 and rec["responses"] == ours["responses"]


def test_reference_layout_without_raw_responses_is_accepted(tmp_path):
    """The reference's cutter needs no raw responses (conversations, exec_results and the pass
    rates are enough); the reader accepted only records that had them."""
    ours = good()
    ref = {k: v for k, v in ours.items() if k not in ("turn0_results", "responses", "public_pass_rates")}
    ref["exec_results"] = ours["turn0_results"]
    ref["public_pass_rates"] = [list(col) for col in zip(*ours["public_pass_rates"])]
    write_jsonl(tmp_path / "r.jsonl", [ref])
    [(_, rec)] = list(read_trajectories(tmp_path / "r.jsonl", need_hidden=True))
    assert "responses" not in rec and rec["conversations"] == ours["conversations"]
    prompts, counts = build_bandit_prompts([rec], lambda messages: 10)
    assert counts.emitted == len(prompts) >= 1


def test_assistant_content_keeps_text_after_last_think_cut_to_6000():
    assert assistant_content("a</think>b</think>  answer ", thinking=True) == "answer"
    assert assistant_content("no think" + "x" * 7000, thinking=True) == ("no think" + "x" * 7000)[:6000]
    assert assistant_content("</think>" + "y" * 7000, thinking=True) == "y" * 6000
    assert assistant_content("a</think>b", thinking=False) == "a</think>b"


# --- synthetic trajectories on the real sandbox ------------------------------------------------
def doubling_problem(pid):
    ins = [str(i) for i in range(1, 9)]
    outs = [str(2 * int(i)) for i in ins]
    return {
        "id": pid,
        "difficulty": "EASY",
        "instruction": "Print twice n.",
        "test_cases": dump_test_cases(ins, outs),
        "public_test_cases": dump_test_cases(ins[:4], outs[:4]),
        "hidden_test_cases": dump_test_cases(ins[4:], outs[4:]),
    }


PROGRAMS = {
    "d1": (["print(int(input())*2)"], ["print(int(input())+2)"]),
    "d2": (["n=int(input())\nprint(n+n)"], []),
}


@pytest.fixture(scope="module")
def synthetic_records():
    from cobalt.serve.client import get_evaluator

    opts = synthetic.SyntheticOptions(num_samples=6, num_turns=2, seed=1)
    problems = [doubling_problem("d1"), doubling_problem("d2")]
    return asyncio.run(synthetic.generate(problems, PROGRAMS, get_evaluator("local"), opts))


def test_synthetic_records_are_valid_trajectories(synthetic_records, tmp_path):
    write_jsonl(tmp_path / "s.jsonl", synthetic_records)
    read = [rec for _, rec in read_trajectories(tmp_path / "s.jsonl", need_hidden=True)]
    assert [r["id"] for r in read] == ["d1", "d2"]
    for rec in read:
        assert len(rec["conversations"]) == 6 and len(rec["conversations"][0]) == 8
        assert len(rec["responses"][0]) == 3


def test_synthetic_feedback_and_rates_come_from_real_execution(synthetic_records):
    for rec in synthetic_records:
        for conv, responses, pub, hid in zip(
            rec["conversations"], rec["responses"], rec["public_pass_rates"], rec["all_pass_rates"]
        ):
            for turn, response in enumerate(responses):
                assistant, feedback = conv[2 + 2 * turn]["content"], conv[3 + 2 * turn]["content"]
                assert "</think>" in response and "</think>" not in assistant
                if "```python" not in response:
                    assert NO_CODE_BLOCK in feedback and pub[turn] == 0.0
                elif "*2" in response or "n+n" in response:
                    assert pub[turn] == hid[turn] == 1.0 and feedback.startswith(ALL_PUBLIC_PASSED_MARKER)
                else:  # +2 and the echo program fail
                    assert pub[turn] < 1.0 and "Expected Output" in feedback


def test_synthetic_is_deterministic(synthetic_records):
    from cobalt.serve.client import get_evaluator

    opts = synthetic.SyntheticOptions(num_samples=6, num_turns=2, seed=1)
    again = asyncio.run(
        synthetic.generate(
            [doubling_problem("d1"), doubling_problem("d2")], PROGRAMS, get_evaluator("local"), opts
        )
    )
    assert again == synthetic_records
