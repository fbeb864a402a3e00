"""The plan of the pre-registered generalize design (docs/preregistration.md).

    python -m cobalt.design --plan                       # configs/generalize_design.yaml
    python -m cobalt.design --plan --config my_design --json
    python -m cobalt.design --report                     # the pooled analysis of the runs so far

Lists every run of the design (trained and control once per training seed; the placebo repair
per trained seed), where each keeps its results (``runs_dir/<arm>-seed<k>``), whether it is
done, started or still to run, its command (the quickstart on the design's ``run_profile`` with ``--arm`` and
``--train-seed``; ``python -m cobalt.eval.repair_run`` on a trained seed's evaluations for the
repair), and the wall-time estimate of each arm and of the whole design from the cost coefficients of the design
file (measured in docs/benchmarks.md). It runs nothing. A run is resumable as the quickstart's
runs are: a stage whose output exists is skipped (the repair: a problem already written is).
The base (warm-up and base evaluation) is made once, by trained seed 0's run; every other run
takes it with ``--base-run`` (cobalt/recipes/quickstart/base.py), so all arms compare with one base.
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
from cobalt.recipes.design.report import repair_path, run_name
from cobalt.recipes.quickstart.config import ARMS

BASE_SEED = 0  # the trained seed whose run makes the base every other run takes (--base-run)


def load_design(name: str | Path = "generalize_design") -> dict:
    from cobalt.eval.repair import MIN_REPAIR_SAMPLES

    design = load_config(name)
    missing = [
        k
        for k in ("profile", "run_profile", "seeds", "runs_dir", "control", "repair", "cost")
        if k not in design
    ]
    if "profile" in missing and "run_profile" in missing:  # a run's profile, say, not a design
        raise ConfigError(
            f"{config_path(name)} is not a design (it has no {', '.join(missing)}): --config takes a "
            "design such as generalize_design or design_smoke"
        )
    if missing:
        raise ConfigError(f"{config_path(name)}: no {missing[0]!r}")
    samples = design["repair"].get("samples")
    if not isinstance(samples, int) or samples < MIN_REPAIR_SAMPLES:
        raise ConfigError(
            f"{config_path(name)}: repair.samples: {samples!r}; the repair runner takes at least {MIN_REPAIR_SAMPLES}"
        )
    return design


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


def repair_command(cfg, repair: dict, trained_dir: Path, output: Path) -> str:
    """The placebo repair of one trained seed (``python -m cobalt.eval.repair_run``): the turn-0
    failures of its held-out and out-of-family evaluations, its trained model, the profile's
    sampling settings and engine, ``repair.samples`` per failure and arm. Run after the trained
    run (it reads that run's files)."""
    inputs = [trained_dir / rundir.evaluated("eval_trained")]
    if int(cfg.procedural.get("heldout_families", 0)):
        inputs.append(trained_dir / rundir.evaluated("eval_trained_families"))
    return " ".join(
        [
            "python -m cobalt.eval.repair_run -i",
            *map(str, inputs),
            f"-o {output} --model {trained_dir / rundir.trained_model(cfg.grpo_steps)}",
            f"--engine-config {cfg.engine_config} --samples {repair['samples']}",
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
    control_steps: int  # the control's SFT optimizer steps

    @property
    def cost(self) -> dict:
        return self.design["cost"]

    @property
    def evaluation_s(self) -> float:
        return self.instances * self.cost["eval_instance_s"]

    @property
    def base_s(self) -> float:  # the base the trained seed-0 run makes for every run
        return self.cost["warmup_s"] + self.cost["offline_s"] + self.evaluation_s

    @property
    def repair_samples(self) -> float:  # per trained seed: 3 arms, repair.samples per turn-0 failure
        repair = self.design["repair"]
        return self.instances * repair["failure_share"] * 3 * repair["samples"]


def sizes(design: dict, root: str | Path) -> Sizes:
    cfg = run_profile_config(design)
    instances = cfg.heldout_problems + int(cfg.procedural.get("heldout_families", 0))
    control = design["control"]
    control_steps = math.ceil(cfg.train_problems * control["epochs"] / control["batch_size"])
    return Sizes(design, cfg, Path(root) / design["runs_dir"], instances, control_steps)


def makes_the_base(arm: str, seed: int) -> bool:
    return (arm, seed) == ("trained", BASE_SEED)


def run_command(z: Sizes, arm: str, seed: int) -> str:
    """The quickstart command of one arm and seed; every run but the base's takes that base."""
    shared = "" if makes_the_base(arm, seed) else f" --base-run {z.runs_dir / run_name('trained', BASE_SEED)}"
    return (
        f"bash scripts/quickstart.sh --profile {z.design['run_profile']} --arm {arm} --train-seed {seed}"
        f"{shared} --run-dir {z.runs_dir / run_name(arm, seed)}"
    )


def run_seconds(z: Sizes, arm: str, seed: int) -> float:
    steps_s = (
        z.cfg.grpo_steps * z.cost["grpo_step_s"]
        if arm == "trained"
        else z.control_steps * z.cost["sft_step_s"]
    )
    return z.cost["per_run_s"] + (z.base_s if makes_the_base(arm, seed) else 0) + steps_s + z.evaluation_s


def run_state(z: Sizes, arm: str, seed: int, seconds: float, command: str) -> dict:
    """One run of the plan: done (its report, or the repair's summary), started or to run, and the
    seconds it still needs."""
    from cobalt.eval.repair_run import summary_path

    name = run_name(arm, seed)
    run_dir = z.runs_dir / name
    repair = repair_path(z.runs_dir, seed)
    done = summary_path(repair).exists() if arm == "repair" else rundir.is_done(run_dir)
    remaining = 0 if done else seconds
    if not done and makes_the_base(arm, seed) and (run_dir / rundir.BASE).exists():
        remaining -= z.base_s
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


def repair_state(z: Sizes, seed: int) -> dict:
    command = repair_command(
        z.cfg, z.design["repair"], z.runs_dir / run_name("trained", seed), repair_path(z.runs_dir, seed)
    )
    return run_state(z, "repair", seed, z.repair_samples * z.cost["answer_s"], command)


def plan(design: dict, root: str | Path = ".") -> dict:
    """Every run of the design with its state and command, and its estimated
    seconds; the seconds of each arm and of the whole design."""
    z = sizes(design, root)
    runs = [
        *[
            run_state(z, arm, s, run_seconds(z, arm, s), run_command(z, arm, s))
            for arm in ARMS
            for s in design["seeds"]
        ],
        *[repair_state(z, s) for s in design["repair"]["seeds"]],
    ]
    arms: dict[str, int] = {}
    for r in runs:
        arms[r["arm"]] = arms.get(r["arm"], 0) + r["seconds"]
    return {
        "profile": design["profile"],
        "seeds": list(design["seeds"]),
        "evaluated_instances": z.instances,
        "control_optimizer_steps": z.control_steps,
        "grpo_optimizer_steps": z.cfg.grpo_steps,
        "repair_samples": round(z.repair_samples),
        "runs": runs,
        "arms_s": arms,
        "setup_s": z.cost["setup_s"],
        "total_s": round(z.cost["setup_s"] + sum(arms.values())),
        "remaining_s": sum(r["remaining_s"] for r in runs),
    }


def describe_plan(p: dict) -> str:
    lines = [
        f"design on {p['profile']}: seeds {p['seeds']}, {p['evaluated_instances']} instances per evaluation; "
        f"control {p['control_optimizer_steps']} SFT steps vs GRPO {p['grpo_optimizer_steps']} steps; "
        f"{p['repair_samples']} repair samples per trained seed",
        "",
    ]
    for r in p["runs"]:
        left = f"  ({r['remaining_s'] / 3600:.2f} h left)" if r["state"] == "started" else ""
        lines.append(f"{r['run']:<16} {r['state']:<7} {r['seconds'] / 3600:5.2f} h  {r['run_dir']}{left}")
        lines.append(f"    command: {r['command']}")
    lines.append("")
    lines += [f"arm {arm:<8} {s / 3600:5.2f} h" for arm, s in p["arms_s"].items()]
    lines.append(
        f"whole design {p['total_s'] / 3600:.2f} h with set-up; still to run {p['remaining_s'] / 3600:.2f} h"
    )
    lines.append("the pre-registered analysis of the runs done so far: python -m cobalt.design --report")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m cobalt.design", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="generalize_design", help="configs/<name>.yaml of the design")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--plan", action="store_true", help="print the plan (runs nothing)")
    mode.add_argument(
        "--report",
        action="store_true",
        help="the pre-registered analysis of the runs made so far (cobalt/recipes/design/report.py): "
        "writes <runs_dir>/design_report.md and .json and prints the Markdown",
    )
    parser.add_argument("--root", default=".", help="the directory runs_dir is under (default: here)")
    parser.add_argument("--json", action="store_true", help="the plan as JSON")
    args = parser.parse_args(argv)
    try:
        design = load_design(args.config)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.report:
        from cobalt.recipes.design.report import write_design_report

        if not Path(args.root).is_dir():
            print(
                f"error: --root {args.root}: no such directory (the one runs_dir is under)", file=sys.stderr
            )
            return 2

        print(write_design_report(design, args.root).read_text())
        return 0
    p = plan(design, args.root)
    print(json.dumps(p, indent=1) if args.json else describe_plan(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
