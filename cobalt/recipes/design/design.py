"""The plan of the pre-registered generalize design (docs/preregistration.md, issue 41).

    python -m cobalt.design --plan                       # configs/generalize_design.yaml
    python -m cobalt.design --plan --config my_design --json
    python -m cobalt.design --report                     # the pooled analysis of the runs so far

Lists every run of the design (trained and control once per training seed; the placebo repair
per trained seed), where each keeps its results (``runs_dir/<arm>-seed<k>``), whether it is
done, started or still to run, its command (the quickstart on the design's ``run_profile`` with ``--arm`` and
``--train_seed``; ``python -m cobalt.eval.repair_run`` on a trained seed's evaluations for the
repair), and the wall-time estimate of each arm and of the whole design from the cost coefficients of the design
file (measured in docs/benchmarks.md). It runs nothing. A run is resumable as the quickstart's
runs are: a stage whose output exists is skipped (the repair: a problem already written is).
The base (warm-up and base evaluation) is made once, by trained seed 0's run; every other run
takes it with ``--base_run`` (cobalt/recipes/quickstart/base.py), so all arms compare with one base.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

from cobalt.common import rundir
from cobalt.common.config import config_path, from_dict, load_config, merge
from cobalt.pipeline.stages import line_count, sampling_flags
from cobalt.recipes.design.report import repair_path, run_name
from cobalt.recipes.quickstart.config import ARMS

BASE_SEED = 0  # the trained seed whose run makes the base every other run takes (--base_run)


def load_design(name: str | Path = "generalize_design") -> dict:
    from cobalt.eval.repair import MIN_REPAIR_SAMPLES

    design = load_config(name)
    for key in ("profile", "run_profile", "seeds", "runs_dir", "control", "repair", "cost"):
        if key not in design:
            raise ValueError(f"{config_path(name)}: no {key!r}")
    samples = design["repair"].get("samples")
    if not isinstance(samples, int) or samples < MIN_REPAIR_SAMPLES:
        raise ValueError(
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
    differ = [f.name for f in dataclasses.fields(cfg) if f.name != "preregistration"
              and getattr(cfg, f.name) != getattr(want, f.name)]  # fmt: skip
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
            f"--engine_config {cfg.engine_config} --samples {repair['samples']}",
            *map(str, sampling_flags(cfg)),
        ]
    )


def plan(design: dict, root: str | Path = ".") -> dict:
    """Every run of the design with its state and command, and its estimated
    seconds; the seconds of each arm and of the whole design."""
    from cobalt.eval.repair_run import summary_path

    cfg, cost, root = run_profile_config(design), design["cost"], Path(root)
    instances = cfg.heldout_problems + int(cfg.procedural.get("heldout_families", 0))
    evaluation = instances * cost["eval_instance_s"]
    control = design["control"]
    control_steps = math.ceil(cfg.train_problems * control["epochs"] / control["batch_size"])
    repair = design["repair"]
    failures = instances * repair["failure_share"]
    runs_dir = root / design["runs_dir"]

    def run(arm: str, seed: int, seconds: float, command: str) -> dict:
        name = run_name(arm, seed)
        done = (
            summary_path(repair_path(runs_dir, seed)).exists()
            if arm == "repair"
            else rundir.is_done(runs_dir / name)
        )
        remaining = 0 if done else seconds
        if not done and (arm, seed) == ("trained", BASE_SEED) and (runs_dir / name / rundir.BASE).exists():
            remaining -= base_seconds
        if not done and arm == "repair":
            written = line_count(repair_path(runs_dir, seed))  # a line per failure done
            remaining *= max(0.0, 1 - written / failures)
        return {
            "arm": arm,
            "run": name,
            "run_dir": str(runs_dir / name),
            "state": "done" if done else "started" if (runs_dir / name).exists() else "to run",
            "done": done,
            "seconds": round(seconds),
            "remaining_s": round(remaining),
            "command": command,
        }

    quickstart = f"bash scripts/quickstart.sh --profile {design['run_profile']}"
    base_dir = runs_dir / run_name("trained", BASE_SEED)

    def command(arm: str, seed: int) -> str:
        shared = "" if (arm, seed) == ("trained", BASE_SEED) else f" --base_run {base_dir}"
        return (
            f"{quickstart} --arm {arm} --train_seed {seed}{shared} --run_dir {runs_dir / run_name(arm, seed)}"
        )

    base_seconds = cost["warmup_s"] + cost["offline_s"] + evaluation

    def seconds(arm: str, seed: int) -> float:
        own = cfg.grpo_steps * cost["grpo_step_s"] if arm == "trained" else control_steps * cost["sft_step_s"]
        base = base_seconds if (arm, seed) == ("trained", BASE_SEED) else 0
        return cost["per_run_s"] + base + own + evaluation

    def repair_seconds_and_command(seed: int) -> tuple[float, str]:
        trained_dir = runs_dir / run_name("trained", seed)
        return failures * 3 * repair["samples"] * cost["answer_s"], repair_command(
            cfg, repair, trained_dir, repair_path(runs_dir, seed)
        )

    runs = [
        *[run(arm, s, seconds(arm, s), command(arm, s)) for arm in ARMS for s in design["seeds"]],
        *[run("repair", s, *repair_seconds_and_command(s)) for s in repair["seeds"]],
    ]
    arms: dict[str, int] = {}
    for r in runs:
        arms[r["arm"]] = arms.get(r["arm"], 0) + r["seconds"]
    total = cost["setup_s"] + sum(arms.values())
    return {
        "profile": design["profile"],
        "seeds": list(design["seeds"]),
        "evaluated_instances": instances,
        "control_optimizer_steps": control_steps,
        "grpo_optimizer_steps": cfg.grpo_steps,
        "repair_samples": round(failures * 3 * repair["samples"]),
        "runs": runs,
        "arms_s": arms,
        "setup_s": cost["setup_s"],
        "total_s": round(total),
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
    parser = argparse.ArgumentParser(prog="python -m cobalt.design", description=__doc__.split("\n\n")[0])
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
    design = load_design(args.config)
    if args.report:
        from cobalt.recipes.design.report import write_design_report

        print(write_design_report(design, args.root).read_text())
        return 0
    p = plan(design, args.root)
    print(json.dumps(p, indent=1) if args.json else describe_plan(p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
