"""LiveCodeBench ``test6.jsonl`` → problem records with public, hidden and combined tests (§6).

Raw fields: ``question_id, question_content, public_test_cases, private_test_cases``. Public tests
are a JSON list of ``{input, output}``; private tests are base64 → zlib → pickle → JSON string.
Pickle can run arbitrary code, so it is read with :class:`StringOnlyUnpickler`, which accepts a
plain string and nothing else (an improvement on the reference's ``pickle.loads``).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib

from cobalt.common.errors import DataError
from cobalt.common.prompts import build_instruction
from cobalt.common.testcases import dump_test_cases

RAW_FIELDS = ("question_id", "question_content", "public_test_cases", "private_test_cases")
QUESTION_CUTS = ("\nExample 1:\n\n", "\nSample Input 1\n\n")
MAX_HIDDEN = 20
HIDDEN_SHORT, HIDDEN_LONG = 4, 16


class UnsafePickleError(DataError):
    """A pickle that would import or call something: refused, never executed."""


class StringOnlyUnpickler(pickle.Unpickler):
    """Unpickles plain strings only: any global lookup (the way pickles run code) is refused."""

    def find_class(self, module, name):
        raise UnsafePickleError(f"refused to unpickle: it references {module}.{name}")

    def persistent_load(self, pid):
        raise UnsafePickleError("refused to unpickle: it uses persistent ids")


def loads_string(data: bytes) -> str:
    """The string inside a pickle; anything that is not a plain ``str`` is an error."""
    try:
        value = StringOnlyUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError:
        raise
    except Exception as e:
        raise DataError(f"invalid pickle ({type(e).__name__}: {e})") from None
    if type(value) is not str:
        raise UnsafePickleError(f"refused to unpickle: expected a string, got {type(value).__name__}")
    return value


# LiveCodeBench's largest private test sets inflate to tens of MB; a "zip bomb" is refused
# before it is inflated in full.
MAX_INFLATED_BYTES = 512 << 20


def inflate(data: bytes, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """zlib-decompress at most ``limit`` bytes; larger contents are an error."""
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, limit)
    if inflater.unconsumed_tail or len(out) > limit:
        raise DataError(f"compressed data inflates to more than {limit >> 20} MiB; refused")
    return out + inflater.flush()


def decode_private_tests(encoded: str, *, path=None, line=None) -> list[dict]:
    """base64 → zlib (size-capped) → (restricted) pickle → JSON list of ``{input, output}``."""
    field = "private_test_cases"
    try:
        text = loads_string(inflate(base64.b64decode(encoded.encode("utf-8"), validate=True)))
        tests = json.loads(text)
    except DataError as e:
        raise type(e)(e.problem, path=path, line=line, field=field) from None
    except (binascii.Error, zlib.error, json.JSONDecodeError, ValueError) as e:
        raise DataError(
            f"cannot decode ({type(e).__name__}: {e})", path=path, line=line, field=field
        ) from None
    return _check_pairs(tests, field, path, line)


def _check_pairs(tests, field, path, line) -> list[dict]:
    if not isinstance(tests, list):
        raise DataError("expected a list of {input, output}", path=path, line=line, field=field)
    for i, test in enumerate(tests):
        if not (
            isinstance(test, dict)
            and isinstance(test.get("input"), str)
            and isinstance(test.get("output"), str)
        ):
            raise DataError(
                f"test {i} is not an {{input, output}} pair of strings", path=path, line=line, field=field
            )
    return tests


def select_hidden(tests: list[dict], max_tests: int | None = MAX_HIDDEN) -> list[dict]:
    """Sorted by input length; over ``max_tests``, the 4 shortest and the 16 longest (reference)."""
    ordered = sorted(tests, key=lambda t: len(t["input"]))
    if max_tests and len(ordered) > max_tests:
        ordered = ordered[:HIDDEN_SHORT] + ordered[-HIDDEN_LONG:]
    return ordered


def cut_question(question: str) -> str:
    """The statement before its first worked example."""
    for marker in QUESTION_CUTS:
        if marker in question:
            return question.split(marker)[0]
    return question


def _public_tests(raw: dict, path, line) -> list[dict]:
    value = raw["public_test_cases"]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise DataError(
                f"not valid JSON ({e.msg})", path=path, line=line, field="public_test_cases"
            ) from None
    return _check_pairs(value, "public_test_cases", path, line)


def shipped_tests(raw: dict, *, path=None, line=None) -> list[dict]:
    """Every test of a raw record: the public ones, then every private one (none left out)."""
    private = decode_private_tests(raw["private_test_cases"], path=path, line=line)
    return _public_tests(raw, path, line) + private


def convert_record(raw: dict, *, path=None, line=None, max_hidden: int | None = MAX_HIDDEN) -> dict:
    """One raw test6 record → a problem record (other raw fields are kept)."""
    for name in RAW_FIELDS:
        if name not in raw:
            raise DataError("missing", path=path, line=line, field=name)
    if not isinstance(raw["private_test_cases"], str):
        raise DataError("expected a string", path=path, line=line, field="private_test_cases")
    public = _public_tests(raw, path, line)
    hidden = select_hidden(decode_private_tests(raw["private_test_cases"], path=path, line=line), max_hidden)
    record = {k: v for k, v in raw.items() if k not in RAW_FIELDS}
    question = cut_question(raw["question_content"]).strip()
    record.update(
        {
            "id": raw["question_id"],
            "question": question,
            "instruction": build_instruction(question),
            "public_test_cases": dump_test_cases([t["input"] for t in public], [t["output"] for t in public]),
            "hidden_test_cases": dump_test_cases([t["input"] for t in hidden], [t["output"] for t in hidden]),
            "test_cases": dump_test_cases(
                [t["input"] for t in public + hidden], [t["output"] for t in public + hidden]
            ),
        }
    )
    return record
