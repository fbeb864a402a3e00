"""The one home for JSONL files: line-numbered reading, durable appends, resume, atomic writes.

Output files are never overwritten or truncated by accident: whole-file writers go through
:func:`atomic_output` (write a temporary file beside the target, then rename; one left by a killed
writer is removed by the next writer of that target), and they refuse an
existing target unless told ``overwrite=True``. Long runs append one record at a time with
:func:`append_jsonl` (flushed and fsynced) and resume by skipping the ids in :func:`done_ids`.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from cobalt.common.errors import DataError

log = logging.getLogger("cobalt.common.jsonl")


def read_jsonl(path: str | os.PathLike, required: Iterable[str] = ()) -> Iterator[dict]:
    """Yield one dict per non-blank line. Raises DataError naming the file, line and field."""
    for _, record in read_numbered_jsonl(path, required):
        yield record


def read_numbered_jsonl(path: str | os.PathLike, required: Iterable[str] = ()) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, record)`` for each non-blank line (numbers count blank lines too)."""
    path = Path(path)
    if not path.is_file():
        raise DataError("file does not exist", path=path)
    required = tuple(required)
    for lineno, line in _numbered_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"invalid JSON ({e.msg} at column {e.colno})", path=path, line=lineno) from None
        yield lineno, checked_record(record, required, path, lineno)


def checked_record(record, required: Iterable[str], path, line: int) -> dict:
    """``record``, a JSON object holding every ``required`` field, or DataError naming the field."""
    if not isinstance(record, dict):
        raise DataError(f"expected a JSON object, got {type(record).__name__}", path=path, line=line)
    for field in required:
        if field not in record:
            raise DataError("missing", path=path, line=line, field=field)
    return record


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each line decoded on its own, so a byte that is not UTF-8 is reported with its line."""
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(
                    f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})", path=path, line=lineno
                ) from None


def load_jsonl(path: str | os.PathLike, required: Iterable[str] = ()) -> list[dict]:
    return list(read_jsonl(path, required))


def append_jsonl(path: str | os.PathLike, record: dict) -> None:
    """Append one record and make it durable (flush + fsync), so a crash loses at most this line."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


Key = str | tuple[str, ...]


def record_key(record: dict, key: Key = "id"):
    """The value that identifies ``record``: ``record[key]``, or for a composite key (a tuple of
    field names) the tuple of those fields' values."""
    if isinstance(key, tuple):
        return tuple(record[k] for k in key)
    return record[key]


def done_ids(path: str | os.PathLike, key: Key = "id") -> set:
    """Ids already present in an append-only output file (empty if it does not exist yet).

    ``key`` is a field name or a tuple of them (then the ids are tuples, see :func:`record_key`).
    A torn last line (the process died mid-write) is ignored; it will be redone.
    """
    path = Path(path)
    if not path.exists():
        return set()
    ids = set()
    with path.open("rb") as f:
        lines = f.readlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            ids.add(record_key(json.loads(line), key))
        except (ValueError, KeyError, TypeError):  # ValueError: bad JSON or not UTF-8
            if lineno == len(lines):
                continue
            raise DataError(
                f"cannot resume: unreadable record (no {key!r})", path=path, line=lineno
            ) from None
    return ids


def resume_appending(path: str | os.PathLike, key: Key = "id") -> set:
    """Get an append-only output ready for more records and return the ids it already holds.

    A crash mid-write can leave a torn last line; appending after it would bury a corrupt line in
    the middle of the file. The torn bytes are moved to ``<path>.torn`` (kept, never discarded)
    and the file is cut back to its last complete record.
    """
    path = Path(path)
    if not path.exists():
        return set()
    with path.open("rb+") as f:
        data = f.read()
        start = data.rstrip(b"\n").rfind(b"\n") + 1  # where the last line begins
        tail = data[start:]
        if tail.strip() and not _is_complete_record(tail):
            with open(f"{path}.torn", "ab") as torn:
                torn.write(tail.rstrip(b"\n") + b"\n")
            f.truncate(start)
            f.flush()
            os.fsync(f.fileno())
            log.warning("%s: moved a torn last line (%d bytes) to %s.torn", path, len(tail), path)
    return done_ids(path, key)


def _is_complete_record(line: bytes) -> bool:
    if not line.endswith(b"\n"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


TEMP_SUFFIX = ".tmp"


def temp_prefix(path: Path) -> str:
    """Hidden temporaries beside ``path`` are named ``.<name>.<writer's pid>.<random>.tmp``, so a
    later writer of the same path can tell one left by a killed process (SIGKILL skips cleanup)."""
    return f".{path.name}.{os.getpid()}."


def remove_stale_temps(path: Path) -> None:
    """Remove the temporaries (files or directories) of ``path`` whose writer is no longer alive."""
    prefix = f".{path.name}."
    for entry in path.parent.glob(f"{glob.escape(prefix)}*{TEMP_SUFFIX}"):
        pid = entry.name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            log.warning("removing %s, left by a writer that died (pid %s)", entry, pid)
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        pass
    return True


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it over ``path``.

    On error the temporary file is removed and ``path`` is untouched. An existing ``path`` is an
    error unless ``overwrite`` is true, so a user's earlier output is never lost by accident.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} already exists; pass --overwrite to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=TEMP_SUFFIX, dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes it private; the output gets the usual mode
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_jsonl(path: str | os.PathLike, records: Iterable[dict[str, Any]], overwrite: bool = False) -> int:
    """Write all records atomically; returns how many were written."""
    count = 0
    with atomic_output(path, overwrite=overwrite) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
        f.flush()
        os.fsync(f.fileno())
    return count
