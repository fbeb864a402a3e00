"""COBALT end to end on one machine: ``bash scripts/quickstart.sh [--profile quickstart_ci]``.

A real instruct model (SmolLM2-135M-Instruct from its PyPI wheel by default) writes and debugs
programs on the embedded problems; its own trajectories become bandit prompts; veRL GRPO trains
on them; the base and the trained model are evaluated side by side on held-out problems::

    model export → SFT warm-up (training problems) → single-turn → multi-turn (2 turns)
    → hidden-test evaluation → bandit prompts → veRL parquet → GRPO
    → multi-turn evaluation (4 turns) of base and trained on held-out problems (and, with
      ``train_eval_problems``, on that many training problems) → report/
      (cobalt.recipes.quickstart.report)

Every stage is one of the project's command lines (run with ``--address`` on one private loopback
Ray head that hosts the evaluator and engine apps, which the quickstart deploys before the stages
that use them; the base model's trajectories and held-out evaluation run side by side), writes its
output under the run directory and is skipped when that output is complete, so re-running the command resumes the newest
unfinished run. The warm-up is part of the *base* model: both curves start from it.

``arm: control`` (``--arm control``) replaces GRPO by SFT of the warmed-up model on the training
instances' programs and evaluates that model in the trained one's place; ``train_seed``
(``--train-seed K``) seeds GRPO's data order and rollout sampling, or the control's SFT.
``base_run`` (``--base-run DIR``) takes another run's base instead of making it again
(:mod:`cobalt.recipes.quickstart.base`).
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cobalt.common import rundir
from cobalt.common.argtypes import caller_path, non_negative_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.cli import run as run_cli
from cobalt.common.config import from_dict, load_config
from cobalt.common.errors import ConfigError
from cobalt.common.jsonl import load_jsonl, write_jsonl
from cobalt.data.embedded import PROBLEM_SETS
from cobalt.data.sources import file_shape
from cobalt.pipeline import stages, steps
from cobalt.pipeline.stages import (
    ROOT,
    Chain,
    Run,
    fitted_lengths,
    pick_run_dir,
    run_to_report,
    self_debug_side_by_side,
    stop_engine,
)
from cobalt.recipes.quickstart.base import adopt_base, record_base, record_start
from cobalt.recipes.quickstart.config import (
    ARMS,
    WARM_UP_SEED_FROM_TRAINING,
    QuickstartConfig,
    save_freq,
    warm_up_seed,
)
from cobalt.recipes.quickstart.report import RunRecord, write_report
from cobalt.train.profile import (
    METHODS,
    ONLINE_METHODS,
    check_method,
    load_profile,
    method_name,
    override,
    profiles_of,
)


# ------------------------------------------------------------------------------------- stages
def export_model(run: Run) -> Path:
    """The base instruct model as a Hugging Face directory."""
    return steps.export_smollm2(run) if run.cfg.model == "smollm2" else Path(run.cfg.model)


def problem_records(run: Run) -> list[dict]:
    """The problems of ``cfg.problems``: an embedded set, a problem-records file, or a TACO-verified
    or LiveCodeBench file as those datasets ship (converted by their preproc command first)."""
    from cobalt.data.embedded import PROBLEM_SETS
    from cobalt.infer.records import load_problems

    if run.cfg.problems in PROBLEM_SETS:  # "embedded", "embedded_easy"
        from cobalt.data.embedded import problem_records as embedded_records

        return embedded_records(path=PROBLEM_SETS[run.cfg.problems])
    shape = file_shape(run.cfg.problems)
    if shape == "problems":
        return load_problems(run.cfg.problems)
    converted = convert_problems(run, run.cfg.problems, shape)
    return load_problems(str(converted))


def convert_problems(run: Run, source: str, shape: str, name: str = "problems") -> Path:
    """``preproc/preproc_taco.py`` or ``preproc/preproc_lcb_test6.py`` on a raw file; the records'
    path. TACO's reference solutions are checked in the sandbox (in this process), as the reference
    does; its train/dev split is left to the caller (``--dev-ratio 0``)."""
    stage, command = f"{name}: {shape} file to problem records", f"{name}_preproc"
    if shape == "taco":
        out_dir = steps.taco_to_problems(
            run, stage, command, source, run.root / rundir.converted(name, shape), 0
        )
        return out_dir / "taco_verified_filtered.jsonl"
    return steps.lcb_to_problems(run, stage, command, source, run.root / rundir.converted(name, shape))


def procedural_files(run: Run) -> dict[str, Path]:
    """Where ``problems: procedural`` keeps its splits and their solutions (``procedural_problems``)."""
    from cobalt.data.procedural.splits import SOLUTIONS, SPLITS

    out = run.root / rundir.PROCEDURAL
    return {split: out / f"{split}.jsonl" for split in SPLITS} | {"solutions": out / SOLUTIONS}


def procedural_problems(run: Run) -> dict[str, Path]:
    """``problems: procedural``: seeded instances of the procedural families, written by their
    command (``cobalt.data.procedural``): train, dev and held-out instances of the training
    families (disjoint by seed, statement and tests) and instances of the held-out families."""
    files, p = procedural_files(run), run.cfg.procedural
    # --overwrite: the run's own files; a build interrupted between two files is redone whole
    cmd = [
        sys.executable,
        "-m",
        "cobalt.data.procedural",
        "--out",
        run.root / rundir.PROCEDURAL,
        "--train",
        run.cfg.train_problems,
        "--dev",
        p.get("dev", 0),
        "--heldout",
        run.cfg.heldout_problems,
        "--heldout-families",
        p.get("heldout_families", 0),
        "--seed",
        p.get("seed", 0),
        *(
            ["--heldout-family-names", ",".join(p["heldout_family_names"])]
            if "heldout_family_names" in p
            else []
        ),
        "--overwrite",
    ]
    run.stage(
        "procedural problems",
        lambda: all(f.exists() for f in files.values()),
        lambda: run.command("procedural", cmd),
    )
    return files


def heldout_unseen(run: Run, heldout: Path) -> Path:
    """``procedural.heldout_unseen_only``: the held-out instances unseen by form (no training
    reference has their normalized program), the only ones a primary set by behaviour can hold;
    the others are not evaluated."""
    from cobalt.data.novelty import UNSEEN, run_novelty

    out = run.path(rundir.HELDOUT_UNSEEN)

    def write():
        form = run_novelty(run.root)["heldout"]
        write_jsonl(out, [r for r in load_jsonl(heldout) if form[str(r["id"])] == UNSEEN], overwrite=True)

    run.stage("held-out instances unseen by form", out.exists, write)
    return out


def heldout_families(run: Run) -> Path | None:
    """The held-out families' problems (out-of-family evaluation), when the run has any."""
    if run.cfg.problems != "procedural" or not run.cfg.procedural.get("heldout_families"):
        return None
    return procedural_files(run)["heldout_families"]


def split_problems(run: Run) -> tuple[Path, Path]:
    if run.cfg.problems == "procedural":  # procedural.evaluate: dev in tuning runs
        files = procedural_problems(run)
        evaluate = run.cfg.procedural.get("evaluate", "heldout")
        if evaluate not in ("heldout", "dev"):
            raise ValueError(f"procedural.evaluate: {evaluate!r}; expected heldout or dev")
        if evaluate == "heldout" and run.cfg.procedural.get("heldout_unseen_only"):
            return files["train"], heldout_unseen(run, files["heldout"])
        return files["train"], files[evaluate]
    train, heldout = run.root / rundir.TRAIN_PROBLEMS, run.root / rundir.HELDOUT_PROBLEMS
    records = problem_records(run)  # a raw file is converted first (a stage of its own)

    def write():
        random.Random(run.cfg.seed).shuffle(records)
        need = run.cfg.train_problems + run.cfg.heldout_problems
        if len(records) < need:
            raise ValueError(f"{run.cfg.problems}: {len(records)} problems, the profile needs {need}")
        write_jsonl(run.path(rundir.TRAIN_PROBLEMS), records[: run.cfg.train_problems], overwrite=True)
        write_jsonl(heldout, records[-run.cfg.heldout_problems :], overwrite=True)

    run.stage("split problems", lambda: train.exists() and heldout.exists(), write)
    return train, heldout


def train_eval_subset(run: Run, train: Path) -> Path | None:
    """The first ``train_eval_problems`` training problems, on which base and trained are also
    evaluated: whether the policy learned what it trained on, at a fraction of the
    cost of evaluating every training problem. None when the profile asks for none."""
    n = run.cfg.train_eval_problems
    if not n:
        return None
    subset = run.path(rundir.TRAIN_EVAL_PROBLEMS)

    def write():
        records = load_jsonl(train)
        if n > len(records):
            raise ValueError(f"train_eval_problems: {n}, but the run has {len(records)} training problems")
        write_jsonl(subset, records[:n], overwrite=True)

    run.stage("training problems to evaluate", subset.exists, write)
    return subset


def warm_up(run: Run, base: Path, train: Path) -> Path:
    """SFT on reference solutions, so that the small CPU model writes the answer layout (as shipped
    SmolLM2 never writes ``</think>``: every reward would be -1). Only for the embedded SmolLM2
    unless the profile sets ``warmup.enabled``: a model of your own, e.g. an 8B reasoning model,
    is used as it is. Solutions come from the embedded sets, the records, the raw TACO file or a
    ``solutions.jsonl`` beside the problems (the procedural families');
    LiveCodeBench files carry none, and the warm-up then answers the embedded problems."""
    w = run.cfg.warmup
    if not w.get("enabled", run.cfg.model == "smollm2"):
        run.log(f"SFT warm-up: not for {base} (warmup.enabled is off); the model is used as it is")
        return base
    out = run.root / rundir.MODELS_WARM
    problems, solutions = warm_up_problems(run, train), solution_flags(run)
    if run.cfg.problems not in PROBLEM_SETS and not solutions and file_shape(run.cfg.problems) == "lcb":
        problems = run.path(rundir.WARM_UP_STAND_INS)
        run.log("SFT warm-up: LiveCodeBench records carry no solutions; warming up on the embedded problems")
        if not problems.exists():
            from cobalt.data.embedded import problem_records as embedded_records

            write_jsonl(problems, embedded_records(path=PROBLEM_SETS["embedded"]), overwrite=True)
    # the warm-up is the base model's: its seed is warmup.seed (0 by default), so every arm and
    # training seed starts from the same base (docs/preregistration.md), unless it is train_seed
    seed = ["--seed", warm_up_seed(run.cfg)] if "seed" in w else []
    cmd = sft_command(base, problems, solutions, out, w, epochs=2, seed=seed)
    run.stage(
        "SFT warm-up", lambda: (out / rundir.WARM_UP_RECORD).exists(), lambda: run.command("warmup", cmd)
    )
    return out


def solution_flags(run: Run) -> list:
    """``--solutions FILE`` for ``cobalt.train.sft`` when the reference solutions are not in the
    problem records themselves: the procedural families' solutions file, the raw TACO file, or a
    ``solutions.jsonl`` beside the problems; nothing otherwise (embedded sets, records with
    ``solutions``, LiveCodeBench files, which carry none)."""
    beside = Path(run.cfg.problems).with_name("solutions.jsonl")  # as cobalt.data.procedural writes
    if run.cfg.problems == "procedural":
        return ["--solutions", procedural_files(run)["solutions"]]
    if run.cfg.problems in PROBLEM_SETS:
        return []
    if file_shape(run.cfg.problems) == "taco":
        return ["--solutions", run.cfg.problems]
    if beside.is_file():
        return ["--solutions", beside]
    return []


def warm_up_problems(run: Run, train: Path) -> Path:
    """The training problems the warm-up answers: all, or the first ``warmup.problems``."""
    n = run.cfg.warmup.get("problems")
    if not n:
        return train
    subset = run.path(rundir.WARM_UP_SUBSET)

    def write():
        write_jsonl(subset, load_jsonl(train)[:n], overwrite=True)

    run.stage("warm-up problems", subset.exists, write)
    return subset


def evaluation_chains(
    run: Run, model_tag: str, heldout: Path, train_subset: Path | None, families: Path | None = None
) -> dict:
    """The evaluation chains of one model (``base``, ``trained`` or ``control``): the held-out
    problems, and the training subset and the held-out families when the profile has them."""
    sets = {"": heldout, "_train": train_subset, "_families": families}
    cfg = run.cfg
    return steps.evaluation_chains(model_tag, sets, cfg.eval_samples, cfg.eval_turns, cfg.eval_temperature)


def dose_chain(run: Run, step: int, evaluated: Path) -> dict:
    """The evaluation of GRPO's checkpoint at ``step`` (``eval_steps``) on the evaluated split."""
    cfg = run.cfg
    return steps.evaluation_chains(
        f"trained_step{step}", {"": evaluated}, cfg.eval_samples, cfg.eval_turns, cfg.eval_temperature
    )


def offline_trajectories(run: Run, train: Path) -> Path | None:
    """Trajectories made without a model (``offline_trajectories``: procedural problems only): a
    buggy first attempt mutated from the reference, the evaluator's feedback, a fix or another
    bug (``cobalt.data.procedural.offline``)."""
    options = run.cfg.offline_trajectories
    if not options:
        return None
    out = run.root / rundir.OFFLINE_TRAJECTORIES
    flags = [x for key, value in options.items() for x in (f"--{key}", value)]
    cmd = [sys.executable, "-m", "cobalt.data.procedural.offline", "--problems", train, "--out", out, *flags]
    run.stage("offline trajectories (buggy first attempts)", out.exists, lambda: run.command("offline", cmd))
    return out


def all_trajectories(run: Run, own: Path | None, offline: Path | None) -> Path:
    """The trajectories the bandit prompts are cut from: the model's own, the offline ones, or both."""
    sources = [path for path in (own, offline) if path is not None]
    if len(sources) == 1:
        return sources[0]
    if not sources:
        raise ValueError("no trajectories: set train_samples above 0 or offline_trajectories")
    out = run.root / rundir.ALL_TRAJECTORIES

    def write():
        write_jsonl(out, [record for path in sources for record in load_jsonl(path)], overwrite=True)

    run.stage("trajectories: own and offline together", out.exists, write)
    return out


def bandit_data(run: Run, trajectories: Path, tokenizer: Path) -> Path:
    """Bandit prompts and their veRL parquet. veRL needs validation files; validation is off
    (test_freq -1): held-out problems are evaluated by the quickstart itself, never trained on."""
    prompts = steps.bandit_prompts(
        run, "bandit prompts", "bandit", trajectories, run.root / rundir.bandit_prompts("train"), tokenizer
    )
    return steps.verl_parquet(run, "veRL parquet", "parquet", prompts, prompts, run.root / rundir.verl_data())


def online_data(run: Run, train: Path) -> Path:
    """GRPO-MT's and VeRPO-MT's rows: one per training problem (validation is off, as for COBALT)."""
    return steps.online_rows(run, train, train, run.root / rundir.verl_data("online"))


def is_online(cfg: QuickstartConfig) -> bool:
    """Whether the run's GRPO profile trains an online method (GRPO-MT, VeRPO-MT)."""
    return load_profile(cfg.train_profile).method in ONLINE_METHODS


def seed_overrides(cfg: QuickstartConfig) -> list[str]:
    """veRL's data shuffle and rollout sampling seeds from ``train_seed``; none when it is unset
    (the train profile's seeds)."""
    if cfg.train_seed is None:
        return []
    return [override("data.seed", cfg.train_seed), override("actor_rollout_ref.rollout.seed", cfg.train_seed)]


def control_model_dir(run: Run) -> Path:
    return run.root / rundir.MODELS_CONTROL


def control_sft_command(run: Run, model: Path, train: Path) -> list:
    """The control arm's fine-tuning: SFT of the warmed-up model on every training instance's
    program (in the offline trajectories the final fix is the reference program, so the final fixes
    and the reference programs are one set), without COBALT's reward, seeded by ``train_seed``."""
    c = run.cfg.control
    seed = 0 if run.cfg.train_seed is None else run.cfg.train_seed  # cobalt.train.sft's default
    return sft_command(
        model, train, solution_flags(run), control_model_dir(run), c, epochs=1, seed=["--seed", seed]
    )


def sft_command(
    model: Path, problems: Path, solutions: list, out: Path, settings: dict, epochs: float, seed: list
):
    """``cobalt.train.sft`` of ``model`` on ``problems``' solutions with ``settings`` (epochs, lr,
    batch_size; ``epochs`` is this use's default)."""
    return [
        *steps.python("cobalt.train.sft"),
        *("--model", model, "--problems", problems, *solutions, "--out", out),
        *("--epochs", settings.get("epochs", epochs), "--lr", settings.get("lr", 1e-4)),
        *("--batch_size", settings.get("batch_size", 4), *seed),
    ]


def control_sft(run: Run, model: Path, train: Path) -> Path:
    out = control_model_dir(run)
    cmd = control_sft_command(run, model, train)
    run.stage(
        "control SFT", lambda: (out / rundir.WARM_UP_RECORD).exists(), lambda: run.command("control_sft", cmd)
    )
    return out


def check_arm(run: Run) -> None:
    """A run directory belongs to one arm and training seed: resuming it with another would mix
    their stages (a GRPO checkpoint of one seed evaluated as another's)."""
    mine = {"arm": run.cfg.arm, "train_seed": run.cfg.train_seed}
    path = run.root / rundir.ARM
    theirs = json.loads(path.read_text()) if path.exists() else None
    if theirs is not None and theirs != mine:
        raise ValueError(
            f"{path}: this run directory is arm {theirs['arm']!r} with train_seed {theirs['train_seed']}, "
            f"not arm {mine['arm']!r} with train_seed {mine['train_seed']}; use another --run-dir (or --new)"
        )
    if not path.exists():
        rundir.write_atomically(path, json.dumps(mine))


def grpo(run: Run, parquet_dir: Path, model: Path) -> Path:
    train = parquet_dir / "train.parquet"
    cmd = [
        *steps.python("cobalt.train.launch"),
        "--profile",
        run.cfg.train_profile,
        "--address",
        run.address,
        "--logger",
        "console,file",
        override("data.train_files", str(train)),
        override("data.val_files", str(parquet_dir / "test.parquet")),
        override("actor_rollout_ref.model.path", str(model)),
        override("trainer.default_local_dir", str(run.root / rundir.CHECKPOINTS)),
        f"trainer.total_training_steps={run.cfg.grpo_steps}",
        f"trainer.save_freq={save_freq(run.cfg)}",
        *fitted_lengths(run.cfg.train_profile, train, model),
        *seed_overrides(run.cfg),
    ]
    env = {"VERL_FILE_LOGGER_PATH": str(run.root / rundir.GRPO_METRICS)}
    return steps.grpo(run, cmd, env=env, total_steps=run.cfg.grpo_steps)


# ---------------------------------------------------------------------------------------- main
def head_size(cfg: QuickstartConfig) -> tuple[int, int, str]:
    """CPUs and GPUs of the run's private Ray head, and why that many GPUs: the trainer's CPU
    platform asks Ray for fake GPUs (the profile's ``ray.num_gpus``); a GPU profile's head offers
    the GPUs found here, or ``--num-gpus``."""
    from cobalt.train.profile import load_profile

    profile = load_profile(cfg.train_profile)
    cpu_platform = profile.env.get("VERL_PLATFORM") == "cpu"
    needed = int(profile.ray.get("num_gpus", 0)) if cpu_platform else 0
    return steps.head_size(profile, cfg.num_gpus, cpu_platform, needed, min_cpus=cfg.ray_num_cpus)


@dataclasses.dataclass(frozen=True)
class Base:
    """The base every arm starts from: the problems, the warmed-up model, the offline trajectories."""

    train: Path
    heldout: Path
    families: Path | None
    train_subset: Path | None
    model: Path
    offline: Path | None


def make_base(run: Run) -> Base:
    """The stages before the run's cluster: export, problems, warm-up, offline trajectories (or
    another run's base, adopted)."""
    if run.cfg.base_run:
        adopt_base(run.root, run.cfg, Path(run.cfg.base_run), log=run.log)
    exported = export_model(run)
    train, heldout = split_problems(run)
    families, subset = heldout_families(run), train_eval_subset(run, train)
    warm = warm_up(run, exported, train)
    offline = None if is_online(run.cfg) else offline_trajectories(run, train)
    return Base(train, heldout, families, subset, warm, offline)


def private_cluster(run: Run):
    num_cpus, num_gpus, why = head_size(run.cfg)
    return steps.cluster(run, None, num_cpus, num_gpus, why)


@dataclasses.dataclass(frozen=True)
class Steps:
    """The steps :func:`run_pipeline` composes (a test gives its own)."""

    base: Callable = make_base
    cluster: Callable = private_cluster
    side_by_side: Callable = self_debug_side_by_side
    bandit_data: Callable = bandit_data
    online_data: Callable = online_data
    stop_engine: Callable = stop_engine
    grpo: Callable = grpo
    control_sft: Callable = control_sft
    record_start: Callable = record_start
    report: Callable = write_report


def run_pipeline(run: Run, do: Steps = Steps()) -> Path:
    started = time.monotonic()
    check_arm(run)
    base = do.base(run)
    cfg, arm = run.cfg, run.cfg.arm  # the model compared with the base: GRPO's, or the control's SFT
    online = is_online(cfg)
    with do.cluster(run):
        own = (
            {"trajectories": Chain(base.train, cfg.train_samples, cfg.train_turns)}
            if cfg.train_samples and not online
            else {}
        )
        base_chains = {
            **own,
            **evaluation_chains(run, "base", base.heldout, base.train_subset, base.families),
        }
        base_evals = do.side_by_side(run, "base model", base.model, base_chains)
        record_base(run.root, cfg, base_chains)
        if online:
            parquet_dir = do.online_data(run, base.train)
        else:
            trajectories = all_trajectories(run, base_evals.get("trajectories"), base.offline)
            parquet_dir = do.bandit_data(run, trajectories, base.model)
        do.stop_engine(run)
        do.record_start(run.root, base.model)
        trained = (
            do.grpo(run, parquet_dir, base.model)
            if arm == "trained"
            else do.control_sft(run, base.model, base.train)
        )
        chains = evaluation_chains(run, arm, base.heldout, base.train_subset, base.families)
        trained_evals = do.side_by_side(run, f"{arm} model", trained, chains)
        do.stop_engine(run)
        for step in cfg.eval_steps if arm == "trained" else ():
            earlier = run.root / rundir.trained_model(step)
            do.side_by_side(run, f"{arm} model at step {step}", earlier, dose_chain(run, step, base.heldout))
            do.stop_engine(run)
    files = {"train": base.train, "heldout": base.heldout, "parquet": parquet_dir}
    if not online:
        files |= {"trajectories": trajectories, "bandit": run.root / rundir.bandit_prompts("train")}
    for suffix, key in (("", "eval"), ("_train", "train_eval"), ("_families", "families_eval")):
        if f"eval_base{suffix}" in base_evals:
            files |= {
                f"base_{key}": base_evals[f"eval_base{suffix}"],
                f"trained_{key}": trained_evals[f"eval_{arm}{suffix}"],
            }
    elapsed = time.monotonic() - started
    return do.report(RunRecord(run.root, run.profile, dataclasses.asdict(cfg), run.state, files, elapsed))


def main(argv=None) -> int:
    p = ArgumentParser(prog="bash scripts/quickstart.sh", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--profile", default="quickstart", help="configs/<name>.yaml (quickstart_ci: the reduced run)"
    )
    stages.add_run_dir_arguments(p, "under runs/, else a new runs/<timestamp>")
    p.add_argument(
        "--model", default=None, type=caller_path, help="a Hugging Face model directory instead of SmolLM2"
    )
    p.add_argument(
        "--problems",
        default=None,
        type=caller_path,
        help="a problem-records JSONL instead of the embedded set",
    )
    p.add_argument(
        "--engine-config", default=None, help="configs/<name>.yaml of the engine (engine_paper on GPUs)"
    )
    p.add_argument(
        "--num-gpus",
        type=non_negative_int,
        default=None,
        help="GPUs of the private Ray head (default: those detected; fake ones for a CPU profile)",
    )
    p.add_argument("--train-profile", default=None, help="configs/train/<name>.yaml (e.g. a GPU profile)")
    p.add_argument(
        "--method",
        type=method_name,
        choices=METHODS,
        default="cobalt",
        help="what GRPO trains: COBALT (bandit prompts of trajectories) or an online multi-turn "
        "baseline (grpo_mt, verpo_mt: one row per training problem); an online method's GRPO "
        "profile is <method>_<the profile's train_profile> (e.g. grpo_mt_quickstart) unless "
        "--train-profile names one of that method's",
    )
    p.add_argument(
        "--train-seed",
        type=non_negative_int,
        default=None,
        help="the training seed (the profile's train_seed): GRPO's data.seed and "
        "actor_rollout_ref.rollout.seed, or the control arm's SFT seed; the warm-up keeps its own "
        "(warmup.seed), so every seed starts from the same base (default: the profile's; unset: the "
        "train profile's seeds)",
    )
    p.add_argument(
        "--arm",
        choices=ARMS,
        default=None,
        help="what the base model is compared with: trained (COBALT GRPO) or control (SFT on the "
        "training instances' programs, the profile's `control` settings, no GRPO); default: the "
        "profile's arm, else trained",
    )
    p.add_argument(
        "--base-run",
        type=caller_path,
        default=None,
        help="a run directory whose base (problems, warm-up, base evaluations) this run takes "
        "instead of making its own; its settings must give the same base (cobalt/recipes/quickstart/base.py)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the resolved settings as JSON and exit (runs nothing)"
    )
    args = p.parse_args(argv)
    source = args.profile if args.profile.endswith((".yaml", ".yml")) else f"configs/{args.profile}.yaml"
    cfg = from_dict(QuickstartConfig, load_config(args.profile), source=source)
    overrides = {
        k: getattr(args, k)
        for k in (
            "model",
            "problems",
            "engine_config",
            "train_profile",
            "num_gpus",
            "train_seed",
            "arm",
            "base_run",
        )
        if getattr(args, k) is not None
    }
    cfg = dataclasses.replace(cfg, **overrides)
    try:
        cfg = with_method(cfg, args.method, explicit=args.train_profile is not None)
    except ConfigError as e:
        p.error(str(e))
    check_settings(cfg, source)
    if args.dry_run:
        print(json.dumps({"profile": args.profile, **dry_run_plan(cfg)}, indent=1))
        return 0
    root = pick_run_dir(ROOT / "runs", args.run_dir, args.new)
    root.mkdir(parents=True, exist_ok=True)
    run = Run(root, cfg, args.profile)
    return run_to_report(run, run_pipeline)


def with_method(cfg: QuickstartConfig, method: str, explicit: bool) -> QuickstartConfig:
    """The settings with the GRPO profile of ``method``: an online method's is
    ``<method>_<train_profile>`` unless ``--train-profile`` (``explicit``) names one; ConfigError when
    the profile trains another method or the method has no profile for this run."""
    if method != "cobalt" and not explicit:
        name = f"{method}_{cfg.train_profile}"
        if name not in profiles_of(method):
            raise ConfigError(
                f"--method {method}: no GRPO profile {name} for train_profile {cfg.train_profile}; pass "
                f"--train-profile one of {method}'s ({', '.join(profiles_of(method))})"
            )
        cfg = dataclasses.replace(cfg, train_profile=name)
    check_method(method, cfg.train_profile)
    if method != "cobalt" and cfg.arm != "trained":
        raise ConfigError(f"--method {method} trains with GRPO: the control arm is COBALT's comparison only")
    return cfg


def check_settings(cfg: QuickstartConfig, source: str) -> None:
    """Fail before any stage on settings that would fail a stage later: no trajectories at all,
    offline trajectories without the procedural problems they mutate, a pre-registered test of
    something the run won't evaluate."""
    if not cfg.train_samples and not cfg.offline_trajectories and not is_online(cfg):
        raise SystemExit(
            f"{source}: train_samples is 0 and there are no offline_trajectories: no training data"
        )
    if cfg.offline_trajectories and cfg.problems != "procedural":
        raise SystemExit(f"{source}: offline_trajectories needs problems: procedural, not {cfg.problems!r}")
    if cfg.problems not in (*PROBLEM_SETS, "procedural") and not Path(cfg.problems).is_file():
        raise ConfigError(
            f"--problems {cfg.problems}: no such file (a problems file, or one of {', '.join([*PROBLEM_SETS, 'procedural'])})"
        )
    if cfg.warmup.get("seed") == WARM_UP_SEED_FROM_TRAINING and cfg.train_seed is None:
        raise ConfigError(
            f"{source}: warmup.seed is train_seed (a start per training seed): pass --train-seed"
        )
    prereg = cfg.preregistration
    if not prereg:
        return
    evaluated = {"heldout"}
    evaluated |= {"training_problems"} if cfg.train_eval_problems else set()
    evaluated |= (
        {"heldout_families"}
        if cfg.problems == "procedural" and cfg.procedural.get("heldout_families")
        else set()
    )
    primary, turn = prereg.get("primary", "heldout"), prereg.get("turn", "last")
    if primary not in evaluated:
        raise SystemExit(
            f"{source}: preregistration.primary: {primary!r}; this run evaluates {sorted(evaluated)}"
        )
    if turn != "last" and not (isinstance(turn, int) and 0 <= turn <= cfg.eval_turns):
        raise SystemExit(f"{source}: preregistration.turn: {turn!r}; expected last or 0..{cfg.eval_turns}")


def dry_run_plan(cfg: QuickstartConfig) -> dict:
    """The settings a run would use, with its GRPO profile's batch: what ``--dry-run`` prints."""
    from cobalt.train.profile import load_profile

    overrides = load_profile(cfg.train_profile).overrides
    grpo = {
        k: overrides.get(k)
        for k in ("data.train_batch_size", "actor_rollout_ref.rollout.n", "actor_rollout_ref.actor.optim.lr")
    }
    return {"settings": dataclasses.asdict(cfg), "grpo_profile": grpo, "training": training_plan(cfg)}


def training_plan(cfg: QuickstartConfig) -> dict:
    """What follows the base model in this arm, with its seeds: GRPO and the seed overrides it is
    given, or the control's SFT command (its paths relative to a run directory)."""
    warm = warm_up_seed(cfg)
    if cfg.arm == "trained":
        return {
            "arm": "trained",
            "train_seed": cfg.train_seed,
            "warm_up_seed": warm,
            "grpo_seed_overrides": seed_overrides(cfg),
        }
    run = Run(Path("RUN_DIR"), cfg, "dry-run")  # paths only: nothing is read or written there
    train = (
        procedural_files(run)["train"] if cfg.problems == "procedural" else run.root / rundir.TRAIN_PROBLEMS
    )
    command = control_sft_command(run, run.root / "models/warm", train)
    return {
        "arm": "control",
        "train_seed": cfg.train_seed,
        "warm_up_seed": warm,
        "control_sft": " ".join(["python", *(str(a) for a in command[1:])]),
    }


if __name__ == "__main__":
    sys.exit(run_cli(main))
