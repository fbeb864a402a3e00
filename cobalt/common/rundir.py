"""The map of a run directory: every path the recipes, their reports and the tools read or write
under a run's directory, and the one marker that says a run is done.

A run is done when its report's Markdown exists: the report writes it last, atomically
(:func:`write_atomically`), after ``report.json`` and the figures, so a run interrupted while
reporting is resumed, never counted. Paths are relative to the run directory.
"""

from __future__ import annotations

from pathlib import Path

from cobalt.common.jsonl import atomic_output

STAGES = "stages.json"  # each stage's time and command (cobalt.pipeline.stages.Run)
ARM = "arm.json"  # the arm and training seed a run directory was started with
BASE = "base.json"  # the base a run made or adopted (quickstart: base.py; the paper chain: its key)
START = "start_model.json"  # the model a run trains from and the hash of its weights (quickstart)
ENGINE = "engine.yaml"  # the engine config with the run's context (the paper's chain)
EVALUATOR = "evaluator.yaml"  # the evaluator sized to the run's node (the paper's chain)
REPORT_DIR = "report"
REPORT_JSON = "report/report.json"
REPORT_MD = "report/report.md"
DONE = REPORT_MD  # written last: the run is done when it exists
GRPO_METRICS = "grpo_metrics.jsonl"  # veRL's file logger, pointed into the run directory
CHECKPOINTS = "checkpoints"
LOGS = "logs"

MODELS_SMOLLM2 = "models/smollm2"
MODELS_WARM = "models/warm"
MODELS_CONTROL = "models/control"
WARM_UP_RECORD = "warm_up.json"  # in a fine-tuned model's directory (cobalt.train.sft)

DATA = "data"
PROCEDURAL = "data/procedural"
TRAIN_PROBLEMS = "data/train_problems.jsonl"
HELDOUT_PROBLEMS = "data/heldout_problems.jsonl"
HELDOUT_UNSEEN = "data/heldout_unseen.jsonl"  # procedural.heldout_unseen_only: the instances evaluated
TRAIN_EVAL_PROBLEMS = "data/train_eval_problems.jsonl"
WARM_UP_SUBSET = "data/warm_up_subset.jsonl"
WARM_UP_STAND_INS = "data/warm_up_problems.jsonl"  # LiveCodeBench's stand-ins: the embedded problems
ALL_TRAJECTORIES = "data/trajectories_all.jsonl"
OFFLINE = "trajectories_offline"  # made without a model (procedural problems)
OFFLINE_TRAJECTORIES = f"{OFFLINE}/eval.jsonl"
TACO = "data/taco"  # the paper's chain: TACO-verified's train and dev records
LCB = "data/lcb_test6.jsonl"
BANDIT_VALIDATION = "data/bandit_validation.jsonl"
OVERLAP = "data/overlap.json"
SETTING = "data/setting.json"  # what the paper's report compares with the paper's setting


def evaluated(tag: str) -> str:
    """A self-debugging chain's evaluated trajectories (``tag``: trajectories, eval_base, ...)."""
    return f"{tag}/eval.jsonl"


def chain_file(tag: str, step: str) -> str:
    """A self-debugging chain's ``single`` or ``multi`` turn answers."""
    return f"{tag}/{step}.jsonl"


def log(command: str) -> str:
    """A stage command's output."""
    return f"{LOGS}/{command}.log"


def converted(name: str, shape: str) -> str:
    """A raw TACO (a directory) or LiveCodeBench (a file) problem file converted to problem records."""
    return f"data/{name}_taco" if shape == "taco" else f"data/{name}_lcb.jsonl"


def perturbed(split: str) -> str:
    """A problem set with perturbed public tests (the paper's chain)."""
    return f"data/taco_{split}_perturbed.jsonl"


def bandit_prompts(tag: str) -> str:
    """Bandit prompts cut from trajectories ``tag`` (the quickstart's: ``train``)."""
    return f"data/bandit_{tag}.jsonl"


def verl_data(tag: str | None = None) -> str:
    """veRL's train and test parquet (of bandit prompts ``tag``; the quickstart's: none)."""
    return "data/verl" + (f"_{tag}" if tag else "")


def figure(name: str) -> str:
    return f"{REPORT_DIR}/{name}"


def trained_model(grpo_steps: int) -> str:
    """Where GRPO saves its model after ``grpo_steps`` steps, in Hugging Face form."""
    return f"{CHECKPOINTS}/global_step_{grpo_steps}/actor/huggingface"


def is_done(root: str | Path) -> bool:
    return (Path(root) / DONE).exists()


def write_atomically(path: Path, text: str) -> Path:
    """A run's own file, replaced whole or not at all (a reader never sees half of it)."""
    with atomic_output(path, overwrite=True) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
