"""veRL rows and parquet files (reference §1), loaded back with veRL's RLHFDataset."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from cobalt.common.errors import DataError
from cobalt.common.jsonl import write_jsonl
from cobalt.common.prompts import SYSTEM_PROMPT
from cobalt.common.testcases import dump_test_cases
from cobalt.data.verl_rows import convert, multi_turn_row, single_turn_row

TESTS = dump_test_cases(["1", "2"], ["2", "4"])
CONV = [
    {"role": "system", "content": SYSTEM_PROMPT},
    {"role": "user", "content": "Solve."},
    {"role": "assistant", "content": "```python\nprint(1)\n```"},
    {"role": "user", "content": "Your code did not pass."},
]


def problem(pid=7):
    return {"id": pid, "instruction": "Solve.", "test_cases": TESTS, "difficulty": "EASY"}


def prompt(pid="p1", best=0.25):
    return {
        "example_id": pid,
        "conversation": CONV,
        "test_cases": TESTS,
        "difficulty": "EASY",
        "prev_best_pass_rate": best,
    }


def test_single_turn_row_shape():
    row = single_turn_row(problem(), "train")
    assert row == {
        "data_source": "code_taco_verified",
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Solve."}],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": TESTS},
        "extra_info": {"split": "train", "index": 7, "prev_best_pass_rate": 0.0, "instruction": "Solve."},
    }


def test_multi_turn_row_shape():
    row = multi_turn_row(prompt(), "test")
    assert row["prompt"] == CONV and row["reward_model"]["ground_truth"] == TESTS
    assert row["extra_info"] == {
        "split": "test",
        "index": "p1",
        "prev_best_pass_rate": 0.25,
        "conversation": CONV,
    }


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda p: p.pop("test_cases"), "test_cases"),
        (
            lambda p: p.__setitem__("test_cases", json.dumps({"inputs": ["1", "2"], "outputs": ["2"]})),
            "test_cases",
        ),
        (lambda p: p.__setitem__("conversation", [{"role": "user"}]), "conversation"),
        (lambda p: p.__setitem__("prev_best_pass_rate", 2.0), "prev_best_pass_rate"),
    ],
)
def test_bad_prompt_records_name_the_field(mutate, field):
    rec = prompt()
    mutate(rec)
    with pytest.raises(DataError, match=rf"b\.jsonl:5: field '{field}'"):
        multi_turn_row(rec, "train", path="b.jsonl", line=5)


def test_convert_writes_both_files_and_refuses_to_overwrite(tmp_path):
    write_jsonl(tmp_path / "tr.jsonl", [prompt("a"), prompt("b", 1.0)])
    write_jsonl(tmp_path / "te.jsonl", [prompt("c")])
    out = tmp_path / "out"
    assert convert(tmp_path / "tr.jsonl", tmp_path / "te.jsonl", out, multi_turn=True) == {
        "train": 2,
        "test": 1,
    }
    rows = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["extra_info"]["index"] for r in rows] == ["a", "b"]
    assert rows[1]["extra_info"]["prev_best_pass_rate"] == 1.0 and rows[0]["prompt"] == CONV
    before = (out / "train.parquet").read_bytes()
    with pytest.raises(FileExistsError):
        convert(tmp_path / "tr.jsonl", tmp_path / "te.jsonl", out, multi_turn=True)
    assert (out / "train.parquet").read_bytes() == before


def test_convert_leaves_no_file_when_input_is_bad(tmp_path):
    write_jsonl(tmp_path / "tr.jsonl", [prompt("a")])
    (tmp_path / "te.jsonl").write_text(json.dumps(prompt("c"))[:40] + "\n")
    out = tmp_path / "out"
    with pytest.raises(DataError, match=r"te\.jsonl:1: invalid JSON"):
        convert(tmp_path / "tr.jsonl", tmp_path / "te.jsonl", out, multi_turn=True)
    assert not out.exists() or list(out.iterdir()) == []


def test_mixed_id_types_become_strings(tmp_path):
    write_jsonl(tmp_path / "tr.jsonl", [problem(1), problem("x")])
    write_jsonl(tmp_path / "te.jsonl", [problem(2)])
    convert(tmp_path / "tr.jsonl", tmp_path / "te.jsonl", tmp_path, multi_turn=False)
    assert [r["extra_info"]["index"] for r in pq.read_table(tmp_path / "train.parquet").to_pylist()] == [
        "1",
        "x",
    ]
    assert pq.read_table(tmp_path / "test.parquet").to_pylist()[0]["extra_info"]["index"] == 2


def load_with_verl(parquet, tokenizer_dir, cache):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from cobalt.data.tokens import load_tokenizer

    cfg = OmegaConf.create(
        {
            "prompt_key": "prompt",
            "max_prompt_length": 4096,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "truncation": "error",
            "cache_dir": str(cache),
        }
    )
    return RLHFDataset(str(parquet), load_tokenizer(tokenizer_dir), cfg)


def test_rlhf_dataset_reads_our_parquet(tmp_path, tiny_tokenizer_dir):
    write_jsonl(tmp_path / "tr.jsonl", [prompt("a", 0.5)])
    write_jsonl(tmp_path / "te.jsonl", [prompt("c")])
    convert(tmp_path / "tr.jsonl", tmp_path / "te.jsonl", tmp_path, multi_turn=True)
    ds = load_with_verl(tmp_path / "train.parquet", tiny_tokenizer_dir, tmp_path / "cache")
    assert len(ds) == 1
    item = ds[0]
    assert item["raw_prompt"] == CONV and item["index"] == "a"
    assert item["extra_info"]["prev_best_pass_rate"] == 0.5
    assert json.loads(item["reward_model"]["ground_truth"]) == json.loads(TESTS)


def online_problem(**fields):
    problem = {
        "id": 7,
        "instruction": "Solve it.",
        "public_test_cases": json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]}),
        "hidden_test_cases": json.dumps({"inputs": ["3\n"], "outputs": ["6\n"]}),
        "test_cases": json.dumps({"inputs": ["1\n", "3\n"], "outputs": ["2\n", "6\n"]}),
    }
    return {**problem, **fields}


def test_an_online_row_picks_the_repair_loop_and_rewards_on_all_tests_as_cobalts_rows(
    tmp_path, tiny_tokenizer_dir
):
    from cobalt.common.prompts import initial_messages
    from cobalt.data.verl_rows import online_row, write_parquet
    from cobalt.train.code_repair_loop import AGENT_NAME

    row = online_row(online_problem(), "train")
    assert row["agent_name"] == AGENT_NAME
    assert row["prompt"] == initial_messages("Solve it.")  # COBALT's turn-0 prompt
    assert row["reward_model"]["ground_truth"] == online_problem()["test_cases"]  # public and hidden
    assert row["extra_info"]["public_test_cases"] == online_problem()["public_test_cases"]
    write_parquet([row], tmp_path / "online.parquet")
    item = load_with_verl(tmp_path / "online.parquet", tiny_tokenizer_dir, tmp_path / "cache")[0]
    assert item["agent_name"] == AGENT_NAME  # veRL's agent-loop worker routes on this column
    assert item["extra_info"]["public_test_cases"] == online_problem()["public_test_cases"]


def test_an_online_row_without_public_tests_names_the_field():
    from cobalt.data.verl_rows import online_row

    problem = online_problem()
    del problem["public_test_cases"]
    with pytest.raises(DataError, match="public_test_cases"):
        online_row(problem, "train", path="p.jsonl", line=3)
