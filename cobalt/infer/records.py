"""Reading the inputs of inference: problem records and single-turn outputs, checked up front.

Everything is read and validated before any engine starts, so bad input stops at once with
``file:line: field '...': problem`` and the output file is never touched.
"""

from __future__ import annotations

from cobalt.common.errors import DataError
from cobalt.common.testcases import parse_test_cases
from cobalt.data.sources import iter_local, require

TEST_FIELDS = ("test_cases", "public_test_cases", "hidden_test_cases")


def load_records(
    path: str, required: tuple[str, ...], test_fields: tuple[str, ...], check=None
) -> list[dict]:
    """All records of ``path`` with the ``required`` fields, non-empty valid test sets in
    ``test_fields`` (when present), unique ids, and ``check(record, path, line)`` passed."""
    records, first_line = [], {}
    for line, record in iter_local(path, required):
        pid = require(record, "id", (str, int), path=path, line=line)
        if pid in first_line:
            raise DataError(
                f"duplicate id {pid!r} (also on line {first_line[pid]})", path=path, line=line, field="id"
            )
        first_line[pid] = line
        for field in test_fields:
            if field in record:
                parse_test_cases(record[field], path=path, line=line, field=field)
        if check:
            check(record, path, line)
        records.append(record)
    return records


def load_problems(path: str) -> list[dict]:
    """Problem records for single-turn sampling (``id``, ``instruction``, ``test_cases``)."""
    return load_records(path, ("id", "instruction", "test_cases"), TEST_FIELDS)


def _check_single_turn(record: dict, path, line) -> None:
    def fail(field, problem):
        raise DataError(problem, path=path, line=line, field=field)

    responses = require(record, "responses", list, path=path, line=line)
    if not responses or not all(isinstance(r, str) for r in responses):
        fail("responses", "expected a non-empty list of strings")
    results = require(record, "exec_results", list, path=path, line=line)
    if len(results) != len(responses):
        fail("exec_results", f"expected {len(responses)} results (one per response)")
    for result in results:
        if (
            not isinstance(result, dict)
            or not isinstance(result.get("passing"), list)
            or not result["passing"]
        ):
            fail("exec_results", "expected execution results {passing: [...], feedback: [...]}")


def load_single_turn(path: str, public_field: str) -> list[dict]:
    """Single-turn records for multi-turn debugging: problems with ``responses`` and
    ``exec_results``, and the public tests (``public_field``) the feedback comes from."""
    required = ("id", "instruction", "test_cases", "responses", "exec_results", public_field)
    return load_records(path, required, TEST_FIELDS + (public_field,), _check_single_turn)
