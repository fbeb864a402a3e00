"""One base for many runs: a run takes another run's base instead of making its own.

A recipe's base is what comes before training: the problems, the base model (and its warm-up) and
the base model's evaluation. A run records its base in ``base.json`` once its base evaluations are
written: the settings the base depends on and the files that make it up. A run started with
``--base-run DIR`` checks that its own settings give the same base, then hard-links (or copies)
those files into its own directory; the stages that would make them see their output and are
skipped. What follows the base (training and the trained model's evaluation) is the run's own.
The recipes say which settings and files their base is (``cobalt.recipes.quickstart.base``, the
paper chain's ``base_key``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from cobalt.common import rundir


def files_under(root: Path, parts) -> list[str]:
    """Every file of the given files and directories of a run, relative to its directory."""
    found = []
    for part in parts:
        path = root / part
        found += (
            [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else []
        )
    return sorted(str(f.relative_to(root)) for f in found)


def record(root: Path, settings: dict, files: list[str]) -> None:
    """Write ``base.json`` (kept if already there: an adopted base's record names where it came from)."""
    path = root / rundir.BASE
    if not path.exists():
        rundir.write_atomically(path, json.dumps({"settings": settings, "files": files}, indent=1))


def read(base_dir: Path) -> dict:
    path = base_dir / rundir.BASE
    if not path.exists():
        raise ValueError(
            f"--base-run {base_dir}: no {rundir.BASE}; that run has not finished its base evaluation "
            "(run or resume it first)"
        )
    try:
        found = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from e
    for key in ("settings", "files"):
        if key not in found:
            raise ValueError(f"{path}: no {key!r}")
    return found


def check_same(base_dir: Path, theirs: dict, mine: dict) -> None:
    differ = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    if differ:
        detail = "; ".join(f"{k}: theirs {theirs.get(k)!r}, this run's {mine.get(k)!r}" for k in differ)
        raise ValueError(f"--base-run {base_dir}: its base was made with other settings ({detail})")


def adopt(root: Path, settings: dict, base_dir: Path, own_parts, log=print) -> int:
    """Link the base of the run in ``base_dir`` into the run in ``root`` when its settings are
    ``settings``; returns the files linked.

    A run adopts one base only: a run directory that made its own base (any of ``own_parts``
    exists), or adopted another, is refused (its evaluations would mix two bases)."""
    base_dir = Path(base_dir).resolve()
    if base_dir == Path(root).resolve():
        raise ValueError(f"--base-run {base_dir}: that is this run's own directory")
    theirs = read(base_dir)
    check_same(base_dir, theirs["settings"], settings)
    mine = root / rundir.BASE
    if mine.exists():
        adopted = json.loads(mine.read_text()).get("adopted_from")
        if adopted != str(base_dir):
            made = f"adopted the base of {adopted}" if adopted else "made its own base"
            raise ValueError(f"{root}: this run {made}; it cannot take {base_dir}'s (use another --run-dir)")
    elif any((root / d).exists() for d in own_parts):
        raise ValueError(f"{root}: this run has base files of its own; it cannot take {base_dir}'s")
    linked = 0
    for name in theirs["files"]:
        source, target = base_dir / name, root / name
        if target.exists():
            continue
        if not source.is_file():
            raise ValueError(f"{base_dir / rundir.BASE}: lists {name}, which is gone from that run")
        link_or_copy(source, target)
        linked += 1
    rundir.write_atomically(mine, json.dumps(dict(theirs, adopted_from=str(base_dir)), indent=1))
    log(f"base: {linked} file(s) taken from {base_dir} ({len(theirs['files'])} in its base)")
    return linked


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link where the file system allows one, else a copy; the target appears whole or not
    at all (a stage that finds it treats it as done)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.adopting")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copy2(source, tmp)
    tmp.replace(target)
