"""The quickstart's base (:mod:`cobalt.pipeline.base`: one base for many runs).

Every arm and training seed of a design starts from the same base model (the export and the SFT
warm-up, seeded by ``warmup.seed``) and compares against the same base evaluation. A run records
its base in ``base.json`` once its base evaluations are written: the settings the base depends on
and the files that make it up (the problems, the models, the offline trajectories, the base's
self-debugging chains). A run started with ``base_run: DIR`` (``--base-run DIR``) checks that its
own settings give the same base, then hard-links (or copies) those files into its own directory;
the stages that would make them see their output and are skipped. What follows the base (GRPO or
the control's SFT and their evaluations) is the run's own.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from cobalt.common import rundir
from cobalt.pipeline import base

# settings that act only after the base: every other setting (including any added later) decides it
AFTER_THE_BASE = frozenset(
    {
        "train_seed",
        "arm",
        "control",
        "train_profile",
        "grpo_steps",
        "save_every",
        "eval_steps",
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
    """The settings the base (problems, warm-up, base evaluations) depends on; the warm-up's seed
    as a number (a training seed's own start differs from another seed's)."""
    from cobalt.recipes.quickstart.config import warm_up_seed

    settings = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in AFTER_THE_BASE}
    if "seed" in cfg.warmup:
        settings["warmup"] = {**cfg.warmup, "seed": warm_up_seed(cfg)}
    return settings


def base_files(root: Path, chain_tags) -> list[str]:
    """Every file of the run's base, relative to its directory."""
    return base.files_under(root, (*BASE_DIRS, *chain_tags))


def record_base(root: Path, cfg, chain_tags) -> None:
    """Write ``base.json`` once the base evaluations exist (:func:`cobalt.pipeline.base.record`)."""
    base.record(root, base_settings(cfg), base_files(root, chain_tags))


def adopt_base(root: Path, cfg, base_dir: Path, log=print) -> int:
    """Link the base of the run in ``base_dir`` into the run in ``root`` (:func:`cobalt.pipeline.base.adopt`)."""
    return base.adopt(root, base_settings(cfg), base_dir, BASE_DIRS, log)


def weights_hash(model: Path) -> str:
    """sha256 over a model directory's weight files (``*.safetensors``, ``*.bin``), names and
    bytes in name order: two directories with the same weights have the same hash."""
    digest = hashlib.sha256()
    files = sorted(p for p in Path(model).iterdir() if p.suffix in (".safetensors", ".bin"))
    if not files:
        raise ValueError(f"{model}: no weight files (*.safetensors, *.bin) to hash")
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 24), b""):
                digest.update(block)
    return digest.hexdigest()


def record_start(root: Path, model: Path) -> dict:
    """Write ``start_model.json``: the model this run trains (or fine-tunes) from and its weights'
    hash, so that a design can check that every arm of a seed started from the same weights."""
    start = {"model": str(model), "sha256": weights_hash(model)}
    rundir.write_atomically(root / rundir.START, json.dumps(start, indent=1))
    return start
