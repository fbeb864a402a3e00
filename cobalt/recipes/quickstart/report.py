"""The quickstart's ``report/``: ``report.md`` with its figures beside it, and ``report.json``.

Held-out Pass@1 per turn of base and trained with 95% intervals, their paired difference and a
verdict computed from it (:mod:`cobalt.eval.comparison`); for procedural problems the same split
into unseen-program instances (the primary split) and seen-program ones (:mod:`cobalt.data.novelty`),
from the per-instance rows report.json keeps (``per_instance``); their repair rates beside an independent
resample (:mod:`cobalt.eval.repair`), and the same on training problems when
the run evaluated some (did the policy learn what it trained on?); the training curves and health signals
of GRPO from veRL's metrics file (:mod:`cobalt.eval.training_curves`); counts per stage, stage
times and the exact command of every stage. Everything is read from the run directory's files
and the run's stage record; nothing here runs a stage.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from pathlib import Path

from cobalt.common import rundir
from cobalt.common.jsonl import load_jsonl
from cobalt.data.novelty import KINDS, UNSEEN, run_novelty
from cobalt.data.procedural.generate import parse_id
from cobalt.eval import training_curves
from cobalt.eval.comparison import (
    column,
    compare,
    compare_rows,
    paired_rows,
    pass_at_1_by_problem,
    plot_comparison,
)
from cobalt.eval.repair import compare_repair, repair_section
from cobalt.eval.report import markdown_table, summarize
from cobalt.eval.significance import PairedDifference, describe, outcome
from cobalt.pipeline import report as stage_report

STEP_COLUMNS = {  # report.json's name: veRL metric
    "reward_mean": "critic/score/mean",
    "correctness_mean": "reward/correctness/mean",
    "improvement_mean": "reward/improvement/mean",
    "format_mean": "reward/format_reward/mean",
    "pass_rate_mean": "reward/pass_rate/mean",
    "groups_with_spread": training_curves.SPREAD,
    "response_length_mean": "response_length/mean",
    "truncated_fraction": "response_length/clip_ratio",
    "rollout_probs_diff_mean": "training/rollout_probs_diff_mean",  # absent when veRL bypasses
    "ppo_kl": "actor/ppo_kl",  # the old log-probs (then the rollout's) vs the trainer's
    "pg_loss": "actor/pg_loss",
    "step_s": "timing_s/step",  # a design's cost per training example
    "evaluator_requests": "reward/evaluator_requests/count",
}


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What the quickstart knows of its run: where, which profile and settings, its stage record
    (``{stage: {"seconds", "concurrent"?}, "commands": {name: command}}``), its files."""

    root: Path
    profile: str
    config: dict
    state: dict
    files: dict[str, Path]
    seconds: float  # this invocation


def grpo_steps(metrics_file: Path) -> list[dict]:
    """One row per training step (steps that only validated are left out)."""
    metrics = training_curves.read_metrics(metrics_file) if metrics_file.exists() else {}
    return [
        {"step": step, **{name: values.get(key) for name, key in STEP_COLUMNS.items()}}
        for step, values in metrics.items()
        if "critic/score/mean" in values
    ]


def counts(files: dict[str, Path]) -> dict[str, int]:
    """Problems, trajectories, bandit prompts and training rows (an online method has neither
    trajectories nor bandit prompts: 0)."""
    trajectories = load_jsonl(files["trajectories"]) if "trajectories" in files else []
    return {
        "train_problems": len(load_jsonl(files["train"])),
        "heldout_problems": len(load_jsonl(files["heldout"])),
        "trajectories": len(trajectories),
        "trajectories_with_spread": sum(
            any(max(row) > min(row) for row in r["all_pass_rates"]) for r in trajectories
        ),
        "bandit_prompts": len(load_jsonl(files["bandit"])) if "bandit" in files else 0,
        "train_rows": parquet_rows(files["parquet"] / "train.parquet"),
    }


def parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(path).num_rows


EVALUATIONS = {  # report.json's key: (base file, trained file, problem set, figure)
    "heldout": ("base_eval", "trained_eval", "held-out", "pass_at_1.png"),
    "training_problems": ("base_train_eval", "trained_train_eval", "training", "pass_at_1_train.png"),
    "heldout_families": (
        "base_families_eval",
        "trained_families_eval",
        "held-out-family",
        "pass_at_1_families.png",
    ),
}


def evaluations(run: RunRecord) -> dict:
    """Base vs trained on each problem set the run evaluated (training problems only when the
    profile asked for them), each with its figure drawn into ``report/``; procedural problems also
    per family."""
    out = {}
    for key, (base, trained, problem_set, figure) in EVALUATIONS.items():
        if base not in run.files:
            continue
        if key == "heldout" and (run.config.get("procedural") or {}).get("evaluate") == "dev":
            problem_set = "dev"  # a tuning run evaluates the dev split in the held-out set's place
        base_file, trained_file = run.files[base], run.files[trained]
        comparison = compare(base_file, trained_file, seed=run.config.get("seed", 0), problem_set=problem_set)
        plot_comparison(comparison, run.root / rundir.figure(figure))
        families = per_family(base_file, trained_file)
        rows = per_instance(base_file, trained_file, novelty_of(run, key, problem_set))
        by_novelty = novelty_comparisons(rows, seed=run.config.get("seed", 0), problem_set=problem_set)
        out[key] = {
            "figure": figure,
            "pass_at_1": {"base": summarize(str(base_file)), "trained": summarize(str(trained_file))},
            "comparison": stage_report.jsonable(comparison),
            "repair": compare_repair(base_file, trained_file, seed=run.config.get("seed", 0)),
            **({"per_family": families} if families else {}),
            **({"by_novelty": by_novelty} if by_novelty else {}),
            "per_instance": rows,
        }
    return out


NOVELTY_SPLITS = {"held-out": "heldout", "dev": "dev"}  # problem set: the procedural split it is


def novelty_of(run: RunRecord, key: str, problem_set: str) -> dict[str, str]:
    """``{id: unseen | seen_sft | seen_grpo}`` of the evaluated in-family instances of a run of
    procedural problems (:mod:`cobalt.data.novelty`); empty for anything else."""
    split = NOVELTY_SPLITS.get(problem_set) if key == "heldout" else None
    if split is None or not (run.root / rundir.PROCEDURAL / "solutions.jsonl").exists():
        return {}
    return run_novelty(run.root).get(split, {})


def per_instance(base_file: Path, trained_file: Path, novelty: dict[str, str]) -> list[dict]:
    """One row per problem both evaluated: its id, Pass@1 % per turn of base and trained, and its
    program novelty when known. Kept in report.json: every split can be recomputed from it."""
    ids, base, trained = paired_rows(pass_at_1_by_problem(base_file), pass_at_1_by_problem(trained_file))
    return [
        {"id": i, "base": b, "trained": t, **({"novelty": novelty[str(i)]} if str(i) in novelty else {})}
        for i, b, t in zip(ids, base, trained)
    ]


def novelty_comparisons(rows: list[dict], seed: int = 0, problem_set: str = "held-out") -> dict | None:
    """Base vs trained on the unseen-program instances (the primary split) and on the seen-program
    ones (an SFT or a GRPO training program), from :func:`per_instance` rows; None when no row
    has a novelty."""
    if not any("novelty" in r for r in rows):
        return None
    tally = {kind: sum(r.get("novelty") == kind for r in rows) for kind in KINDS}
    out: dict = {"counts": tally}
    for name, keep in (("unseen", lambda k: k == UNSEEN), ("seen", lambda k: k is not None and k != UNSEEN)):
        chosen = [r for r in rows if keep(r.get("novelty"))]
        if chosen:
            label = f"{name}-program {problem_set}"
            compared = compare_rows([r["base"] for r in chosen], [r["trained"] for r in chosen], seed, label)
            out[name] = stage_report.jsonable(compared)
    return out


def per_family(base_file: Path, trained_file: Path) -> list[dict] | None:
    """Mean Pass@1 (%) per turn of each procedural family, base and trained, over the problems
    both evaluated; None when a problem id is not a procedural one (``fam-<family>-<seed>``)."""
    ids, base, trained = paired_rows(pass_at_1_by_problem(base_file), pass_at_1_by_problem(trained_file))
    try:
        families = [parse_id(str(i))[0] for i in ids]
    except ValueError:
        return None
    rows = collections.defaultdict(lambda: ([], []))  # family: (base rows, trained rows)
    for family, b, t in zip(families, base, trained):
        rows[family][0].append(b)
        rows[family][1].append(t)

    def mean_per_turn(grid: list[list[float]]) -> list[float]:
        return [round(sum(column(grid, turn)) / len(grid), 2) for turn in range(len(grid[0]))]

    return [
        {"family": f, "problems": len(b), "base": mean_per_turn(b), "trained": mean_per_turn(t)}
        for f, (b, t) in sorted(rows.items())
    ]


def build(run: RunRecord) -> dict:
    """report.json's content; draws the figures into ``report/``."""
    files, out = run.files, run.root / rundir.REPORT_DIR
    evaluated = evaluations(run)
    metrics = run.root / rundir.GRPO_METRICS
    steps = grpo_steps(metrics)
    if steps:
        training_curves.plot(metrics, out / "training.png")
    prereg = run.config.get("preregistration") or {}
    return {
        "profile": run.profile,
        "arm": run.config.get("arm", "trained"),
        "train_seed": run.config.get("train_seed"),
        "config": run.config,
        "start_model": start_model(run.root),
        "counts": counts(files),
        "grpo": steps,
        "training_figure": bool(steps),
        **evaluated,
        **({"preregistered": preregistered_outcome(prereg, evaluated)} if prereg else {}),
        **stage_report.stage_times(run.state),
        "commands": run.state.get("commands", {}),
        "seconds": round(run.seconds, 1),
    }


def start_model(root: Path) -> dict | None:
    """The model the run trained from and its weights' hash (``start_model.json``), if recorded."""
    path = root / rundir.START
    return json.loads(path.read_text()) if path.exists() else None


def preregistered_outcome(prereg: dict, evaluated: dict) -> dict:
    """The test the profile fixed before the run (``preregistration``: problem set, turn, alpha),
    applied to the run's comparison: the difference, its interval and p, and whether it shows an
    improvement (p < alpha and trained better)."""
    key, alpha = prereg.get("primary", "heldout"), float(prereg.get("alpha", 0.05))
    if key not in evaluated:
        raise ValueError(f"preregistration.primary: {key!r} was not evaluated in this run")
    differences = evaluated[key]["comparison"]["difference"]
    turn = prereg.get("turn", "last")
    index = len(differences) - 1 if turn == "last" else int(turn)
    d = PairedDifference(**differences[index])
    return {
        "problem_set": evaluated[key]["comparison"]["problem_set"],
        "turn": index,
        "alpha": alpha,
        "difference": dataclasses.asdict(d),
        "improved": outcome(d, alpha) == "improved",
    }


def write_report(run: RunRecord) -> Path:
    """``report/report.json``, the figures and, last (the run is done), ``report/report.md``;
    returns the Markdown's path."""
    (run.root / rundir.REPORT_DIR).mkdir(parents=True, exist_ok=True)
    report = build(run)
    rundir.write_atomically(run.root / rundir.REPORT_JSON, json.dumps(report, indent=1))
    warm = json.loads((run.root / rundir.MODELS_WARM / rundir.WARM_UP_RECORD).read_text())
    control_file = run.root / rundir.MODELS_CONTROL / rundir.WARM_UP_RECORD
    control = json.loads(control_file.read_text()) if report["arm"] == "control" else None
    passes = [pass_at_1_section(report[key]) for key in EVALUATIONS if key in report]
    repairs = [
        repair_section(report[k]["repair"], report[k]["comparison"]["problem_set"])
        for k in EVALUATIONS
        if k in report
    ]
    families = [family_section(report[k]) for k in EVALUATIONS if "per_family" in report.get(k, {})]
    novelty = [novelty_section(report[k]) for k in EVALUATIONS if "by_novelty" in report.get(k, {})]
    sections = (
        header(run, report, warm),
        preregistered_section(report),
        *novelty,
        *passes,
        *repairs,
        *families,
        training(report, control),
        counts_table(report),
        times_table(report),
        stage_report.commands(report),
    )
    text = "\n".join(line for section in sections for line in section)
    return rundir.write_atomically(run.root / rundir.DONE, text)


VERDICTS = {
    "heldout": "Verdict.",
    "heldout_families": "Out of family.",
    "training_problems": "On training problems.",
}


def preregistered_section(report: dict) -> list[str]:
    """The pre-registered settings as the profile fixed them, and the outcome of its test."""
    if "preregistered" not in report:
        return []
    prereg, result = report["config"]["preregistration"], report["preregistered"]
    d = PairedDifference(**result["difference"])
    shown = "shown" if result["improved"] else "not shown"
    return [
        "## Pre-registered test",
        "",
        "Fixed in the profile before the run:",
        "",
        *[f"- {key.replace('_', ' ')}: {value}" for key, value in prereg.items()],
        "",
        f"**Outcome.** Trained − base Pass@1 on {result['problem_set']} problems at "
        f"turn {result['turn']}: {describe(d)}. An improvement at α = {result['alpha']:g} is **{shown}**.",
        "",
    ]


def warm_up_source(run: RunRecord, warm: dict) -> str:
    """Which problems' reference solutions the warm-up learned (``warm_up.json``'s ``problems``):
    every training problem, some of them (``warmup.problems``), or problems of another set."""
    train = {r["id"] for r in load_jsonl(run.files["train"])}
    used = warm.get("problems")
    if used is None:  # a warm-up written before the file listed its problems
        return f"the {len(train)} training problems' reference solutions"
    inside = sum(p in train for p in used)
    if inside == len(used) == len(train):
        return f"the {len(train)} training problems' reference solutions"
    if inside == len(used):
        return f"the reference solutions of {len(used)} of the {len(train)} training problems"
    return f"the reference solutions of {len(used)} problems, {inside} of them training problems"


def header(run: RunRecord, report: dict, warm: dict) -> list[str]:
    c = report["counts"]
    evaluated = report["heldout"]["comparison"]["problem_set"] if "heldout" in report else "held-out"
    return [
        f"# {method_name(report)} quickstart — {run.root.name}",
        "",
        f"Profile `{run.profile}`; base model `{run.config['model']}` after an SFT warm-up on "
        f"{warm_up_source(run, warm)} ({warm['steps']} step(s), loss "
        f"{warm['first_loss']} → {warm['last_loss']}). The warm-up is part of the base model: both curves "
        f"start from it. {evaluated.capitalize()} problems ({c['heldout_problems']}) were never used for warm-up or "
        f"training{reused(report)}.",
        "",
        arm_line(report),
        "",
        *[
            f"**{title}** {report[key]['comparison']['verdict']}\n"
            for key, title in VERDICTS.items()
            if key in report
        ],
    ]


def arm_line(report: dict) -> str:
    """Which arm the run is (what its "trained" model is) and its training seed."""
    seed = report.get("train_seed")
    seeds = f"training seed {seed}" if seed is not None else "training seed unset (the train profile's seeds)"
    warm = (report["config"].get("warmup") or {}).get("seed", 0)
    if warm == "train_seed":  # each training seed's own start (config.warm_up_seed)
        warm = seed
    if report.get("arm", "trained") == "control":
        return (
            f"**Arm: control** ({seeds}; warm-up seed {warm}): the model called *trained* below is the "
            "control, the base fine-tuned with SFT on the training instances' programs (no GRPO, no "
            "COBALT reward)."
        )
    return f"**Arm: trained** ({seeds}; warm-up seed {warm}): the base trained with {method_name(report)}'s GRPO."


def method_name(report: dict) -> str:
    """What the run's GRPO profile trains: COBALT, GRPO-MT or VeRPO-MT."""
    from cobalt.train.profile import METHOD_NAMES, load_profile

    return METHOD_NAMES[load_profile(report["config"].get("train_profile", "quickstart")).method]


def reused(report: dict) -> str:
    """How many evaluated instances reuse a training program (when the run knows)."""
    split = report.get("heldout", {}).get("by_novelty")
    if not split:
        return ""
    c = split["counts"]
    seen = c["seen_sft"] + c["seen_grpo"]
    return f", but {seen} of them have a training instance's program (see the split by program novelty)"


def pass_at_1_section(evaluation: dict) -> list[str]:
    comparison = evaluation["comparison"]
    diffs = comparison["difference"]
    return [
        f"## Pass@1 per turn on {comparison['problem_set']} problems (hidden tests)",
        "",
        f"![Pass@1 per turn]({evaluation['figure']})",
        "",
        "Bands and error bars: 95% bootstrap intervals over problems (seeded); p: two-sided paired "
        "sign-flip test over problems (exact up to 16 problems, and at any number when each problem has "
        "one pass/fail answer per model: McNemar's exact test).",
        "",
        markdown_table(evaluation["pass_at_1"]),
        "| turn | trained − base (points, 95% CI, p) |",
        "|---|---|",
        *[f"| {t} | {describe(PairedDifference(**d))} |" for t, d in enumerate(diffs)],
        "",
    ]


def novelty_section(evaluation: dict) -> list[str]:
    """Pass@1 at the last turn on unseen-program instances (the primary split) and on
    seen-program ones, with the paired difference of each."""
    split, problem_set = evaluation["by_novelty"], evaluation["comparison"]["problem_set"]
    c = split["counts"]
    lines = []
    for name in ("unseen", "seen"):
        if name not in split:
            continue
        comparison = split[name]
        last = len(comparison["difference"]) - 1
        base, trained = comparison["base"][last]["mean"], comparison["trained"][last]["mean"]
        d = PairedDifference(**comparison["difference"][last])
        lines.append(
            f"| {name}-program | {comparison['problems']} | {base:.1f} | {trained:.1f} | {describe(d)} |"
        )
    return [
        f"## {problem_set.capitalize()} problems by program novelty (hidden tests, last turn)",
        "",
        f"An instance is unseen-program when its reference program, normalized (names renamed, constants "
        f"kept), is no SFT warm-up program and no GRPO training program: {c['unseen']} unseen; "
        f"{c['seen_sft']} seen in the SFT warm-up, {c['seen_grpo']} seen only in GRPO's training "
        "instances. The unseen-program split is the one that asks whether the model learned beyond "
        "the programs it trained on.",
        "",
        "| programs | problems | base Pass@1 % | trained Pass@1 % | trained − base (points, 95% CI, p) |",
        "|---|---:|---:|---:|---|",
        *lines,
        "",
    ]


def family_section(evaluation: dict) -> list[str]:
    """Pass@1 per procedural family at the first and the last turn; a family whose base model
    solves all or none of its problems at turn 0 is marked: its GRPO groups rarely differ in reward."""
    rows = evaluation["per_family"]
    last = len(rows[0]["base"]) - 1
    lines = []
    for r in rows:
        mark = " (all)" if r["base"][0] == 100 else " (none)" if r["base"][0] == 0 else ""
        lines.append(
            f"| {r['family']}{mark} | {r['problems']} | {r['base'][0]:.0f} | {r['base'][last]:.0f} "
            f"| {r['trained'][0]:.0f} | {r['trained'][last]:.0f} |"
        )
    return [
        f"## Pass@1 per family on {evaluation['comparison']['problem_set']} problems (hidden tests, %)",
        "",
        f"| family | problems | base turn 0 | base turn {last} | trained turn 0 | trained turn {last} |",
        "|---|---:|---:|---:|---:|---:|",
        *lines,
        "",
        "(all) / (none): the base model solves every / no problem of the family at turn 0.",
        "",
    ]


TABLE_COLUMNS = {  # report.json's name: column heading
    "reward_mean": "reward mean",
    "pass_rate_mean": "pass rate mean",
    "groups_with_spread": "groups with reward spread",
    "truncated_fraction": "truncated",
    "rollout_probs_diff_mean": "mean abs(p_rollout - p_trainer)",
    "ppo_kl": "actor ppo_kl",
}


def step_table(steps: list[dict]) -> list[str]:
    """One row per step; the columns some step has a value for."""
    names = [n for n in TABLE_COLUMNS if any(s.get(n) is not None for s in steps)]
    return [
        "| step | " + " | ".join(TABLE_COLUMNS[n] for n in names) + " |",
        "|---:|" + "---:|" * len(names),
        *[f"| {s['step']} | " + " | ".join(_fmt(s[n]) for n in names) + " |" for s in steps],
    ]


def training(report: dict, control: dict | None = None) -> list[str]:
    if control is not None:
        return [
            "## Control SFT",
            "",
            f"The control arm fine-tuned the base on {control['examples']} training instances' programs: "
            f"{control['steps']} step(s) of batch {control.get('batch_size', '?')}, lr {control['lr']}, "
            f"seed {control.get('seed', 0)}, loss {control['first_loss']} → {control['last_loss']}. No GRPO ran.",
            "",
        ]
    figure = (
        ["![Training curves](training.png)", ""]
        if report["training_figure"]
        else [f"No training metrics: veRL's file logger wrote no `{rundir.GRPO_METRICS}` in this run.", ""]
    )
    return [
        "## GRPO training",
        "",
        *figure,
        *step_table(report["grpo"]),
        "",
        "A group with reward spread is a prompt whose sampled responses did not all score the same: "
        "only those give GRPO a non-zero advantage. Truncated: the fraction of responses cut at the "
        "length limit. The rollout–trainer gap: veRL's mean |p_rollout − p_trainer| of the sampled "
        "tokens when it recomputes old log-probs; `actor/ppo_kl` is the KL between the old log-probs "
        "(the rollout's when veRL bypasses the recomputation) and the trainer's during the update.",
        "",
    ]


def counts_table(report: dict) -> list[str]:
    rows = [f"| {k.replace('_', ' ')} | {v} |" for k, v in report["counts"].items()]
    return ["## Counts", "", "| stage | count |", "|---|---:|", *rows, ""]


def times_table(report: dict) -> list[str]:
    return [
        *stage_report.times_table(report),
        f"This invocation of the quickstart took {report['seconds']:.0f} s (stages already done are skipped, "
        "and their times above are those of the run that did them).",
        "",
    ]


def _fmt(value) -> str:
    return "" if value is None else f"{value:.3g}"
