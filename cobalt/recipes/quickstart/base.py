"""One base for many runs: a quickstart run adopts another run's base instead of making its own.

Every arm and training seed of a design starts from the same base model (the export and the SFT
warm-up, seeded by ``warmup.seed``) and compares against the same base evaluation. A run records
its base in ``base.json`` once its base evaluations are written: the settings the base depends on
and the files that make it up (the problems, the models, the offline trajectories, the base's
self-debugging chains). A run started with ``base_run: DIR`` (``--base_run DIR``) checks that its
own settings give the same base, then hard-links (or copies) those files into its own directory;
the stages that would make them see their output and are skipped. What follows the base (GRPO or
the control's SFT and their evaluations) is the run's own.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

from cobalt.common import rundir

# settings that act only after the base: every other setting (including any added later) decides it
AFTER_THE_BASE = frozenset(
    {
        "train_seed",
        "arm",
        "control",
        "train_profile",
        "grpo_steps",
        "preregistration",
        "ray_num_cpus",
        "num_gpus",
        "base_run",
    }
)

BASE_DIRS = (
    rundir.MODELS_SMOLLM2,
    rundir.MODELS_WARM,
    rundir.DATA,
    rundir.OFFLINE,
)  # and the base's chain dirs


def base_settings(cfg) -> dict:
    """The settings the base (problems, warm-up, base evaluations) depends on."""
    return {k: v for k, v in dataclasses.asdict(cfg).items() if k not in AFTER_THE_BASE}


def base_files(root: Path, chain_tags) -> list[str]:
    """Every file of the run's base, relative to its directory."""
    dirs = [root / d for d in (*BASE_DIRS, *chain_tags)]
    return sorted(str(f.relative_to(root)) for d in dirs if d.is_dir() for f in d.rglob("*") if f.is_file())


def record_base(root: Path, cfg, chain_tags) -> None:
    """Write ``base.json`` once the base evaluations exist (kept if already there: an adopted
    base's record names where it came from)."""
    path = root / rundir.BASE
    if not path.exists():
        record = {"settings": base_settings(cfg), "files": base_files(root, chain_tags)}
        rundir.write_atomically(path, json.dumps(record, indent=1))


def read_base(base_dir: Path) -> dict:
    path = base_dir / rundir.BASE
    if not path.exists():
        raise ValueError(
            f"--base_run {base_dir}: no {rundir.BASE}; that run has not finished its base evaluation "
            "(run or resume it first)"
        )
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from e
    for key in ("settings", "files"):
        if key not in record:
            raise ValueError(f"{path}: no {key!r}")
    return record


def check_same_base(base_dir: Path, theirs: dict, cfg) -> None:
    mine = base_settings(cfg)
    differ = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    if differ:
        detail = "; ".join(f"{k}: theirs {theirs.get(k)!r}, this run's {mine.get(k)!r}" for k in differ)
        raise ValueError(f"--base_run {base_dir}: its base was made with other settings ({detail})")


def adopt_base(root: Path, cfg, base_dir: Path, log=print) -> int:
    """Link the base of the run in ``base_dir`` into the run in ``root``; returns the files linked.

    A run adopts one base only: a run directory that made its own base, or adopted another,
    is refused (its evaluations would mix two bases)."""
    base_dir = Path(base_dir).resolve()
    if base_dir == Path(root).resolve():
        raise ValueError(f"--base_run {base_dir}: that is this run's own directory")
    theirs = read_base(base_dir)
    check_same_base(base_dir, theirs["settings"], cfg)
    mine = root / rundir.BASE
    if mine.exists():
        adopted = json.loads(mine.read_text()).get("adopted_from")
        if adopted != str(base_dir):
            made = f"adopted the base of {adopted}" if adopted else "made its own base"
            raise ValueError(f"{root}: this run {made}; it cannot take {base_dir}'s (use another --run_dir)")
    elif any((root / d).exists() for d in BASE_DIRS):
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
