"""Re-running every assistant turn of a trajectory record on the hidden tests (``all_pass_rates``)."""

from __future__ import annotations

import asyncio

from cobalt.common.extract import extract_code
from cobalt.common.testcases import pass_rate
from cobalt.data.execute import Executor


def assistant_codes(conversation: list[dict]) -> list[str | None]:
    """The program of each assistant turn, in order (None: no code block)."""
    return [extract_code(m["content"]) for m in conversation if m["role"] == "assistant"]


async def hidden_pass_rates(record: dict, executor: Executor, tests_field: str) -> list[list[float]]:
    """K × T pass rates on ``record[tests_field]``; a program repeated within a record runs once."""
    codes = [assistant_codes(conv) for conv in record["conversations"]]
    unique = list(dict.fromkeys(code for row in codes for code in row))
    results = await asyncio.gather(*(executor.run(code, record[tests_field]) for code in unique))
    rate = {code: pass_rate(result) for code, result in zip(unique, results)}
    return [[rate[code] for code in row] for row in codes]


async def evaluate_record(record: dict, executor: Executor, tests_field: str) -> dict:
    return {**record, "all_pass_rates": await hidden_pass_rates(record, executor, tests_field)}
