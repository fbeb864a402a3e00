"""A CPU dress rehearsal of a GPU training profile: ``launch --profile P --rehearse``.

One GRPO step with the profile's topology and batch arithmetic (FSDP ranks, rollout tensor
parallelism, ``train_batch_size``, ``rollout.n``, mini- and micro-batches, offload, dynamic batch),
on a tiny random model of the profile's family and short prompts, with what a CPU cannot honour
turned off (``configs/rehearsal.yaml``). Every key the rehearsal changes is printed at start
with the profile's value and the rehearsal's; every other key is the profile's, so veRL accepts or
rejects the profile's numbers for its world size exactly as on the GPUs. Where the machine steps
fewer ranks than the profile's, each rank steps on a GPU rank's share of the batch (``ranks_share``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cobalt.common.config import config_dir, load_config
from cobalt.common.errors import ConfigError
from cobalt.train.profile import (
    ONLINE_METHODS,
    format_value,
    gpu_layout,
    override,
    override_value,
    verl_config,
)
from cobalt.train.sft import prompt_ids
from cobalt.train.tiny_policy import FAMILIES, WarmUpOptions, built_shape, random_policy

VERL_DEFAULT = "(veRL default)"
PATH_KEYS = (
    "data.train_files",
    "data.val_files",
    "actor_rollout_ref.model.path",
    "trainer.default_local_dir",
)


@dataclasses.dataclass
class Rehearsal:
    profile: object  # cobalt.train.launch.Profile, with the rehearsal laid over it
    work: Path  # data/rehearsal/<profile>: demo data, tiny model, tiled prompts
    family: str
    changes: list[tuple[str, str, str]]  # (key, profile's value, rehearsal's value)
    kept: list[tuple[str, str]]
    model: WarmUpOptions
    demo_limit: int
    prompts: Path  # the parquet whose prompts stand in for the profile's data (the demo set's)
    layout: tuple[int, int]  # the profile's (GPUs per node, nodes)
    ranks: int  # FSDP ranks the step runs on: the profile's, or fewer where memory is short
    # keys cut to the share of ``ranks`` in the profile's batch: key -> (profile's value, step's value)
    batch_share: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)


def model_family(model_path: str) -> str:
    """The transformers model type of the profile's model: from its config.json when it is a
    local directory, else from the hub name (``Qwen/Qwen3-8B`` → qwen3)."""
    config = Path(model_path) / "config.json"
    if config.is_file():
        family = json.loads(config.read_text()).get("model_type", "")
    else:
        name = model_path.lower()
        family = next((f for f in ("qwen3", "qwen2", "llama") if f in name), "")
        family = family or ("qwen2" if "qwen" in name else "")
    if family not in FAMILIES:
        raise ConfigError(
            f"actor_rollout_ref.model.path={model_path}: cannot rehearse model family {family or '?'!r}; "
            f"a tiny random model is built for {', '.join(FAMILIES)}"
        )
    return family


def plan(profile, extra: list[str] = (), prompts: str | None = None) -> Rehearsal:
    """The profile with ``configs/rehearsal.yaml`` laid over it, and the list of changes.
    ``prompts``: a veRL parquet of the user's whose prompts fill the batch (the paper chain's),
    tiled into a file beside it; by default the demo set's."""
    spec = load_config(config_dir() / "rehearsal.yaml")
    # absolute: the trainer's Ray workers may run elsewhere than here (a cluster this launcher joins)
    work = Path("data/rehearsal").resolve() / profile.name
    run = time.strftime("%Y%m%d-%H%M%S")  # each rehearsal checkpoints into a directory of its own
    fill = {"profile": profile.name, "work": str(work), "run": run}
    overrides = {key: _filled(value, fill) for key, value in spec["overrides"].items()}
    for key in PATH_KEYS:
        overrides[key] = str(Path(overrides[key]).resolve())
    layout = gpu_layout([override(k, v) for k, v in profile.overrides.items()])
    ranks = ranks_that_fit(
        layout[0] * layout[1], machine_memory_gib(), float(spec["memory_per_rank_gib"]), machine_cores()
    )
    batch_share = {}
    if ranks < layout[0] * layout[1]:
        overrides |= {"trainer.n_gpus_per_node": ranks, "trainer.nnodes": 1}
        chosen = (*BATCH_KEYS, "trainer.n_gpus_per_node", "trainer.nnodes")
        if all(override_value(list(extra), key) is None for key in chosen):  # else the user's numbers
            batch_share = ranks_share(profile.overrides, layout[0] * layout[1] // ranks)
        overrides |= {key: step for key, (_, step) in batch_share.items()}
    for key in [key for key in overrides if key.endswith(".num_workers") and key in profile.overrides]:
        # fewer helper workers than the profile's, never more
        overrides[key] = min(int(overrides[key]), int(profile.overrides[key]))
    if prompts:
        tiled = str(Path(prompts).with_name(f"rehearsal_{profile.name}.parquet"))
        overrides |= {"data.train_files": tiled, "data.val_files": tiled}
    model_path = override_value(list(extra), "actor_rollout_ref.model.path") or str(
        profile.overrides.get("actor_rollout_ref.model.path", "")
    )
    family = model_family(model_path)
    changes, kept = [], []
    for key in dict.fromkeys([*profile.overrides, *overrides]):
        before = format_value(profile.overrides[key]) if key in profile.overrides else VERL_DEFAULT
        if key in overrides and format_value(overrides[key]) != before:
            changes.append((key, before, format_value(overrides[key])))
        else:
            kept.append((key, before))
    for key, value in spec["env"].items():
        before = str(profile.env.get(key, "(unset)"))
        if before != str(value):
            changes.append((f"env {key}", before, str(value)))
    rehearsed = dataclasses.replace(
        profile,
        env={**profile.env, **spec["env"]},
        ray=dict(spec["ray"]),
        prepare={},
        overrides={**profile.overrides, **overrides},
    )
    # a single-turn profile trains on turn-0 prompts, an online one on its rows: the demo set has both
    demo = work.parent / "demo"
    source = Path(prompts) if prompts else demo / demo_prompts(profile)
    return Rehearsal(
        rehearsed,
        work,
        family,
        changes,
        kept,
        WarmUpOptions(**spec.get("model", {})),
        int(spec.get("demo_limit", 12)),
        source,
        layout,
        ranks,
        batch_share,
    )


BATCH_KEYS = ("data.train_batch_size", "actor_rollout_ref.actor.ppo_mini_batch_size")


def ranks_share(profile_overrides: dict, fewer: int) -> dict[str, tuple[int, int]]:
    """The batch and mini-batch (prompts) divided by ``fewer``, the factor by which the step's ranks
    are fewer than the profile's: each rank then rolls out, scores and updates on exactly a GPU
    rank's share, in the same number of mini- and micro-batches. Empty (the whole batch, each rank
    doing more) where the profile's numbers do not divide by ``fewer``."""
    values = {key: profile_overrides.get(key) for key in BATCH_KEYS}
    if any(value is None or int(value) % fewer for value in values.values()):
        return {}
    return {key: (int(value), int(value) // fewer) for key, value in values.items()}


SHARDED_RANKS = 2  # the fewest ranks a multi-rank profile steps on where memory holds them


def ranks_that_fit(ranks: int, memory_gib: float, per_rank_gib: float, cores: int | None = None) -> int:
    """The most of the profile's ``ranks`` the machine steps well, as a divisor of ``ranks`` so that
    the profile's batches still divide evenly: no more than ``memory_gib`` holds with their rollout
    replicas, and no more than its ``cores`` (a rank and its replica take turns on a core; more
    ranks only time-slice, docs/benchmarks.md), yet
    ``SHARDED_RANKS`` where memory holds them, so that the step still shards; at least 1."""
    most = max(1, int(memory_gib // per_rank_gib))
    if cores is not None:
        most = min(most, max(cores, SHARDED_RANKS))
    return max(d for d in range(1, ranks + 1) if ranks % d == 0 and d <= most)


def machine_memory_gib() -> float:
    import psutil

    return psutil.virtual_memory().total / 2**30


def machine_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_full_world(rehearsal: Rehearsal, overrides: list[str], log=print) -> str | None:
    """When the step runs on fewer ranks than the profile's: veRL's own checks of the batch
    arithmetic (``validate_config``, as main_ppo runs it) at the profile's world size. Returns
    veRL's refusal, or None."""
    per_node, nodes = rehearsal.layout
    if rehearsal.ranks == per_node * nodes:
        return None
    # the profile's batch where the rehearsal cut it; a later override (the user's) still wins
    cut = {override(key, step): override(key, whole) for key, (whole, step) in rehearsal.batch_share.items()}
    full = [cut.get(item, item) for item in overrides]
    full += [override("trainer.n_gpus_per_node", per_node), override("trainer.nnodes", nodes)]
    error = verl_batch_error(full)
    if error is None:
        log(
            f"veRL's validate_config accepts the profile's numbers at its {per_node * nodes} ranks; the step "
            f"runs on {rehearsal.ranks}, the most this machine steps well ({machine_memory_gib():.0f} GiB at "
            f"memory_per_rank_gib in configs/rehearsal.yaml; {machine_cores()} cores, one rank per core, at "
            f"least {SHARDED_RANKS})"
        )
        if rehearsal.batch_share:
            shares = ", ".join(
                f"{key} {whole} -> {step}" for key, (whole, step) in rehearsal.batch_share.items()
            )
            log(f"each of the {rehearsal.ranks} ranks steps on a GPU rank's share of the batch: {shares}")
    return error


def verl_batch_error(overrides: list[str]) -> str | None:
    """veRL's ``validate_config`` on its ``ppo_trainer`` config composed with ``overrides``: the
    message it raises (one line), or None."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = verl_config(overrides)
    try:
        validate_config(config, need_reference_policy(config), need_critic(config))
    except (AssertionError, ValueError) as e:
        return " ".join(str(e).split()) or type(e).__name__
    return None


def demo_prompts(profile) -> str:
    """The demo set's parquet (relative to it) whose prompts stand in for the profile's data."""
    if profile.method in ONLINE_METHODS:
        return ONLINE_DEMO
    single_turn = "single_turn" in str(profile.overrides.get("data.train_files", ""))
    return "single_turn/train.parquet" if single_turn else "train.parquet"


ONLINE_DEMO = "online/train.parquet"  # the demo problems as the online methods' rows


def _filled(value, fill: dict[str, str]):
    return value.format(**fill) if isinstance(value, str) else value


def describe(rehearsal: Rehearsal, log=print) -> None:
    """One line per key: what the rehearsal changed (profile → rehearsal) and what it kept."""
    log(f"rehearsing profile {rehearsal.profile.name} on CPU (model family {rehearsal.family})")
    for key, before, after in rehearsal.changes:
        log(f"  changed {key}: {before} -> {after}")
    for key, value in rehearsal.kept:
        log(f"  kept    {key}: {value}")


def prepare(rehearsal: Rehearsal, overrides: list[str], log=print) -> list[str]:
    """Demo data, the tiny random model and the rehearsal prompts, unless already there; returns the
    overrides, with the prompt length (and the rollout's context) raised to the prompts' when the
    rehearsal's own fits too few of them (real statements run to thousands of characters)."""
    demo = rehearsal.work.parent / "demo"
    if not (demo / "train.parquet").exists():
        cmd = [
            sys.executable,
            "-m",
            "cobalt.data.demo",
            "--out",
            str(demo),
            "--limit",
            str(rehearsal.demo_limit),
        ]
        log(f"preparing demo data: {' '.join(cmd)}")
        subprocess.run(cmd, check=True)
    if rehearsal.prompts == demo / ONLINE_DEMO and not rehearsal.prompts.exists():
        from cobalt.data.verl_rows import convert, online_row

        problems = demo / "problems"
        convert(
            problems / "train.jsonl",
            problems / "dev.jsonl",
            (demo / ONLINE_DEMO).parent,
            False,
            make=online_row,
        )
    model_dir = Path(override_value(overrides, "actor_rollout_ref.model.path"))
    train_file = Path(override_value(overrides, "data.train_files"))
    drop_stale_model(model_dir, rehearsal, train_file, log)
    if not (model_dir / "config.json").exists():
        log(f"preparing a tiny random {rehearsal.family} model in {model_dir}")
        random_policy(model_dir, rehearsal.model, rehearsal.family, data=demo / "train.parquet")
    max_tokens = int(override_value(overrides, "data.max_prompt_length"))
    if not train_file.exists():
        batch = int(override_value(overrides, "data.train_batch_size") or 1)
        fitted, kept, total = fitted_prompt_length(rehearsal.prompts, model_dir, max_tokens)
        rows = tile_prompts(rehearsal.prompts, model_dir, fitted, 2 * batch, train_file)
        log(f"rehearsal prompts: {rows} rows of {kept} distinct prompts of {total} ({rehearsal.prompts}, "
            f"<= {fitted} tokens; {total - kept} longer ones left out) in {train_file}")  # fmt: skip
    longest = max(prompt_lengths(train_file, model_dir))
    if longest > max_tokens:
        length = -(-longest // PROMPT_LENGTH_STEP) * PROMPT_LENGTH_STEP
        response = int(override_value(overrides, "data.max_response_length") or 0)
        log(
            f"rehearsal prompt length set from the data: {length} tokens (the rehearsal's {max_tokens} fit too few)"
        )
        overrides = [*overrides, override("data.max_prompt_length", length),
                     override("actor_rollout_ref.rollout.max_model_len", length + response)]  # fmt: skip
    if rehearsal.profile.method in ONLINE_METHODS:
        log(
            "an online rehearsal's context is sized for the turn-0 prompts: most episodes are cut after "
            "their first turn, one row per session (later turns' rows: GRPO-MT's learning check)"
        )
    return overrides


def drop_stale_model(model_dir: Path, rehearsal: Rehearsal, train_file: Path, log=print) -> None:
    """Remove a tiny model an earlier rehearsal built in another shape than configs/rehearsal.yaml
    asks for today, and the prompts tiled with its tokenizer: both are rebuilt. Both are the
    rehearsal's own outputs (``data/rehearsal/<profile>/policy``, ``rehearsal_<profile>.parquet``)."""
    if not (model_dir / "config.json").exists():
        return
    built = built_shape(model_dir)
    asked = (rehearsal.family, rehearsal.model.hidden_size, rehearsal.model.layers)
    if built == asked:
        return
    log(f"the tiny model in {model_dir} is {shape_text(built)}, configs/rehearsal.yaml asks for "
        f"{shape_text(asked)}: rebuilding it and the prompts tiled with its tokenizer")  # fmt: skip
    shutil.rmtree(model_dir)
    if train_file == Path(rehearsal.profile.overrides["data.train_files"]):  # not a file the user named
        train_file.unlink(missing_ok=True)


def shape_text(shape: tuple) -> str:
    family, width, layers = shape
    return f"{family}, {width} wide, {layers} layer{'s' if layers != 1 else ''}"


PROMPT_LENGTH_STEP = 64
LEAST_PROMPTS = 8  # distinct prompts a rehearsal step is filled with, where the data has them


def prompt_lengths(source: Path, model_dir: Path) -> list[int]:
    import pandas as pd
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    return [
        len(prompt_ids(tokenizer, prompt)) for prompt in pd.read_parquet(source, columns=["prompt"])["prompt"]
    ]


def fitted_prompt_length(source: Path, model_dir: Path, max_tokens: int, least: int = LEAST_PROMPTS):
    """``(length, prompts kept, prompts)``: ``max_tokens`` when it holds ``least`` of the prompts (or
    all), else the length of the ``least``-th shortest: the shortest prompts are kept, the rest
    left out."""
    lengths = sorted(prompt_lengths(source, model_dir))
    if not lengths:
        raise ConfigError(f"{source}: no prompts to rehearse with")
    needed = lengths[min(least, len(lengths)) - 1]
    length = max(max_tokens, needed)
    return length, sum(n <= length for n in lengths), len(lengths)


def tile_prompts(source: Path, model_dir: Path, max_tokens: int, rows: int, out: Path) -> int:
    """The prompts of ``source`` that fit ``max_tokens``, repeated to ``rows`` rows."""
    import pandas as pd
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    frame = pd.read_parquet(source)
    fits = [len(prompt_ids(tokenizer, prompt)) <= max_tokens for prompt in frame["prompt"]]
    frame = frame[fits]
    if frame.empty:
        raise ConfigError(f"{source}: no prompt fits data.max_prompt_length={max_tokens}")
    tiled = frame.iloc[[i % len(frame) for i in range(rows)]].reset_index(drop=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tiled.to_parquet(out)
    return len(tiled)


def metrics_file(overrides: list[str]) -> Path:
    """veRL's file logger writes the step's metrics here (unless VERL_FILE_LOGGER_PATH is set);
    the directory is made now, as the logger opens the file before the first checkpoint."""
    directory = Path(override_value(overrides, "trainer.default_local_dir")).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    return directory / "metrics.jsonl"


def report(overrides: list[str], metrics_file: Path, log=print) -> dict:
    """What the step did: its metrics, the world size and the checkpoint it saved."""
    lines = metrics_file.read_text().splitlines() if metrics_file.exists() else []
    step = json.loads(lines[-1]) if lines else {"step": None, "data": {}}
    checkpoint = Path(override_value(overrides, "trainer.default_local_dir"))
    latest = (checkpoint / "latest_checkpointed_iteration.txt").read_text().strip()
    actor = checkpoint / f"global_step_{latest}" / "actor"
    summary = {
        "step": step["step"],
        "world_size": step["data"].get("trainer/world_size"),
        "rollout_replicas": step["data"].get("trainer/rollout_replicas"),
        "checkpoint": str(actor),
        "model_shards": len(list(actor.glob("model_world_size_*_rank_*.pt"))),
        "huggingface_model": (actor / "huggingface" / "config.json").is_file(),
        "metrics": {k: v for k, v in step["data"].items() if k.startswith(KEY_METRICS)},
    }
    log("rehearsal step: " + json.dumps(summary, indent=1))
    return summary


KEY_METRICS = ("actor/", "critic/score/", "response_length/mean", "timing_s/step", "trainer/", "perf/")
