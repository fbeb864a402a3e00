"""The plan of a pre-registered design: the first (docs/preregistration.md, configs/generalize_design.yaml)
or the second, from a fine-tuned start (docs/preregistration_ft.md, configs/design_ft.yaml).

    python -m cobalt.design --plan                       # configs/generalize_design.yaml
    python -m cobalt.design --plan --config design_ft --json
    python -m cobalt.design --report                     # the pooled analysis of the runs so far
    python -m cobalt.design --pilot --config design_ft   # the pilot's dose curve on dev
    python -m cobalt.design --keep --config design_ft    # done runs' results into records/ (git)

Lists every run of the design (each arm once per training seed; the placebo repair per repaired
arm and seed), where each keeps its results (``runs_dir/<arm>-seed<k>``), whether it is done,
started or still to run, its command (the quickstart on the design's ``run_profile`` with the arm's
``--arm`` or ``--method`` and ``--train-seed``; ``python -m cobalt.eval.repair_run`` on a trained
run's evaluations for the repair), and the wall-time estimate of each arm and of the whole design
from the cost coefficients of the design file (measured in docs/benchmarks.md). It runs nothing,
and refuses a design whose estimate exceeds its budget (``budget_h``, 12 hours unless the design
raises it). A run is resumable as the quickstart's runs are: a stage whose output exists is
skipped (the repair: a problem already written is).

The base (problems, the start model, its evaluation and trajectories) is made by the first arm's
run and taken by every other run with ``--base-run`` (cobalt/recipes/quickstart/base.py): once for
the whole design (``start: shared``, the first design: trained seed 0's), or once per training seed
(``start: per_seed``: each seed's own fine-tuned start, which all arms of that seed train from).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

from cobalt.common import rundir
from cobalt.common.cli import ArgumentParser
from cobalt.common.config import config_path, from_dict, load_config, merge
from cobalt.common.errors import ConfigError
from cobalt.pipeline.stages import line_count, sampling_flags
from cobalt.recipes.design.report import DEFAULT_ARMS, arms, repair_path, run_name

BASE_SEED = 0  # start: shared: the seed whose first-arm run makes the base every other run takes
BUDGET_H = 12.0  # hours of runs on the 2-core machine a design may plan, unless its budget_h says more
STEP_COST = {  # the cost coefficient of one optimizer step of each method
    "cobalt": "grpo_step_s",
    "control": "sft_step_s",
    "grpo_mt": "grpo_mt_step_s",
    "verpo_mt": "verpo_mt_step_s",
}
STARTS = ("shared", "per_seed")


def load_design(name: str | Path = "generalize_design") -> dict:
    from cobalt.eval.repair import MIN_REPAIR_SAMPLES

    design = load_config(name)
    required = ("run_profile", "seeds", "runs_dir", "repair", "cost")
    if "arms" not in design:  # the first design: its run profile is checked against profile + control
        required = ("profile", "run_profile", "seeds", "runs_dir", "control", "repair", "cost")
    missing = [k for k in required if k not in design]
    if "profile" not in design and "run_profile" not in design:  # a run's profile, say, not a design
        raise ConfigError(
            f"{config_path(name)} is not a design (it has no {', '.join(missing)}): --config takes a "
            "design such as generalize_design, design_ft or design_smoke"
        )
    if missing:
        raise ConfigError(f"{config_path(name)}: no {missing[0]!r}")
    check_arms(design, config_path(name))
    samples = design["repair"].get("samples")
    if not isinstance(samples, int) or samples < MIN_REPAIR_SAMPLES:
        raise ConfigError(
            f"{config_path(name)}: repair.samples: {samples!r}; the repair runner takes at least {MIN_REPAIR_SAMPLES}"
        )
    return design


def check_arms(design: dict, path: Path) -> None:
    """ConfigError naming the field: an unknown method or start, an arm without its step's cost."""
    for arm, method in arms(design).items():
        if method not in STEP_COST:
            raise ConfigError(f"{path}: arms.{arm}: {method!r}; expected one of {', '.join(STEP_COST)}")
        if STEP_COST[method] not in design["cost"]:
            raise ConfigError(f"{path}: cost: no {STEP_COST[method]!r} for arm {arm} ({method})")
    if design.get("start", "shared") not in STARTS:
        raise ConfigError(f"{path}: start: {design['start']!r}; expected one of {', '.join(STARTS)}")
    repaired = [a for a in design["repair"].get("arms", ["trained"]) if arms(design).get(a) == "control"]
    unknown = [a for a in design["repair"].get("arms", []) if a not in arms(design)]
    if repaired or unknown:
        raise ConfigError(f"{path}: repair.arms: {repaired + unknown}; expected arms trained with GRPO")


def profile_config(design: dict):
    """The quickstart settings every arm shares: the profile with the design's overrides."""
    from cobalt.recipes.quickstart.config import QuickstartConfig

    data = merge(load_config(design["profile"]), design.get("overrides") or {})
    return from_dict(QuickstartConfig, data, source=f"{design['profile']} + design overrides")


def run_profile_config(design: dict):
    """The quickstart profile the design's runs use (``run_profile``), checked to be the design's
    profile with its overrides and its control settings (its preregistration texts may differ)."""
    from cobalt.recipes.quickstart.config import QuickstartConfig

    name = design["run_profile"]
    cfg = from_dict(QuickstartConfig, load_config(name), source=str(config_path(name)))
    if "profile" not in design:  # the run profile is the design's profile itself
        return cfg
    want = dataclasses.replace(profile_config(design), control=dict(design["control"]))
    differ = [
        f.name
        for f in dataclasses.fields(cfg)
        if f.name != "preregistration" and getattr(cfg, f.name) != getattr(want, f.name)
    ]
    if differ:
        raise ValueError(
            f"{config_path(name)}: {', '.join(differ)} differ from the design's profile {design['profile']!r} "
            "with its overrides and control settings; the runs would not be the design's"
        )
    return cfg


def repair_command(cfg, repair: dict, trained_dir: Path, output: Path, extra: str = "") -> str:
    """The placebo repair of one trained run (``python -m cobalt.eval.repair_run``): the turn-0
    failures of its held-out and out-of-family evaluations, its trained model, the profile's
    sampling settings and engine, ``repair.samples`` per failure and arm. Run after the trained
    run (it reads that run's files)."""
    inputs = [trained_dir / rundir.evaluated("eval_trained")]
    if int(cfg.procedural.get("heldout_families", 0)):
        inputs.append(trained_dir / rundir.evaluated("eval_trained_families"))
    engine = extra or f"--engine-config {cfg.engine_config}"
    return " ".join(
        [
            "python -m cobalt.eval.repair_run -i",
            *map(str, inputs),
            f"-o {output} --model {trained_dir / rundir.trained_model(cfg.grpo_steps)}",
            f"{engine} --samples {repair['samples']}",
            *map(str, sampling_flags(cfg)),
        ]
    )


@dataclasses.dataclass(frozen=True)
class Sizes:
    """What the plan's estimates are computed from: the run profile's settings, the design's cost
    coefficients, and the sizes they give."""

    design: dict
    cfg: object  # the run profile's QuickstartConfig
    runs_dir: Path
    instances: int  # evaluated per model: held-out instances and held-out families' instances
    control_steps: int  # the control's SFT optimizer steps (0 without a control arm)

    @property
    def cost(self) -> dict:
        return self.design["cost"]

    @property
    def arms(self) -> dict[str, str]:
        return arms(self.design)

    @property
    def base_arm(self) -> str:
        return next(iter(self.arms))

    @property
    def per_seed(self) -> bool:
        return self.design.get("start", "shared") == "per_seed"

    @property
    def evaluation_s(self) -> float:
        return self.instances * self.cost["eval_instance_s"]

    @property
    def base_s(self) -> float:  # the start model, its trajectories (or offline ones) and its evaluation
        c = self.cost
        return c["warmup_s"] + c.get("offline_s", 0) + c.get("trajectories_s", 0) + self.evaluation_s

    @property
    def repair_samples(self) -> float:  # per repaired run: 3 arms, repair.samples per turn-0 failure
        repair = self.design["repair"]
        return self.instances * repair["failure_share"] * 3 * repair["samples"]

    def steps(self, method: str) -> int:
        return self.control_steps if method == "control" else self.cfg.grpo_steps


def evaluated_heldout(design: dict, cfg) -> int:
    """The in-family held-out instances each model is evaluated on: all, or with
    ``procedural.heldout_unseen_only`` those unseen by form (counted from the seeds, nothing run)."""
    if cfg.problems != "procedural" or not cfg.procedural.get("heldout_unseen_only"):
        return cfg.heldout_problems
    from cobalt.data.novelty import UNSEEN, config_novelty

    return sum(kind == UNSEEN for kind in config_novelty(design["run_profile"])["heldout"].values())


def sizes(design: dict, root: str | Path) -> Sizes:
    cfg = run_profile_config(design)
    instances = evaluated_heldout(design, cfg) + int(cfg.procedural.get("heldout_families", 0))
    control = design.get("control")
    control_steps = (
        math.ceil(cfg.train_problems * control["epochs"] / control["batch_size"]) if control else 0
    )
    return Sizes(design, cfg, Path(root) / design["runs_dir"], instances, control_steps)


def makes_the_base(z: Sizes, arm: str, seed: int) -> bool:
    return arm == z.base_arm and (z.per_seed or seed == BASE_SEED)


def base_run(z: Sizes, seed: int) -> Path:
    """The run whose base a run of ``seed`` takes."""
    return z.runs_dir / run_name(z.base_arm, seed if z.per_seed else BASE_SEED)


def method_flags(z: Sizes, arm: str) -> str:
    """How the quickstart is told what an arm trains: ``--arm`` for COBALT and the control, ``--method``
    for an online baseline; the design's GPU profile and engine (``train_profiles``, ``engine_config``)."""
    method = z.arms[arm]
    flags = (
        f"--method {method}"
        if method not in DEFAULT_ARMS.values()
        else f"--arm {dict(cobalt='trained').get(method, method)}"
    )
    profile = (z.design.get("train_profiles") or {}).get(method)
    flags += f" --train-profile {profile}" if profile else ""
    return flags + (f" --engine-config {z.design['engine_config']}" if z.design.get("engine_config") else "")


def run_command(z: Sizes, arm: str, seed: int) -> str:
    """The quickstart command of one arm and seed; every run but the base's takes that base."""
    shared = "" if makes_the_base(z, arm, seed) else f" --base-run {base_run(z, seed)}"
    return (
        f"bash scripts/quickstart.sh --profile {z.design['run_profile']} {method_flags(z, arm)} --train-seed {seed}"
        f"{shared} --run-dir {z.runs_dir / run_name(arm, seed)}"
    )


def run_seconds(z: Sizes, arm: str, seed: int) -> float:
    method = z.arms[arm]
    steps_s = z.steps(method) * z.cost[STEP_COST[method]]
    return z.cost["per_run_s"] + (z.base_s if makes_the_base(z, arm, seed) else 0) + steps_s + z.evaluation_s


def run_state(
    z: Sizes, arm: str, seed: int, seconds: float, command: str, repaired: str | None = None
) -> dict:
    """One run of the plan: done (its report, or the repair's summary), started or to run, and the
    seconds it still needs."""
    from cobalt.eval.repair_run import summary_path

    repair = repair_path(z.runs_dir, seed, repair_arm(z, repaired))
    name = repair.parent.name if arm == "repair" else run_name(arm, seed)
    run_dir = z.runs_dir / name
    done = summary_path(repair).exists() if arm == "repair" else rundir.is_done(run_dir)
    remaining = 0 if done else seconds
    if not done and arm != "repair" and makes_the_base(z, arm, seed):
        remaining -= base_done_s(z, run_dir)
    if not done and arm == "repair":
        failures = z.instances * z.design["repair"]["failure_share"]
        remaining *= max(0.0, 1 - line_count(repair) / failures)  # a line per failure done
    return {
        "arm": arm,
        "run": name,
        "run_dir": str(run_dir),
        "state": "done" if done else "started" if run_dir.exists() else "to run",
        "done": done,
        "seconds": round(seconds),
        "remaining_s": round(remaining),
        "command": command,
    }


def base_done_s(z: Sizes, run_dir: Path) -> float:
    """The part of the base's estimate a run that makes it has done: all of it once made; before,
    the SFT start once trained, and the rest in proportion to the base's evaluation answers written
    (single and multi-turn, of every evaluated instance; the trajectories run beside them)."""
    if (run_dir / rundir.BASE).exists():
        return z.base_s
    done = z.cost["warmup_s"] if (run_dir / rundir.MODELS_WARM / rundir.WARM_UP_RECORD).exists() else 0.0
    answers = sum(
        line_count(run_dir / rundir.chain_file(tag, step))
        for tag in ("eval_base", "eval_base_families")
        for step in ("single", "multi")
    )
    return done + (z.base_s - z.cost["warmup_s"]) * min(1.0, answers / (2 * z.instances))


def repair_arm(z: Sizes, arm: str | None) -> str | None:
    """The arm named in a repair run's directory: none in the first design (it repairs one arm)."""
    return None if arm is None or "arms" not in z.design["repair"] else arm


def repair_state(z: Sizes, arm: str, seed: int) -> dict:
    output = repair_path(z.runs_dir, seed, repair_arm(z, arm))
    extra = f"--engine-config {z.design['engine_config']}" if z.design.get("engine_config") else ""
    command = repair_command(z.cfg, z.design["repair"], z.runs_dir / run_name(arm, seed), output, extra)
    return run_state(z, "repair", seed, z.repair_samples * z.cost["answer_s"], command, repaired=arm)


def plan(design: dict, root: str | Path = ".") -> dict:
    """Every run of the design with its state and command, and its estimated seconds; the seconds
    of each arm, of set-up, of the whole design (what the budget counts) and of the pilot beside it:
    the pilot is spent before the plan exists, so no cut of the plan could pay for it."""
    z = sizes(design, root)
    repaired = design["repair"].get("arms", [z.base_arm])
    runs = [
        *[
            run_state(z, arm, s, run_seconds(z, arm, s), run_command(z, arm, s))
            for arm in z.arms
            for s in design["seeds"]
        ],
        *[repair_state(z, arm, s) for arm in repaired for s in design["repair"]["seeds"]],
    ]
    arms_s: dict[str, int] = {}
    for r in runs:
        arms_s[r["arm"]] = arms_s.get(r["arm"], 0) + r["seconds"]
    total_s = round(z.cost["setup_s"] + sum(arms_s.values()))
    return {
        "run_profile": design["run_profile"],
        "arms": z.arms,
        "start": design.get("start", "shared"),
        "seeds": list(design["seeds"]),
        "evaluated_instances": z.instances,
        "optimizer_steps": {arm: z.steps(method) for arm, method in z.arms.items()},
        "repair_samples": round(z.repair_samples),
        "runs": runs,
        "arms_s": arms_s,
        "setup_s": z.cost["setup_s"],
        "pilot_s": z.cost.get("pilot_s", 0),
        "total_s": total_s,
        "remaining_s": sum(r["remaining_s"] for r in runs),
        "budget_h": float(design.get("budget_h", BUDGET_H)),
        "gpus": z.cost.get("gpus"),
    }


def check_budget(p: dict, name: str) -> None:
    """ConfigError when the plan's estimate exceeds its budget, with what to cut."""
    if p["total_s"] <= p["budget_h"] * 3600:
        return
    arms_h = ", ".join(f"{arm} {s / 3600:.2f} h" for arm, s in p["arms_s"].items())
    raise ConfigError(
        f"{config_path(name)}: the design's estimate is {p['total_s'] / 3600:.2f} h ({arms_h}, set-up "
        f"{p['setup_s'] / 3600:.2f} h), over its budget of {p['budget_h']:g} h: cut "
        "an arm (VeRPO-MT first), then the repaired runs, then the out-of-family set, or raise budget_h"
    )


def hours(p: dict, seconds: float) -> str:
    """Hours of wall time, and GPU-hours when the design's runs hold GPUs (``cost.gpus``)."""
    gpu = f" ({seconds * p['gpus'] / 3600:,.0f} GPU-h)" if p["gpus"] else ""
    return f"{seconds / 3600:5.2f} h{gpu}"


def describe_plan(p: dict) -> str:
    steps = ", ".join(f"{arm} {n}" for arm, n in p["optimizer_steps"].items())
    lines = [
        f"design on {p['run_profile']}: arms {', '.join(p['arms'])}, seeds {p['seeds']}, base {p['start']}; "
        f"{p['evaluated_instances']} instances per evaluation; optimizer steps: {steps}; "
        f"{p['repair_samples']} repair samples per repaired run",
        "",
    ]
    for r in p["runs"]:
        left = f"  ({r['remaining_s'] / 3600:.2f} h left)" if r["state"] == "started" else ""
        lines.append(f"{r['run']:<16} {r['state']:<7} {hours(p, r['seconds'])}  {r['run_dir']}{left}")
        lines.append(f"    command: {r['command']}")
    lines.append("")
    lines += [f"arm {arm:<8} {hours(p, s)}" for arm, s in p["arms_s"].items()]
    lines.append(
        f"whole design {hours(p, p['total_s']).strip()} with set-up, budget {p['budget_h']:g} h; "
        f"still to run {p['remaining_s'] / 3600:.2f} h"
    )
    if p["pilot_s"]:
        lines.append(
            f"pilot        {hours(p, p['pilot_s'])} before the plan, outside its budget: with it, "
            f"{(p['total_s'] + p['pilot_s']) / 3600:.2f} h of machine time"
        )
    lines.append("the pre-registered analysis of the runs done so far: python -m cobalt.design --report")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m cobalt.design", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="generalize_design", help="configs/<name>.yaml of the design")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--plan", action="store_true", help="print the plan (runs nothing)")
    mode.add_argument(
        "--pilot",
        action="store_true",
        help="the pilot's dev Pass@1 by GRPO step and the dose it gives (a design with a pilot: design_ft)",
    )
    mode.add_argument(
        "--report",
        action="store_true",
        help="the pre-registered analysis of the runs made so far (cobalt/recipes/design/report.py): "
        "writes <runs_dir>/design_report.md and .json and prints the Markdown",
    )
    mode.add_argument(
        "--keep",
        action="store_true",
        help="keep every done run's analysis files in git under --records (cobalt/recipes/design/records.py): "
        "a session's machine keeps nothing",
    )
    parser.add_argument("--root", default=".", help="the directory runs_dir is under (default: here)")
    parser.add_argument("--records", default="records", help="where --keep puts them (default: records)")
    parser.add_argument("--json", action="store_true", help="the plan as JSON")
    args = parser.parse_args(argv)
    try:
        design = load_design(args.config)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.keep:
        from cobalt.recipes.design.records import keep

        try:
            written = keep(design, plan(design, args.root)["runs"], args.root, args.records)
        except FileExistsError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"kept {len(written)} files under {args.records}" + "".join(f"\n  {p}" for p in written))
        return 0
    if args.pilot:
        from cobalt.recipes.design.pilot import describe_pilot

        if not design.get("pilot"):
            print(f"error: {config_path(args.config)} has no pilot", file=sys.stderr)
            return 2
        try:
            print(describe_pilot(design, args.root))
        except ValueError as e:  # a pilot profile that would read held-out data, or a broken one
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    if args.report:
        if "arms" in design:  # the second design (preregistration_ft.md)
            from cobalt.recipes.design.report_ft import write_report as write_design_report
        else:
            from cobalt.recipes.design.report import write_design_report

        if not Path(args.root).is_dir():
            print(
                f"error: --root {args.root}: no such directory (the one runs_dir is under)", file=sys.stderr
            )
            return 2

        print(write_design_report(design, args.root).read_text())
        return 0
    p = plan(design, args.root)
    try:
        check_budget(p, args.config)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(p, indent=1) if args.json else describe_plan(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
