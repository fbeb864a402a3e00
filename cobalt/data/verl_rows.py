"""veRL rows (reference §1) and the parquet files that veRL's ``RLHFDataset`` reads.

A row: ``data_source`` "code_taco_verified", ``prompt`` (chat messages), ``ability`` "code",
``reward_model`` = {"style": "rule", "ground_truth": <test_cases JSON string>} (all of the
problem's tests, as the reference), ``extra_info`` = {split, index, prev_best_pass_rate,
instruction (single-turn) | conversation (multi-turn)}.

An online row (:func:`online_row`, GRPO-MT and VeRPO-MT: one row per problem, n episodes each) also
names its ``agent_name`` (the multi-turn repair loop), keeps all of the problem's tests as
``ground_truth`` (the reward, as COBALT's rows) and its public tests in
``extra_info.public_test_cases`` (the feedback).
"""

from __future__ import annotations

import os

from cobalt.common.errors import DataError
from cobalt.common.jsonl import atomic_output
from cobalt.common.prompts import initial_messages
from cobalt.common.testcases import parse_test_cases
from cobalt.data.sources import iter_local, require

DATA_SOURCE = "code_taco_verified"
ONLINE_AGENT = "cobalt_code_repair"  # cobalt.train.code_repair_loop.AGENT_NAME


def _row(prompt: list[dict], test_cases: str, extra: dict) -> dict:
    return {
        "data_source": DATA_SOURCE,
        "prompt": prompt,
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": test_cases},
        "extra_info": extra,
    }


def _messages(value, *, path, line, field):
    if (
        not isinstance(value, list)
        or not value
        or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in value
        )
    ):
        raise DataError(
            "expected a non-empty list of {role, content} messages", path=path, line=line, field=field
        )
    return [{"role": m["role"], "content": m["content"]} for m in value]


def single_turn_row(problem: dict, split: str, *, path=None, line=None) -> dict:
    """A problem record → a turn-0 row (system prompt + instruction)."""
    instruction = require(problem, "instruction", str, path=path, line=line)
    tests = require(problem, "test_cases", str, path=path, line=line)
    parse_test_cases(tests, path=path, line=line)
    extra = {
        "split": split,
        "index": problem.get("id", -1),
        "prev_best_pass_rate": 0.0,
        "instruction": instruction,
    }
    return _row(initial_messages(instruction), tests, extra)


def online_row(problem: dict, split: str, *, path=None, line=None) -> dict:
    """A problem record → a row of the online methods (turn-0 prompt, all of its tests as the
    reward's ground truth as in COBALT's rows, public tests for the loop's feedback)."""
    instruction = require(problem, "instruction", str, path=path, line=line)
    tests = {}
    for field in ("test_cases", "public_test_cases"):
        tests[field] = require(problem, field, str, path=path, line=line)
        parse_test_cases(tests[field], path=path, line=line, field=field)
    extra = {
        "split": split,
        "index": problem.get("id", -1),
        "prev_best_pass_rate": 0.0,
        "instruction": instruction,
        "public_test_cases": tests["public_test_cases"],
    }
    return {
        **_row(initial_messages(instruction), tests["test_cases"], extra),
        "agent_name": ONLINE_AGENT,
    }


def multi_turn_row(prompt: dict, split: str, *, path=None, line=None) -> dict:
    """A bandit prompt (from ``process_multi_turn_taco``) → a row."""
    conversation = _messages(prompt.get("conversation"), path=path, line=line, field="conversation")
    tests = require(prompt, "test_cases", str, path=path, line=line)
    parse_test_cases(tests, path=path, line=line)
    best = prompt.get("prev_best_pass_rate", 0.0)
    if isinstance(best, bool) or not isinstance(best, (int, float)) or not 0 <= best <= 1:
        raise DataError(
            f"{best!r} is not a number in [0, 1]", path=path, line=line, field="prev_best_pass_rate"
        )
    extra = {
        "split": split,
        "index": prompt.get("example_id", -1),
        "prev_best_pass_rate": float(best),
        "conversation": conversation,
    }
    return _row(conversation, tests, extra)


def rows_from_file(path: str | os.PathLike, split: str, multi_turn: bool, make=None) -> list[dict]:
    """Rows of a JSONL file, made by ``make`` (default: the multi- or single-turn row)."""
    make = make or (multi_turn_row if multi_turn else single_turn_row)
    rows = [make(record, split, path=path, line=line) for line, record in iter_local(path)]
    if not rows:
        raise DataError("no records", path=path)
    return _uniform_index(rows)


def _uniform_index(rows: list[dict]) -> list[dict]:
    """Parquet needs one type per column: mixed int/str ids are all written as strings."""
    kinds = {type(r["extra_info"]["index"]) for r in rows}
    if len(kinds) > 1:
        for r in rows:
            r["extra_info"]["index"] = str(r["extra_info"]["index"])
    return rows


def write_parquet(rows: list[dict], path: str | os.PathLike, overwrite: bool = False) -> int:
    """Write rows atomically (temporary file, then rename); refuses to overwrite by default."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows)
    with atomic_output(path, overwrite=overwrite) as tmp:
        pq.write_table(table, tmp)
    return len(rows)


def convert(train_file, val_file, local_dir, multi_turn: bool, overwrite: bool = False, make=None) -> dict:
    """``train_file``/``val_file`` JSONL → ``local_dir/train.parquet`` and ``test.parquet`` (rows made
    by ``make``, e.g. :func:`online_row`; default: the multi- or single-turn row)."""
    outputs = {
        "train": os.path.join(local_dir, "train.parquet"),
        "test": os.path.join(local_dir, "test.parquet"),
    }
    if not overwrite:
        for out in outputs.values():
            if os.path.exists(out):
                raise FileExistsError(f"{out} already exists; pass --overwrite to replace it")
    rows = {
        "train": rows_from_file(train_file, "train", multi_turn, make),
        "test": rows_from_file(val_file, "test", multi_turn, make),
    }
    return {split: write_parquet(rows[split], outputs[split], overwrite) for split in outputs}
