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
    return base.files_under(root, (*BASE_DIRS, *chain_tags))


def record_base(root: Path, cfg, chain_tags) -> None:
    """Write ``base.json`` once the base evaluations exist (:func:`cobalt.pipeline.base.record`)."""
    base.record(root, base_settings(cfg), base_files(root, chain_tags))


def adopt_base(root: Path, cfg, base_dir: Path, log=print) -> int:
    """Link the base of the run in ``base_dir`` into the run in ``root`` (:func:`cobalt.pipeline.base.adopt`)."""
    return base.adopt(root, base_settings(cfg), base_dir, BASE_DIRS, log)
