"""The paper's chain, one command: ``bash scripts/reproduce_paper.sh --profile P --taco T --lcb L``.

    TACO-verified T → problems (train / TACO-dev) and their perturbed twins; LiveCodeBench L → problems
      (the authors' released train and dev files as given); training problems found in an
      evaluation set (compared as the files ship them, before the first stage) stop the run
      (cobalt/data/overlap.py; --allow-overlap)
    → trajectories of the base model on the training problems (16 conversations, 2 feedback
      turns), on the true and on the perturbed public tests (or --trajectories FILE)
    → bandit prompts (dynamic sampling, max-variance 4, ≤ 3 turns), perturbed rows mixed in;
      validation prompts from the base model's TACO-dev trajectories
    → veRL parquet → GRPO with training profile P (launch; --rehearse: one step, tiny model)
    → evaluation of base and trained: 8 feedback turns, 16 conversations, Pass@1 per turn on
      hidden tests, on LiveCodeBench and on TACO-dev with perturbed public tests
    → report/ beside the paper's figures for P where the setting matches (data/setting.json)

Settings: ``configs/paper.yaml`` (``--rehearse``: ``configs/paper_rehearsal.yaml``, the same chain cut
down for a CPU, SmolLM2 standing in for the base model). Every stage is one of the project's
command lines, recorded in ``stages.json``; re-running the command resumes the run. A single-turn
profile trains on turn-0 prompts of the problems themselves: it has no trajectory stages.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import ClassVar

import yaml

from cobalt.common import rundir
from cobalt.common.argtypes import caller_path, existing_file, positive_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.config import config_path, from_dict, load_config
from cobalt.common.errors import ConfigError, DataError
from cobalt.common.jsonl import read_jsonl
from cobalt.data.sources import file_shape
from cobalt.pipeline import base, stages, steps
from cobalt.pipeline.stages import (
    ROOT,
    Chain,
    Run,
    line_count,
    pick_run_dir,
    run_to_report,
    sampling,
    self_debug_side_by_side,
    stop_engine,
)
from cobalt.pipeline.steps import PERTURBED_FIELD
from cobalt.recipes.paper import preflight
from cobalt.train.profile import (
    METHODS,
    ONLINE_METHODS,
    check_method,
    load_profile,
    method_name,
    profile_model,
    single_turn,
)


@dataclasses.dataclass(frozen=True)
class PaperConfig:
    MAX_TOKENS: ClassVar[int] = 6144  # an answer's token budget unless sampling.max_tokens says
    model: str | None = None
    sampling: dict = dataclasses.field(default_factory=dict)
    taco_dev_ratio: float = 0.1
    max_problems: int | None = None  # the first N problems of each file: training and evaluation sets
    max_model_len: int | None = None  # the engine's context; None: the engine config's
    trajectory_samples: int = 16
    trajectory_turns: int = 2
    bandit_turns: int = 3
    perturbed_ratio: float = 0.25
    eval_samples: int = 16
    eval_turns: int = 8
    engine_config: str = "engine_paper"
    evaluator_config: str = "evaluator"
    rehearse: bool = False
    paper: dict = dataclasses.field(default_factory=dict)
    grpo_overrides: list = dataclasses.field(default_factory=list)  # hydra overrides (CLI: after --)


@dataclasses.dataclass(frozen=True)
class Inputs:
    profile: str  # configs/train/<profile>.yaml
    taco: str
    lcb: str
    trajectories: str | None = None
    address: str | None = None
    num_gpus: int | None = None
    taco_dev: str | None = None
    allow_overlap: bool = False  # train even on problems that are also evaluated (experiments only)
    trajectories_perturbed: str | None = None
    method: str = "cobalt"  # what the profile trains (cobalt.train.profile.METHODS)
    base_run: str | None = None  # a run of the chain whose problems and base evaluation this one takes

    @property
    def online(self) -> bool:
        """GRPO-MT or VeRPO-MT: trained on the problems themselves, no trajectories nor bandit prompts."""
        return self.method in ONLINE_METHODS


# ------------------------------------------------------------------------------------- problems
def problems(run: Run, inputs: Inputs) -> dict[str, Path]:
    """TACO-verified → train / dev records, LiveCodeBench → records, and the perturbed twins of
    train (trajectories with wrong feedback) and dev (the paper's TACO-dev evaluation). The
    authors' processed train file with their dev file (``--taco-dev``) is used as given."""
    cfg = run.cfg
    taco_dir = run.root / rundir.TACO
    taco = {
        "train": taco_dir / "taco_verified_filtered_train.jsonl",
        "dev": taco_dir / "taco_verified_filtered_dev.jsonl",
    }
    released = file_shape(inputs.taco) == "problems"  # already processed (e.g. the authors' released set)
    if released and inputs.taco_dev:  # the authors' train and dev files: used as they are
        run.stage(
            "released TACO train (as given)",
            taco["train"].exists,
            lambda: copy_records(run, inputs.taco, taco["train"]),
        )
    elif released:
        run.stage(
            "processed TACO → train / dev",
            taco["dev"].exists,
            lambda: split_processed(run, inputs.taco, taco),
        )
    else:
        steps.taco_to_problems(
            run, "TACO-verified → problems", "taco", inputs.taco, taco_dir, cfg.taco_dev_ratio
        )
    lcb = steps.lcb_to_problems(run, "LiveCodeBench → problems", "lcb", inputs.lcb, run.root / rundir.LCB)
    files = {"train": taco["train"], "lcb": lcb} | (
        {} if released and inputs.taco_dev else {"dev": taco["dev"]}
    )
    if cfg.max_problems:
        files = {name: first_lines(run, path, cfg.max_problems) for name, path in files.items()}
    train = () if inputs.online else ("train",)  # the trajectories with wrong feedback: COBALT's only
    if inputs.taco_dev:  # a perturbed validation set of one's own (e.g. the authors' TACO-Cobalt-PTB)
        files["dev"] = Path(inputs.taco_dev)
        if PERTURBED_FIELD in next(iter(read_jsonl(inputs.taco_dev)), {}):
            return files | {"dev_perturbed": files["dev"], **perturbed(run, files, train)}
    return files | perturbed(run, files, (*train, "dev"))


def perturbed(run: Run, files: dict[str, Path], names: tuple[str, ...]) -> dict[str, Path]:
    """``run_perturbation.py`` on each named problem file: ``{name}_perturbed`` → its output."""
    out_files = {}
    for name in names:
        out = run.root / rundir.perturbed(name)
        run.stage(
            f"perturbed public tests ({name})",
            out.exists,
            lambda name=name, out=out: run.command(
                f"perturb_{name}",
                [
                    *steps.python(ROOT / "preproc/run_perturbation.py"),
                    "-i",
                    files[name],
                    "-o",
                    out,
                    "--seed",
                    42,
                ],
            ),
        )
        out_files[f"{name}_perturbed"] = out
    return out_files


def split_processed(run: Run, source: str, out: dict[str, Path]) -> None:
    """Problem records split as ``preproc_taco.py`` splits (seed 42, ``taco_dev_ratio`` to dev)."""
    from cobalt.common.jsonl import write_jsonl
    from cobalt.data.taco import split_train_dev
    from cobalt.infer.records import load_problems

    train, dev = split_train_dev(load_problems(source), run.cfg.taco_dev_ratio, seed=42)
    for name, records in (("train", train), ("dev", dev)):
        write_jsonl(run.path(str(out[name].relative_to(run.root))), records)


def refuse_empty(files: dict[str, Path], trains_on_perturbed: bool) -> None:
    """A problem set the filters emptied (TACO's: fewer than 8 tests; the perturbation's: fewer
    than 2 distinct public outputs) stops the run here, in one line; every later stage would
    otherwise skip on the empty input and fail far from it."""
    logs = {
        "train": "taco",
        "dev": "taco",
        "lcb": "lcb",
        "train_perturbed": "perturb_train",
        "dev_perturbed": "perturb_dev",
    }
    needed = (
        ["train", "dev", "lcb"] + (["train_perturbed"] if trains_on_perturbed else []) + ["dev_perturbed"]
    )
    for name in needed:
        if line_count(files[name]) == 0:
            raise ValueError(
                f"{files[name]}: no {name} problems are left after preprocessing "
                f"(logs/{logs[name]}.log says why); give other input files and start a new "
                "run (--new)"
            )


def refuse_overlap(run: Run, inputs: Inputs) -> list:
    """Training problems compared with every evaluation set as the input files ship them
    (``cobalt.data.overlap``), before the first stage: any overlap stops the run in one line,
    unless ``--allow-overlap``; every pair found is first written to ``data/overlap.json``."""
    from cobalt.data.overlap import chain_problems
    from cobalt.data.overlap import refuse_overlap as check

    train, evaluations = chain_problems(
        inputs.taco,
        inputs.lcb,
        taco_dev=inputs.taco_dev,
        dev_ratio=run.cfg.taco_dev_ratio,
        max_problems=run.cfg.max_problems,
    )
    found = check(train, evaluations, inputs.allow_overlap, run.path(rundir.OVERLAP), inputs.taco)
    sizes = ", ".join(f"{name} {len(problems)}" for name, problems in evaluations.items())
    run.log(f"overlap check: {len(train)} training problems against {sizes}: {len(found)} pair(s) found")
    if found:
        run.log(f"--allow-overlap: {len(found)} training problem(s) are also evaluated")
    return found


def engine_context(cfg: PaperConfig) -> int | None:
    """The engine's ``max_model_len``; ``None``: the model's own context window."""
    engine = load_config(cfg.engine_config)
    return cfg.max_model_len or ((engine.get("llm") or {}).get("engine_kwargs") or {}).get("max_model_len")


def with_engine_context(cfg: PaperConfig, root: Path) -> PaperConfig:
    """The chain's settings with ``max_model_len`` in its engine config: ``<run>/engine.yaml``, which
    extends the configured one, is the engine config of every stage."""
    if not cfg.max_model_len:
        return cfg
    engine = {
        "extends": str(config_path(cfg.engine_config).resolve()),
        "llm": {"engine_kwargs": {"max_model_len": cfg.max_model_len}},
    }
    path = rundir.write_atomically(root / rundir.ENGINE, yaml.safe_dump(engine, sort_keys=False))
    return dataclasses.replace(cfg, engine_config=str(path))


def with_sized_evaluator(cfg: PaperConfig, inputs: Inputs, root: Path) -> PaperConfig:
    """The chain's settings with a node-sized evaluator (``num_replicas: auto``, configs/
    evaluator_node.yaml) fixed for the run: ``<run>/evaluator.yaml`` extends it with the replicas
    this node's CPUs hold beyond what the profile's training takes (preflight.training_cpus), and
    is the evaluator config of every stage. A resumed run keeps the size it started with."""
    from cobalt.serve.evaluator import node_cpus, serve_config, sized_to_node

    opts = serve_config(cfg.evaluator_config)
    if not opts.auto:
        return cfg
    path = root / rundir.EVALUATOR
    if not path.exists():
        reserve = preflight.training_cpus(load_profile(inputs.profile).overrides, cfg.grpo_overrides)
        sized, line = sized_to_node(opts, node_cpus(), reserve)
        evaluator = {
            "extends": str(config_path(cfg.evaluator_config).resolve()),
            "serve": {"num_replicas": sized.num_replicas},
        }
        rundir.write_atomically(path, f"# {line}\n" + yaml.safe_dump(evaluator, sort_keys=False))
        print(f"[paper] the evaluator: {line} ({path})", flush=True)
    return dataclasses.replace(cfg, evaluator_config=str(path))


def trajectory_shape(path: Path | None) -> dict:
    """Conversations per problem and feedback turns of the trajectories trained on (read from
    their first record: given ones are what they are, whatever the config says)."""
    first = next(iter(read_jsonl(path)), None) if path else None
    if not first or not first.get("all_pass_rates"):
        return {"trajectory_samples": None, "trajectory_turns": None}
    rates = first["all_pass_rates"]
    return {"trajectory_samples": len(rates), "trajectory_turns": len(rates[0]) - 1}


def write_setting(run: Run, inputs: Inputs, model: Path, evaluated: dict[str, Path]) -> dict:
    """``data/setting.json``: what the report compares with the paper's setting
    (:mod:`cobalt.eval.comparability`)."""
    cfg = run.cfg
    overlap = run.root / rundir.OVERLAP
    setting = {
        "method": inputs.method,
        "split": split_of(inputs),
        "model": str(model),
        "paper_model": profile_model(inputs.profile),
        "rehearsal": cfg.rehearse,
        "eval_samples": cfg.eval_samples,
        "eval_turns": cfg.eval_turns,
        **trajectory_shape(evaluated.get("trajectories")),
        "given_trajectories": bool(inputs.trajectories),
        "context": engine_context(cfg),
        "max_problems": cfg.max_problems,
        "perturbed_mix": None
        if single_turn(inputs.profile) or inputs.online
        else "trajectories_perturbed" in evaluated,
        "perturbed_ratio": cfg.perturbed_ratio,
        "overlaps": len(json.loads(overlap.read_text())["overlaps"]) if overlap.exists() else 0,
    }
    rundir.write_atomically(run.root / rundir.SETTING, json.dumps(setting, indent=1))
    return setting


def copy_records(run: Run, source: str, out: Path) -> None:
    """Problem records as given, every one and in order (checked as problem records)."""
    from cobalt.common.jsonl import write_jsonl
    from cobalt.infer.records import load_problems

    write_jsonl(run.path(str(out.relative_to(run.root))), load_problems(source))


def split_of(inputs: Inputs) -> str:
    """How train and TACO-dev were made: ``released`` (the authors' files as given) or
    ``deterministic`` (this chain's seed-42 split, whose TACO-dev is not the paper's)."""
    return "released" if inputs.taco_dev and file_shape(inputs.taco) == "problems" else "deterministic"


def first_lines(run: Run, path: Path, n: int) -> Path:
    out = path.with_name(f"{path.stem}.first{n}.jsonl")
    if not out.exists():
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:n]
        run.path(str(out.relative_to(run.root))).write_text("".join(line + "\n" for line in lines))
    return out


# ---------------------------------------------------------------------------------- trajectories
def trajectory_chains(run: Run, files: dict[str, Path]) -> dict[str, Chain]:
    """The base model's self-debugging on the training problems, with true and with perturbed
    public tests: the offline trajectories COBALT learns from."""
    cfg = run.cfg
    return {
        "trajectories": Chain(files["train"], cfg.trajectory_samples, cfg.trajectory_turns),
        "trajectories_perturbed": Chain(
            files["train_perturbed"], cfg.trajectory_samples, cfg.trajectory_turns, PERTURBED_FIELD
        ),
    }


def given_trajectories(run: Run, path: Path, tag: str = "trajectories") -> Path:
    """Given trajectories (``--trajectories``, ``--trajectories-perturbed``), with their hidden-test
    pass rates (evaluated here unless they carry them)."""
    first = next(iter(read_jsonl(path)), {})
    if "all_pass_rates" in first:
        return path
    out = run.root / rundir.evaluated(tag)
    what = "given trajectories" + ("" if tag == "trajectories" else " (perturbed)")
    run.stage(
        f"{what}: hidden tests",
        lambda: line_count(out) == line_count(path),
        lambda: run.command(
            f"{tag}_eval",
            [
                ROOT / "scripts/eval_multi_turn.py",
                "-i",
                path,
                "-o",
                run.path(rundir.evaluated(tag)),
                "--address",
                run.address,
            ],
        ),
    )
    return out


def given(run: Run, inputs: Inputs) -> dict[str, Path]:
    """The given trajectories by tag: the perturbed ones only with ``--trajectories-perturbed`` (without,
    no perturbed rows are mixed in, and the report says so)."""
    out = {"trajectories": given_trajectories(run, Path(inputs.trajectories))}
    if inputs.trajectories_perturbed:
        out["trajectories_perturbed"] = given_trajectories(
            run, Path(inputs.trajectories_perturbed), "trajectories_perturbed"
        )
    else:
        run.log("--trajectories without --trajectories-perturbed: no perturbed rows are mixed in")
    return out


# ---------------------------------------------------------------------------------- training data
def training_data(
    run: Run,
    inputs: Inputs,
    files: dict[str, Path],
    evaluated: dict[str, Path],
    tokenizer: str,
    validation_trajectories: Path | None = None,
) -> Path:
    """The veRL parquet GRPO trains on: bandit prompts of the trajectories with the perturbed ones
    mixed in (multi-turn), or the training problems' turn-0 prompts (single-turn). The validation
    prompts (``--is_test``) come from ``validation_trajectories``, the base model's evaluated
    trajectories on TACO-dev, problems never trained on (the authors cut theirs from the
    validation set's trajectories the same way). An online method trains on one row per training
    problem, validated on TACO-dev's."""
    if inputs.online:
        out = run.root / rundir.verl_data("online")
        return steps.online_rows(run, files["train"], files["dev"], out) / "train.parquet"
    if single_turn(inputs.profile):
        out = run.root / rundir.verl_data("single_turn")
        run.stage(
            "veRL parquet (turn-0 prompts)",
            lambda: (out / "train.parquet").exists(),
            lambda: run.command(
                "parquet",
                [
                    *steps.python(ROOT / "preproc/verl_preproc_single_turn.py"),
                    "--local_dir",
                    out,
                    "--train_data_file",
                    files["train"],
                    "--val_data_file",
                    files["dev"],
                ],
            ),
        )
        return out / "train.parquet"
    prompts = {tag: bandit_prompts(run, tag, source, tokenizer) for tag, source in evaluated.items()}
    if validation_trajectories is None:
        raise ValueError(
            "the validation prompts need the trajectories of problems not trained on (TACO-dev's)"
        )
    validation = steps.bandit_prompts(
        run,
        "bandit prompts (validation)",
        "bandit_validation",
        validation_trajectories,
        run.root / rundir.BANDIT_VALIDATION,
        tokenizer,
        "--is_test",
    )
    parquet = {tag: verl_parquet(run, tag, path, validation) for tag, path in prompts.items()}
    if "trajectories_perturbed" not in parquet:
        return parquet["trajectories"]
    mixed = run.root / rundir.verl_data("mixed") / "train.parquet"
    run.stage(
        "perturbed rows mixed in",
        mixed.exists,
        lambda: run.command(
            "mix",
            [
                *steps.python("cobalt.train.augment"),
                "--base",
                parquet["trajectories"],
                "--perturbed",
                parquet["trajectories_perturbed"],
                "--ratio",
                run.cfg.perturbed_ratio,
                "--out",
                mixed,
            ],
        ),
    )
    return mixed


def bandit_prompts(run: Run, tag: str, source: Path, tokenizer: str) -> Path:
    out = run.root / rundir.bandit_prompts(tag)
    flags = ("--num_turns", run.cfg.bandit_turns)
    return steps.bandit_prompts(
        run, f"bandit prompts ({tag})", f"bandit_{tag}", source, out, tokenizer, *flags
    )


def verl_parquet(run: Run, tag: str, prompts: Path, validation: Path) -> Path:
    out = run.root / rundir.verl_data(tag)
    return (
        steps.verl_parquet(run, f"veRL parquet ({tag})", f"parquet_{tag}", prompts, validation, out)
        / "train.parquet"
    )


# ------------------------------------------------------------------------------------------ GRPO
def grpo(run: Run, train_file: Path, model: str) -> Path:
    """GRPO with the profile on the chain's cluster."""
    val_file = train_file.parent / "test.parquet"
    if not val_file.exists():  # the mixed set validates on the unperturbed prompts' validation file
        val_file = run.root / rundir.verl_data("trajectories") / "test.parquet"
    checkpoints = run.root / rundir.CHECKPOINTS
    return steps.grpo(
        run, grpo_command(run.cfg, run.profile, run.address, checkpoints, train_file, val_file, model)
    )


def grpo_command(
    cfg: PaperConfig,
    profile: str,
    address: str,
    checkpoints: Path,
    train_file: Path,
    val_file: Path,
    model: str,
) -> list:
    """The GRPO stage's command line: the launcher with the profile, the chain's files, then the
    user's hydra overrides (``-- key=value ...``; later wins)."""
    from cobalt.train.profile import override

    cmd = [
        *steps.python("cobalt.train.launch"),
        "--profile",
        profile,
        "--evaluator-config",
        cfg.evaluator_config,
        "--address",
        address,
        override("trainer.default_local_dir", str(checkpoints)),
    ]
    if cfg.rehearse:  # the profile's topology and batch on a tiny model; its prompts from this run
        cmd += ["--rehearse", "--rehearse-prompts", train_file]
    else:
        cmd += [
            override("data.train_files", str(train_file)),
            override("data.val_files", str(val_file)),
            override("actor_rollout_ref.model.path", model),
        ]
    return cmd + list(cfg.grpo_overrides)


def evaluation_chains(run: Run, model_tag: str, files: dict[str, Path]) -> dict[str, Chain]:
    sets = {"": files["lcb"], "_dev": (files["dev_perturbed"], PERTURBED_FIELD)}
    return steps.evaluation_chains(model_tag, sets, run.cfg.eval_samples, run.cfg.eval_turns)


def head_size(run: Run, inputs: Inputs) -> tuple[int, int, str]:
    """Logical CPUs and GPUs of the chain's private Ray head, which every stage shares (GRPO too):
    on GPUs the GPUs detected here; in a rehearsal the fake GPUs and CPUs of the profile's ranks,
    as the launcher would give its own head."""
    from cobalt.train import rehearsal
    from cobalt.train.profile import hydra_overrides, load_profile, world_size

    profile = load_profile(inputs.profile)
    if run.cfg.rehearse:
        profile = rehearsal.plan(profile).profile
    ranks = world_size(hydra_overrides(profile))
    return steps.head_size(
        profile, inputs.num_gpus, run.cfg.rehearse, ranks, min_cpus=max(8, os.cpu_count() or 2)
    )


def chain_cluster(run: Run, inputs: Inputs):
    """``run.address`` set for the block: the user's cluster, or one private head for the chain."""
    cpus, gpus, why = (None, 0, None) if inputs.address else head_size(run, inputs)
    return steps.cluster(run, inputs.address, cpus, gpus, why)


def base_model(run: Run, inputs: Inputs) -> Path:
    model = run.cfg.model or profile_model(inputs.profile)
    if model != "smollm2":
        return Path(model)
    return steps.export_smollm2(run, "export SmolLM2 (stands in for the base model)")


def makes_no_trajectories(inputs: Inputs) -> bool:
    """Whether the chain makes no trajectories of its own: given ones (``--trajectories``), or a
    method that trains without (single-turn, online)."""
    return bool(single_turn(inputs.profile) or inputs.online or inputs.trajectories)


# ------------------------------------------------------------------------------------------- base
# what a run's problems, base model and base evaluation are made of, relative to its directory
BASE_PARTS = (
    rundir.TACO,
    rundir.LCB,
    rundir.perturbed("dev"),
    rundir.MODELS_SMOLLM2,
    "eval_base",
    "eval_base_dev",
)


def base_key(cfg: PaperConfig, inputs: Inputs) -> dict:
    """What the problems and the base model's evaluation depend on: two runs with the same key
    make the same base, whatever they train."""
    engine = cfg.engine_config if cfg.max_model_len is None else rundir.ENGINE  # the run's own file
    return {
        "files": [str(Path(f).resolve()) if f else None for f in (inputs.taco, inputs.lcb, inputs.taco_dev)],
        "model": str(cfg.model or profile_model(inputs.profile)),
        "engine_config": engine,
        **{
            key: getattr(cfg, key)
            for key in (
                "sampling",
                "taco_dev_ratio",
                "max_problems",
                "max_model_len",
                "eval_samples",
                "eval_turns",
            )
        },
    }


def take_base(run: Run, inputs: Inputs) -> None:
    """With ``--base-run``: that run's problems and base evaluation, when its base key is this run's
    (e.g. a baseline trained beside COBALT's run; :mod:`cobalt.pipeline.base`)."""
    if inputs.base_run:
        base.adopt(run.root, base_key(run.cfg, inputs), Path(inputs.base_run), BASE_PARTS, run.log)


def record_base(run: Run, inputs: Inputs) -> None:
    """``base.json`` once the base evaluation is written: what another run may take (``--base-run``)."""
    base.record(run.root, base_key(run.cfg, inputs), base.files_under(run.root, BASE_PARTS))


def run_chain(run: Run, inputs: Inputs) -> Path:
    started = time.monotonic()
    take_base(run, inputs)
    refuse_overlap(run, inputs)
    files = problems(run, inputs)
    refuse_empty(files, trains_on_perturbed=not makes_no_trajectories(inputs))
    model = base_model(run, inputs)
    evaluated: dict[str, Path] = {}
    base_evals: dict[str, Path] = {}

    def base_stages():  # the trajectories and the base evaluation side by side on one engine
        makes_trajectories = not makes_no_trajectories(inputs)
        chains = {
            **(trajectory_chains(run, files) if makes_trajectories else {}),
            **evaluation_chains(run, "base", files),
        }
        done = self_debug_side_by_side(run, "base model", model, chains)
        base_evals.update({tag: path for tag, path in done.items() if tag.startswith("eval_")})
        evaluated.update({tag: path for tag, path in done.items() if tag.startswith("trajectories")})
        if inputs.trajectories and not (single_turn(inputs.profile) or inputs.online):
            evaluated.update(given(run, inputs))

    trained_evals: dict[str, Path] = {}
    with chain_cluster(run, inputs):
        base_stages()
        record_base(run, inputs)
        stop_engine(run)  # the trainer needs the memory
        train_file = training_data(run, inputs, files, evaluated, str(model), base_evals.get("eval_base_dev"))
        trained = grpo(run, train_file, str(model))
        trained_evals |= self_debug_side_by_side(
            run, "trained model", trained, evaluation_chains(run, "trained", files)
        )
        stop_engine(run)
    write_setting(run, inputs, model, evaluated)
    from cobalt.recipes.paper.report import write_paper_report

    return write_paper_report(
        run, inputs.profile, base_evals, trained_evals, time.monotonic() - started, inputs.method
    )


# ---------------------------------------------------------------------------------------- main
def dry_run_plan(cfg: PaperConfig, inputs: Inputs) -> dict:
    """What a run would do: the chain's settings, the training profile's, and the GPUs it needs."""
    from cobalt.serve.cluster import gpu_count
    from cobalt.train.profile import load_profile

    overrides = load_profile(inputs.profile).overrides
    gpus_per_node, nodes = preflight.gpus_needed(overrides, cfg.grpo_overrides)
    keys = (
        "data.train_batch_size",
        "data.max_prompt_length",
        "data.max_response_length",
        "actor_rollout_ref.rollout.n",
        "actor_rollout_ref.actor.optim.lr",
        "actor_rollout_ref.actor.kl_loss_coef",
        "algorithm.kl_ctrl.kl_coef",
        "trainer.n_gpus_per_node",
        "trainer.nnodes",
        "trainer.total_epochs",
    )
    detected, why = gpu_count()
    run = Path("<run>")  # the GRPO stage's command, as the chain would give it
    command = grpo_command(
        cfg,
        inputs.profile,
        inputs.address or "<the chain's Ray head>",
        run / "checkpoints",
        run / "data/train.parquet",
        run / "data/test.parquet",
        cfg.model or profile_model(inputs.profile),
    )
    return {
        "profile": inputs.profile,
        "method": inputs.method,
        "base_model": cfg.model or profile_model(inputs.profile),
        "single_turn": single_turn(inputs.profile),
        "chain": dataclasses.asdict(cfg) | {"paper": cfg.paper.get(inputs.profile)},
        "grpo": {k: preflight.grpo_setting(overrides, cfg.grpo_overrides, k, "(veRL default)") for k in keys},
        "grpo_command": [str(word) for word in command],
        "attention": preflight.attention(inputs.profile, cfg.rehearse, cfg.grpo_overrides).note,
        "context_budget": context_budget(cfg, inputs),
        "estimate": preflight.estimate(cfg, inputs, overrides, single_turn(inputs.profile), inputs.method),
        "gpus": {
            "per_node": gpus_per_node,
            "nodes": nodes,
            "total": gpus_per_node * nodes,
            "detected_here": detected,
            "how": why,
        },
    }


def context_budget(cfg: PaperConfig, inputs: Inputs) -> dict:
    """How many evaluation turns fit the engine's context, estimated from the data's prompt lengths
    and the answer budget (:mod:`cobalt.infer.context_budget`)."""
    from cobalt.common.errors import DataError
    from cobalt.infer.context_budget import estimate

    files = {"TACO": inputs.taco, "LiveCodeBench": inputs.lcb} | (
        {"TACO-dev": inputs.taco_dev} if inputs.taco_dev else {}
    )
    try:
        return estimate(
            files,
            context=engine_context(cfg),
            model=cfg.model or profile_model(inputs.profile),
            answer_budget=int(sampling(cfg)["max_tokens"]),
            thinking=bool(sampling(cfg)["enable_thinking"]),
            turns=cfg.eval_turns,
            limit=cfg.max_problems or None,
        )
    except DataError as e:
        return {"error": str(e)}


def preflight_checks(
    cfg: PaperConfig, inputs: Inputs, run_dir: str | None, budget: dict, cost: dict | None = None
):
    """The preflight's checks (:mod:`cobalt.recipes.paper.preflight`) for this chain (a rehearsal's GRPO step: the
    rehearsal's batch)."""
    from cobalt.train import rehearsal
    from cobalt.train.profile import load_profile

    profile = load_profile(inputs.profile)
    overrides = (rehearsal.plan(profile).profile if cfg.rehearse else profile).overrides
    runs_root = Path(run_dir) if run_dir else ROOT / "runs/paper" / inputs.profile
    cost = None if cfg.rehearse else cost  # the paper's estimate: not the rehearsal's step
    return preflight.checks(
        cfg, inputs, overrides, single_turn(inputs.profile), runs_root, budget, cost, inputs.method
    )


def missing_gpus(cfg: PaperConfig, inputs: Inputs) -> str | None:
    """One line when a GPU run would wait for GPUs this machine does not have (a rehearsal needs
    none; on a cluster (``--address``) Ray places the work)."""
    if cfg.rehearse or inputs.address:
        return None
    from cobalt.serve.cluster import gpu_count
    from cobalt.train.profile import load_profile

    per_node, nodes = preflight.gpus_needed(load_profile(inputs.profile).overrides, cfg.grpo_overrides)
    needed = per_node * nodes
    have, how = (inputs.num_gpus, "--num-gpus") if inputs.num_gpus is not None else gpu_count()
    if have >= needed:
        return None
    return (
        f"{inputs.profile} trains on {needed} GPUs and this machine offers {have} ({how}); "
        "run on a GPU node, join a cluster with --address, or rehearse on CPU with --rehearse"
    )


def print_preflight(found: list, gate: bool = True) -> bool:
    """The checks' lines and, when they gate (``--preflight``, a real run), one ``error:`` line
    naming the failed ones (a dry run only reads them); whether none failed."""
    for check in found:
        print(check, flush=True)
    failed = [check.line for check in found if check.level == "fail"]
    if failed and gate:
        print(f"error: the preflight failed: {'; '.join(failed)}", file=sys.stderr)
    return not failed


def parser() -> ArgumentParser:
    usage = "%(prog)s --profile P --taco T --lcb L [options] [-- hydra overrides for GRPO ...]"
    p = ArgumentParser(
        prog="bash scripts/reproduce_paper.sh",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
        usage=usage,
    )
    p.add_argument(
        "--profile",
        required=True,
        help="training profile, configs/train/<name>.yaml (e.g. multi_turn_qwen3_8b)",
    )
    p.add_argument(
        "--method",
        type=method_name,
        choices=METHODS,
        default="cobalt",
        help="what to train: COBALT's bandit GRPO on offline trajectories, or an online multi-turn "
        "baseline (grpo_mt, verpo_mt: one row per training problem, no trajectories); the profile "
        "must be one of that method's (e.g. grpo_mt_qwen3_8b); evaluation is the same for all",
    )
    p.add_argument(
        "--taco",
        required=True,
        type=existing_file,
        help="TACO-verified as it ships (taco_verified.json, a JSON array; or JSONL, parquet; split seeded here), or processed problem records "
        "such as the authors' TACO-Cobalt train file (with --taco-dev: used as given, nothing re-split)",
    )
    p.add_argument("--lcb", required=True, type=existing_file, help="LiveCodeBench test6.jsonl as it ships")
    p.add_argument(
        "--trajectories",
        default=None,
        type=caller_path,
        help="offline trajectories to learn from instead of generating them",
    )
    p.add_argument(
        "--trajectories-perturbed",
        default=None,
        type=caller_path,
        help="with --trajectories: "
        "the trajectories on perturbed public tests, mixed in as the paper does (without, the run "
        "trains on no perturbed rows and the report says so)",
    )
    p.add_argument(
        "--taco-dev",
        default=None,
        type=existing_file,
        help="problem records to evaluate as TACO-dev "
        "instead of the dev split of --taco (perturbed in place unless they carry "
        "perturbed_public_test_cases, as the authors' TACO-Cobalt-PTB)",
    )
    p.add_argument(
        "--allow-overlap",
        action="store_true",
        help="train even on problems that are also "
        "evaluated (same statement or tests); for experiments: the report says so first",
    )
    p.add_argument(
        "--base-run",
        default=None,
        type=caller_path,
        help="a run directory of this chain, with the same files and settings, whose problems and base "
        "model's evaluation this run takes instead of making them (e.g. to train a baseline beside "
        "COBALT's run: --method grpo_mt --base-run runs/paper/multi_turn_qwen3_8b/<time>)",
    )
    p.add_argument("--address", default=None, help="a running Ray cluster (HOST:PORT) for every stage")
    p.add_argument(
        "--model",
        default=None,
        type=caller_path,
        help="the base model, which also writes the "
        "trajectories: a local directory (e.g. a downloaded copy; relative to this directory) or a hub "
        "id (default: the chain config's, else the profile's)",
    )
    p.add_argument(
        "--evaluator-config",
        default=None,
        help="configs/<name>.yaml of the evaluator for every stage "
        "(default: the chain config's, evaluator_node: as many replicas as this node's CPUs hold beyond "
        "training's; evaluator_paper: the reference's 80, on a cluster with the CPUs)",
    )
    p.add_argument(
        "--num-gpus", type=int, default=None, help="GPUs of a private Ray head (default: detected)"
    )
    p.add_argument(
        "--rehearse",
        action="store_true",
        help="the same chain cut down for this CPU (configs/paper_rehearsal.yaml)",
    )
    p.add_argument(
        "--config",
        default=None,
        help="chain settings: configs/<name>.yaml or a YAML file of your own, "
        "which may start from one (extends: paper) (default: paper, or paper_rehearsal)",
    )
    p.add_argument(
        "--max-problems",
        type=positive_int,
        default=None,
        help="a smaller run: the first N problems of "
        "each problem file, the training set and the evaluation sets (TACO-dev, LiveCodeBench) alike, "
        "so its Pass@1 is not the paper's (the report says so)",
    )
    p.add_argument(
        "--max-model-len",
        type=positive_int,
        default=None,
        help="the inference engine's context in "
        "tokens, for trajectories and evaluation (default: the engine config's; engine_paper: the "
        "model's own window)",
    )
    stages.add_run_dir_arguments(p, "of this profile under runs/paper/, else a new one")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the settings of every stage, the GPUs needed and the preflight's checks; run nothing "
        "(exit 0 whatever the checks say)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with --dry-run: one JSON document on stdout (the settings, the estimate and the "
        "preflight's checks) and nothing else there",
    )
    p.add_argument(
        "--preflight",
        action="store_true",
        help="run the preflight's checks only and exit 1 if "
        "any fails, 0 otherwise: a gate for a job script (with --dry-run: the settings too)",
    )
    return p


def main(argv=None) -> int:
    from cobalt.train.profile import split_overrides

    argv, grpo_overrides = split_overrides(sys.argv[1:] if argv is None else argv)
    p = parser()
    args = p.parse_args(argv)
    try:
        check_method(args.method, args.profile)
        cfg = chain_config(args, grpo_overrides)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        p.error(str(e))
    inputs = inputs_of(args)
    if not (args.dry_run or args.preflight):
        if args.trajectories_perturbed and not args.trajectories:
            p.error("--trajectories-perturbed goes with --trajectories")
        if args.trajectories and inputs.online:
            p.error(f"--trajectories are COBALT's: --method {args.method} trains on the problems themselves")
    try:
        check_input_shapes(inputs)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.dry_run or args.preflight:
        return dry_run(cfg, inputs, args)
    return run_paper_chain(cfg, inputs, args)


def chain_config(args, grpo_overrides: list[str]) -> PaperConfig:
    """The chain's settings: its config, the command line's values, the GRPO overrides after ``--``
    (ValueError naming a malformed one)."""
    from cobalt.train.profile import override_error

    config = args.config or ("paper_rehearsal" if args.rehearse else "paper")
    cfg = from_dict(PaperConfig, load_config(config), source=str(config_path(config)))
    given = {
        "evaluator_config": args.evaluator_config,
        "model": args.model,
        "max_problems": args.max_problems,
        "max_model_len": args.max_model_len,
    }
    cfg = dataclasses.replace(cfg, **{key: value for key, value in given.items() if value})
    for item in grpo_overrides:
        if override_error(item):
            raise ValueError(f"after --: {override_error(item)}")
    return dataclasses.replace(cfg, grpo_overrides=[*cfg.grpo_overrides, *grpo_overrides])


SHAPE_NAMES = {"taco": "TACO-verified", "lcb": "LiveCodeBench", "problems": "processed problem"}


def check_input_shapes(inputs: Inputs) -> None:
    """``--taco`` holds TACO-verified rows (or processed problems) and ``--lcb`` LiveCodeBench rows
    (or processed problems): DataError naming both files when they are swapped, else the wrong one."""
    taco, lcb = file_shape(inputs.taco), file_shape(inputs.lcb)
    if (taco, lcb) == ("lcb", "taco"):
        raise DataError(
            f"--taco {inputs.taco} holds LiveCodeBench rows and --lcb {inputs.lcb} TACO-verified ones: "
            f"swapped? pass --taco {inputs.lcb} --lcb {inputs.taco}"
        )
    for flag, path, shape, wanted in (
        ("--taco", inputs.taco, taco, "taco"),
        ("--lcb", inputs.lcb, lcb, "lcb"),
    ):
        if shape not in (wanted, "problems"):
            raise DataError(
                f"{flag} {path} holds {SHAPE_NAMES[shape]} rows; {flag} takes {SHAPE_NAMES[wanted]} "
                "rows (or processed problem records)"
            )


def inputs_of(args) -> Inputs:
    return Inputs(**{field.name: getattr(args, field.name) for field in dataclasses.fields(Inputs)})


def dry_run(cfg: PaperConfig, inputs: Inputs, args) -> int:
    """``--dry-run`` (the plan, then the preflight's checks; exit 0) and ``--preflight`` (the checks:
    exit 1 if one fails)."""
    plan = dry_run_plan(cfg, inputs) if args.dry_run else {}
    budget = plan["context_budget"] if plan else context_budget(cfg, inputs)
    found = preflight_checks(cfg, inputs, args.run_dir, budget, plan.get("estimate"))
    passed = not [check for check in found if check.level == "fail"]
    if plan and args.json:
        print(json.dumps(plan | {"preflight": [dataclasses.asdict(check) for check in found]}, indent=1))
        return 1 if args.preflight and not passed else 0
    if plan:
        print(json.dumps(plan, indent=1))
        if not cfg.rehearse and not args.address and plan["gpus"]["detected_here"] == 0:
            print(f"no GPU here: this run needs {plan['gpus']['total']} (--rehearse runs the chain on CPU)")
        print(preflight.per_example_line(plan["estimate"]["per_example"]))
    print_preflight(found, gate=args.preflight)
    if plan:
        total = plan["estimate"]["total"]
        print(
            f"estimate: {total['wall_hours']} wall hours, {total['gpu_hours']} GPU-hours (the estimate above)"
        )
    return 1 if args.preflight and not passed else 0


def run_paper_chain(cfg: PaperConfig, inputs: Inputs, args) -> int:
    """The chain in a run directory, after the checks that take seconds and would otherwise stop
    the run hours in."""
    missing = missing_gpus(cfg, inputs)
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    if not cfg.rehearse and not print_preflight(
        preflight_checks(cfg, inputs, args.run_dir, context_budget(cfg, inputs))
    ):
        return 2
    root = pick_run_dir(ROOT / "runs/paper" / args.profile, args.run_dir, args.new)
    run = Run(
        root, with_sized_evaluator(with_engine_context(cfg, root), inputs, root), args.profile, name="paper"
    )
    return run_to_report(run, lambda run: run_chain(run, inputs))


if __name__ == "__main__":
    sys.exit(main())
