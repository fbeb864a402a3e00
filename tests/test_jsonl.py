"""cobalt.jsonl: resume by a single or a composite key."""

from __future__ import annotations

import pytest

from cobalt.errors import DataError
from cobalt.jsonl import append_jsonl, done_ids, record_key


def test_done_ids_with_a_composite_key(tmp_path):
    path = tmp_path / "out.jsonl"
    append_jsonl(path, {"id": "p1", "conversation": 0, "turn": 1})
    append_jsonl(path, {"id": "p1", "conversation": 3, "turn": 2})
    key = ("id", "conversation", "turn")
    assert done_ids(path, key) == {("p1", 0, 1), ("p1", 3, 2)}
    assert record_key({"id": "p1", "conversation": 3, "turn": 2, "x": 1}, key) in done_ids(path, key)
    assert done_ids(path) == {"p1"}


def test_composite_key_missing_field_names_the_line(tmp_path):
    path = tmp_path / "out.jsonl"
    append_jsonl(path, {"id": "p1", "turn": 1})
    append_jsonl(path, {"id": "p2", "conversation": 0, "turn": 1})
    with pytest.raises(DataError, match=r"out\.jsonl:1"):
        done_ids(path, ("id", "conversation", "turn"))
