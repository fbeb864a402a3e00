"""Reading raw records: a local JSONL or parquet file, or (on a user's machine) a hub dataset.

Each record comes with its position so later errors can name it: ``(line, record)`` where
``line`` is the JSONL line number or the parquet row number (1-based).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from cobalt.common.errors import DataError
from cobalt.common.jsonl import checked_record, read_numbered_jsonl

LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")


def looks_local(source: str) -> bool:
    """A path (existing, or named like a data file) rather than a hub dataset name."""
    return os.path.exists(source) or source.endswith(LOCAL_SUFFIXES) or source.startswith((".", "/"))


def iter_records(
    source: str | os.PathLike, required: Iterable[str] = (), split: str = "train"
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line, record)`` from a local file, or from the hub when ``source`` is a name."""
    source = str(source)
    if not looks_local(source):
        yield from _iter_hub(source, split, tuple(required))
        return
    yield from iter_local(source, required)


def iter_local(
    path: str | os.PathLike, required: Iterable[str] = (), columns: list[str] | None = None
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line, record)`` from a local JSONL or parquet file, or a JSON array (TACO-verified
    ships as one: ``line`` is then the record's position in the array). Of a parquet file only
    ``columns`` are read when given (a JSON record is read whole)."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file does not exist", path=path)
    if path.suffix == ".parquet":
        yield from _iter_parquet(path, tuple(required), columns)
    elif is_json_array(path):
        yield from _iter_json_array(path, tuple(required))
    else:
        yield from read_numbered_jsonl(path, tuple(required))


def is_json_array(path: Path) -> bool:
    """Whether the file is one JSON array (its first non-blank character is ``[``)."""
    with open(path, "rb") as f:
        while chunk := f.read(4096):
            if chunk.strip():
                return chunk.lstrip()[:1] == b"["
    return False


def _iter_json_array(path: Path, required: tuple, chunk_chars: int = 1 << 22) -> Iterator[tuple[int, dict]]:
    """The objects of a JSON array, one at a time: a multi-GB array is never held whole."""
    decoder, buffer, pos, row = json.JSONDecoder(), "", 0, 0
    with open(path, encoding="utf-8") as f:
        more = True

        def skip(chars: str) -> None:
            nonlocal buffer, pos, more
            while True:
                while pos < len(buffer) and buffer[pos] in chars:
                    pos += 1
                if pos < len(buffer) or not more:
                    return
                buffer, pos = f.read(chunk_chars), 0
                more = bool(buffer)

        skip(" \t\r\n")
        pos += 1  # the opening [
        while True:
            skip(" \t\r\n,")
            if pos >= len(buffer):
                raise DataError("the JSON array is not closed", path=path, line=row)
            if buffer[pos] == "]":
                return
            try:
                record, end = decoder.raw_decode(buffer, pos)
            except json.JSONDecodeError as e:
                if more and (chunk := f.read(chunk_chars)):
                    buffer, pos = buffer[pos:] + chunk, 0
                    continue
                raise DataError(f"invalid JSON ({e.msg})", path=path, line=row + 1) from None
            row, pos = row + 1, end
            yield row, checked_record(record, required, path, row)


def _iter_parquet(
    path: Path, required: tuple, columns: list[str] | None = None
) -> Iterator[tuple[int, dict]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path, columns=columns)
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise DataError(f"cannot read parquet ({e})", path=path) from None
    for row, record in enumerate(table.to_pylist(), start=1):
        yield row, checked_record(record, required, path, row)


def _iter_hub(name: str, split: str, required: tuple) -> Iterator[tuple[int, dict]]:
    from datasets import load_dataset  # only on a user's machine with hub access

    for row, record in enumerate(load_dataset(name, split=split), start=1):
        for field in required:
            if field not in record:
                raise DataError("missing", path=name, line=row, field=field)
        yield row, dict(record)


def require(record: dict, field: str, types: type | tuple, *, path=None, line=None):
    """``record[field]``, checked to exist and have one of ``types``."""
    if field not in record:
        raise DataError("missing", path=path, line=line, field=field)
    value = record[field]
    if not isinstance(value, types):
        raise DataError(
            f"expected {_type_names(types)}, got {type(value).__name__}", path=path, line=line, field=field
        )
    return value


def _type_names(types) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(t.__name__ for t in types)


# The fields that tell the three problem-file shapes apart (first record of the file).
SHAPES = {
    "problems": ("id", "instruction", "test_cases"),  # the project's problem records
    "taco": ("id", "question", "solutions", "input_output"),  # TACO-verified as it ships
    "lcb": ("question_id", "question_content", "public_test_cases", "private_test_cases"),  # LiveCodeBench
}


def first_fields(path: str | os.PathLike) -> list[str] | None:
    """The fields of a local file's first record (of a parquet file: its columns, read from its
    footer alone); ``None`` when it holds none."""
    path = Path(path)
    if path.suffix == ".parquet" and path.is_file():
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(path)
        except Exception as e:  # pyarrow raises several types for a damaged file
            raise DataError(f"cannot read parquet ({e})", path=path) from None
        return parquet.schema_arrow.names if parquet.metadata.num_rows else None
    return next((list(record) for _, record in iter_local(path)), None)


def file_shape(path: str | os.PathLike) -> str:
    """``problems``, ``taco`` or ``lcb``: what the first record of a local file looks like."""
    fields = first_fields(path)
    if fields is None:
        raise DataError("empty file", path=path)
    for shape, needed in SHAPES.items():
        if all(f in fields for f in needed):
            return shape
    expected = "; ".join(f"{shape}: {', '.join(needed)}" for shape, needed in SHAPES.items())
    raise DataError(f"not a problem file (its fields are {', '.join(fields)}; expected {expected})",
                    path=path, line=1)  # fmt: skip
