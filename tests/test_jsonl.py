"""cobalt.common.jsonl: resume by a single or a composite key."""

from __future__ import annotations

import pytest

from cobalt.common.errors import DataError
from cobalt.common.jsonl import append_jsonl, done_ids, record_key


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


def test_overwrite_keeps_the_umask_mode(tmp_path):
    import os
    import stat

    from cobalt.common.jsonl import write_jsonl

    old = os.umask(0o022)
    try:
        path = tmp_path / "out.jsonl"
        write_jsonl(path, [{"id": 1}])
        write_jsonl(path, [{"id": 2}], overwrite=True)
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    finally:
        os.umask(old)


def test_a_zip_bomb_is_refused_before_it_is_inflated():
    import zlib

    import pytest

    from cobalt.common.errors import DataError
    from cobalt.data.livecodebench import inflate

    bomb = zlib.compress(b"0" * (64 << 20))
    with pytest.raises(DataError, match="inflates to more than 1 MiB"):
        inflate(bomb, limit=1 << 20)
    assert inflate(zlib.compress(b"abc"), limit=1 << 20) == b"abc"


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_writer(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from cobalt.common.jsonl import write_jsonl

    out = tmp_path / "out.jsonl"
    writer = (
        "import sys, time\n"
        "from cobalt.common.jsonl import write_jsonl\n"
        "def records():\n"
        "    yield {'id': 1}\n"
        "    print('writing', flush=True)\n"
        "    time.sleep(60)\n"
        f"write_jsonl({str(out)!r}, records())\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", writer],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert child.stdout.readline() == "writing\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(f".out.jsonl.{child.pid}.") and not out.exists()

    mine = tmp_path / f".out.jsonl.{os.getpid()}.inflight.tmp"  # a live writer's: not touched
    other = tmp_path / f".other.jsonl.{child.pid}.x.tmp"  # another output's: not touched
    stale_dir = tmp_path / f".out.jsonl.{child.pid}.export.tmp"  # a directory temp (model export)
    for path in (mine, other):
        path.write_text("partial")
    stale_dir.mkdir()
    (stale_dir / "model.safetensors").write_text("partial")
    write_jsonl(out, [{"id": 2}])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, mine.name, other.name])
