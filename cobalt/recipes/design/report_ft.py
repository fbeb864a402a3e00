"""The analysis of the second design (docs/preregistration_ft.md, configs/design_ft.yaml).

Reads, for each training seed k, ``cobalt-seed<k>/report/report.json`` (its base is the SFT start:
the SFT arm; its trained model: SFT + COBALT) and ``grpo_mt-seed<k>/report/report.json`` (SFT +
GRPO-MT, on the same base), each cobalt run's labels by behaviour (``novelty_by_behaviour.json``,
made once from its trajectories by :mod:`cobalt.data.novelty`) and the repair files, and computes
what the pre-registration fixes: the primary test (SFT + COBALT − SFT on the instances unseen by
behaviour for every seed, after the last feedback turn, pooled over seeds), the seven secondary
comparisons with Holm's correction (COBALT's match with GRPO-MT also by its 90 % interval), Pass@1
per turn of each arm and seed, the cost per training example, and the repair tables. Until every
run is done it names the missing ones and gives no verdict.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from cobalt.common import rundir
from cobalt.common.errors import DataError
from cobalt.data.novelty import SEEN_TRAINING, UNSEEN
from cobalt.eval.significance import (
    ALPHA,
    bootstrap_interval,
    format_p,
    paired_difference,
    pooled_paired_test,
)
from cobalt.recipes.design import report
from cobalt.recipes.design.report import (
    RESAMPLES,
    TEST_SEED,
    family_of,
    holm,
    read_run,
    repair_path,
    run_name,
    spread,
)

SFT, COBALT, GRPO_MT = "sft", "cobalt", "grpo_mt"
ARMS = (SFT, COBALT, GRPO_MT)
LABELS = "novelty_by_behaviour.json"  # in each cobalt run: python -m cobalt.data.novelty RUN_DIR --ids
EQUIVALENCE_POINTS = 5.0  # "COBALT matches GRPO-MT": the 90 % interval within this many points
GROUP_NAMES = {
    "primary": "unseen by behaviour, in family",
    "out_of_family": "out of family (held out by behaviour)",
}
PRIMARY = (COBALT, SFT, "primary")
SECONDARY = (  # preregistration_ft.md, "Secondary comparisons" 1-5; 6-7 are the repair tests
    (COBALT, GRPO_MT, "primary"),
    (GRPO_MT, SFT, "primary"),
    (COBALT, SFT, "out_of_family"),
    (GRPO_MT, SFT, "out_of_family"),
    (COBALT, GRPO_MT, "out_of_family"),
)
CLAIM = "COBALT adds to a fine-tuned model"
TRAJECTORY_STAGES = ("trajectories: single-turn", "trajectories: multi-turn", "trajectories: hidden tests")


# ------------------------------------------------------------------------------------ reading
def labels_of(run_dir: Path) -> dict[str, dict[str, str]]:
    """``{split: {id: label by behaviour}}`` of a cobalt run, made once (the sandbox runs every
    training program: minutes) and kept in the run."""
    path = run_dir / LABELS
    if not path.exists():
        from cobalt.data.novelty import _ids, strict_result

        rundir.write_atomically(path, json.dumps(_ids(strict_result(run_dir)), indent=1))
    try:
        ids = json.loads(path.read_text())
        return {split: {i: row["behaviour"] for i, row in rows.items()} for split, rows in ids.items()}
    except (ValueError, KeyError, AttributeError, TypeError) as error:
        raise DataError(f"expected {{split: {{id: {{behaviour: ...}}}}}}: {error}", path=path) from error


def start_hash(path: Path) -> str:
    report = json.loads(path.read_text())
    sha = (report.get("start_model") or {}).get("sha256")
    if not sha:
        raise DataError(
            "no start model's hash (the run predates start_model.json)", path=path, field="start_model"
        )
    return sha


@dataclasses.dataclass
class Seeds:
    """Each arm's per-instance Pass@1 % per turn, per seed: ``scores[arm][k][split][id]``."""

    seeds: list[int]
    scores: dict[str, list[dict[str, dict[str, list[float]]]]]
    labels: list[dict[str, dict[str, str]]]


def read_seeds(runs_dir: Path, seeds: list[int]) -> Seeds:
    """Every seed's three arms, checked: the GRPO-MT run holds the cobalt run's SFT scores and
    started from the same weights."""
    scores = {arm: [] for arm in ARMS}
    labels = []
    for k in seeds:
        paths = {m: runs_dir / run_name(m, k) / rundir.REPORT_JSON for m in (COBALT, GRPO_MT)}
        cobalt, grpo_mt = (read_run(paths[m], "trained", k) for m in (COBALT, GRPO_MT))
        if start_hash(paths[COBALT]) != start_hash(paths[GRPO_MT]):
            raise DataError(
                f"seed {k}: GRPO-MT started from other weights than COBALT's ({paths[COBALT]})",
                path=paths[GRPO_MT],
                field="start_model.sha256",
            )
        for split in cobalt:
            for pid, row in grpo_mt[split].items():
                if pid in cobalt[split] and cobalt[split][pid]["base"] != row["base"]:
                    raise DataError(
                        f"instance {pid!r}: SFT scores differ from {paths[COBALT]} (one start per seed: --base-run)",
                        path=paths[GRPO_MT],
                        field=f"{split}.per_instance.base",
                    )
        column = lambda run, c: {s: {i: r[c] for i, r in rows.items()} for s, rows in run.items()}  # noqa: E731
        scores[SFT].append(column(cobalt, "base"))
        scores[COBALT].append(column(cobalt, "trained"))
        scores[GRPO_MT].append(column(grpo_mt, "trained"))
        labels.append(labels_of(runs_dir / run_name(COBALT, k)))
    return Seeds(seeds, scores, labels)


# ------------------------------------------------------------------------------------ groups
def group_ids(data: Seeds) -> dict[str, list[str]]:
    """The primary set (in-family held-out instances unseen by behaviour for every seed) and the
    out-of-family instances of the families no seed's training program solves; and those families."""
    heldout = [set(i for i, k in lab.get("heldout", {}).items() if k == UNSEEN) for lab in data.labels]
    families: dict[str, bool] = {}  # family: held out by behaviour for every seed
    for lab in data.labels:
        for pid, kind in lab.get("heldout_families", {}).items():
            family = family_of(pid)
            families[family] = families.get(family, True) and kind != SEEN_TRAINING
    kept = sorted(f for f, ok in families.items() if ok)
    out_ids = sorted(
        {i for lab in data.labels for i in lab.get("heldout_families", {}) if family_of(i) in kept}
    )
    return {
        "primary": sorted(set.intersection(*heldout)) if heldout else [],
        "out_of_family": out_ids,
        "families_kept": kept,
        "families_dropped": sorted(f for f, ok in families.items() if not ok),
    }


SPLIT = {"primary": "heldout", "out_of_family": "heldout_families"}


def arm_maps(data: Seeds, groups: dict, arm: str, group: str, turn: int) -> list[dict[str, float]]:
    ids, split = groups[group], SPLIT[group]
    return [
        {i: by_split[split][i][turn] for i in ids if i in by_split[split]} for by_split in data.scores[arm]
    ]


def compare(data: Seeds, groups: dict, first: str, second: str, group: str) -> dict:
    """``first`` − ``second`` on ``group`` after the last turn: the pooled test, its 90 % interval,
    each seed's own paired difference and their spread."""
    a, b = arm_maps(data, groups, first, group, -1), arm_maps(data, groups, second, group, -1)
    pooled = pooled_paired_test(a, b, resamples=RESAMPLES, seed=TEST_SEED)
    ids = [i for i in a[0] if all(i in m for m in a + b)]
    per_instance = np.mean([[x[i] - y[i] for i in ids] for x, y in zip(a, b)], axis=0)
    ninety = bootstrap_interval(per_instance, level=0.90, seed=TEST_SEED)
    per_seed = []
    for k, x, y in zip(data.seeds, a, b):
        shared = [i for i in x if i in y]
        d = paired_difference([y[i] for i in shared], [x[i] for i in shared], seed=TEST_SEED)
        per_seed.append({"seed": k, **dataclasses.asdict(d)})
    return {
        "first": first,
        "second": second,
        "group": group,
        "pooled": {**dataclasses.asdict(pooled), "per_seed": list(pooled.per_seed)},
        "ninety": {"low": ninety.low, "high": ninety.high},
        "per_seed": per_seed,
        "spread": spread([d["mean"] for d in per_seed]),
    }


def pass_at_1_per_turn(data: Seeds, groups: dict, group: str) -> dict[str, list[list[float]]]:
    """``{arm: [[Pass@1 % per turn] per seed]}`` over the group's instances every arm and seed holds."""
    split = SPLIT[group]
    turns = min((len(v) for per_seed in data.scores[SFT] for v in per_seed[split].values()), default=0)
    maps = {arm: [arm_maps(data, groups, arm, group, t) for t in range(turns)] for arm in ARMS}
    every = [m for by_turn in maps.values() for ms in by_turn for m in ms]
    ids = [i for i in groups[group] if all(i in m for m in every)]
    if not ids:
        return {arm: [] for arm in ARMS}
    return {
        arm: [
            [float(np.mean([by_turn[t][s][i] for i in ids])) for t in range(turns)]
            for s in range(len(data.seeds))
        ]
        for arm, by_turn in maps.items()
    }


# ------------------------------------------------------------------------------------ cost
def run_cost(report: dict, batch: int) -> dict:
    """GRPO's wall and machine CPU seconds, evaluator requests and steps of one run, per training
    example; for COBALT, its trajectories' stages, whole and per bandit prompt."""
    stages, cpu = report.get("stages", {}), report.get("stages_machine_cpu_s", {})
    steps = report.get("grpo") or []
    examples = len(steps) * batch
    requests = sum(s.get("evaluator_requests") or 0 for s in steps)
    out = {
        "steps": len(steps),
        "examples": examples,
        "grpo_s": stages.get("GRPO"),
        "grpo_cpu_s": cpu.get("GRPO"),
        "evaluator_requests": requests,
    }
    per = lambda v: None if v is None or not examples else v / examples  # noqa: E731
    out |= {"per_example_s": per(out["grpo_s"]), "per_example_cpu_s": per(out["grpo_cpu_s"])}
    out["per_example_requests"] = per(requests)
    prompts = report.get("counts", {}).get("bandit_prompts", 0)
    if prompts:
        whole = sum(stages.get(s, 0.0) for s in TRAJECTORY_STAGES)
        whole_cpu = sum(cpu.get(s, 0.0) for s in TRAJECTORY_STAGES)
        out["trajectories"] = {
            "whole_s": whole,
            "whole_cpu_s": whole_cpu,
            "bandit_prompts": prompts,
            "per_prompt_s": whole / prompts,
            "per_prompt_cpu_s": whole_cpu / prompts,
        }
    return out


def cost_part(runs_dir: Path, seeds: list[int], batch: int) -> dict[str, list[dict]]:
    return {
        arm: [
            run_cost(json.loads((runs_dir / run_name(arm, k) / rundir.REPORT_JSON).read_text()), batch)
            for k in seeds
        ]
        for arm in (COBALT, GRPO_MT)
    }


# ------------------------------------------------------------------------------------ repair
def repair_part(runs_dir: Path, seeds: list[int], arms: list[str]) -> dict:
    """Per repaired arm, the placebo table over its complete repair files, and which are missing."""
    from cobalt.eval.repair import placebo_samples, placebo_table
    from cobalt.eval.repair_run import summary_path

    out = {}
    for arm in arms:
        paths = [repair_path(runs_dir, k, arm) for k in seeds]
        done = [p for p in paths if summary_path(p).exists()]
        table = None
        if done:
            try:
                table = placebo_table(placebo_samples(*done))
            except DataError:  # no instance with samples in every repair arm
                table = None
        out[arm] = {
            "files": [str(p) for p in done],
            "missing": [p.parent.name for p in paths if p not in done],
            "table": table,
        }
    return out


# ------------------------------------------------------------------------------------ the report
def run_states(runs_dir: Path, seeds: list[int]) -> list[dict]:
    return [
        {"run": run_name(arm, k), "arm": arm, "seed": k, "done": rundir.is_done(runs_dir / run_name(arm, k))}
        for arm in (COBALT, GRPO_MT)
        for k in seeds
    ]


PRIMARY_TEXT = (
    "SFT + COBALT − SFT on {n} held-out instances unseen by behaviour, Pass@1 after the last feedback turn"
)


def verdict(primary: dict | None, missing: list[str]) -> str:
    return report.verdict(primary, missing, PRIMARY_TEXT, CLAIM, "SFT alone is better")


def design_report(design: dict, root: str | Path = ".") -> dict:
    """The pre-registered analysis of the second design's runs under ``root`` (JSON-able)."""
    from cobalt.common.config import from_dict, load_config
    from cobalt.recipes.quickstart.config import QuickstartConfig
    from cobalt.train.profile import load_profile

    runs_dir, seeds = Path(root) / design["runs_dir"], list(design["seeds"])
    states = run_states(runs_dir, seeds)
    missing = [r["run"] for r in states if not r["done"]]
    repaired = design["repair"].get("arms", [COBALT, GRPO_MT])
    out: dict = {
        "runs_dir": str(runs_dir),
        "seeds": seeds,
        "alpha": ALPHA,
        "runs": states,
        "missing": missing,
        "primary": None,
        "secondary": [],
        "repair": repair_part(runs_dir, design["repair"]["seeds"], repaired),
    }
    if not missing:
        data = read_seeds(runs_dir, seeds)
        groups = group_ids(data)
        primary = compare(data, groups, *PRIMARY)
        primary["claim"] = primary["pooled"]["p_value"] < ALPHA and primary["pooled"]["mean"] > 0
        secondary = [compare(data, groups, *c) for c in SECONDARY]
        for arm in repaired:
            table = out["repair"][arm]["table"]
            if table is not None:
                secondary.append({"repair": arm, "pooled": table["feedback_minus_placebo"]})
        for c, adjusted in zip(secondary, holm([c["pooled"]["p_value"] for c in secondary])):
            c["p_holm"], c["significant"] = adjusted, adjusted < ALPHA
        match = secondary[0]["ninety"]
        secondary[0]["matches"] = match["low"] > -EQUIVALENCE_POINTS and match["high"] < EQUIVALENCE_POINTS
        cfg = from_dict(QuickstartConfig, load_config(design["run_profile"]), source=design["run_profile"])
        batch = int(load_profile(cfg.train_profile).overrides["data.train_batch_size"])
        out |= {
            "groups": {k: (v if k.startswith("families") else len(v)) for k, v in groups.items()},
            "primary": primary,
            "secondary": secondary,
            "pass_at_1": {g: pass_at_1_per_turn(data, groups, g) for g in SPLIT},
            "cost": cost_part(runs_dir, seeds, batch),
        }
    out["verdict"] = verdict(out["primary"], missing)
    return out


# ------------------------------------------------------------------------------------ Markdown
def _difference(d: dict) -> str:
    return f"{d['mean']:+.1f} ({d['low']:+.1f} to {d['high']:+.1f})"


def comparison_row(n: int, c: dict) -> str:
    if "repair" in c:
        what, where, extra = f"repair, {c['repair']}: feedback − placebo", "its turn-0 failures", ""
    else:
        what, where = f"{c['first']} − {c['second']}", GROUP_NAMES[c["group"]]
        extra = f"{c['ninety']['low']:+.1f} to {c['ninety']['high']:+.1f}"
        extra += " (matches)" if c.get("matches") else ""
    p = c["pooled"]
    return (
        f"| {n} | {what} | {where} | {p['problems']} | {_difference(p)} | {extra} | "
        f"{format_p(p['p_value'])} | {format_p(c['p_holm'])} |"
    )


def describe_report(report: dict) -> str:
    """Markdown: the primary verdict in one sentence, then the tables."""
    lines = [report["verdict"], "", "## Runs", "", "| run | state |", "|---|---|"]
    lines += [f"| {r['run']} | {'done' if r['done'] else 'missing'} |" for r in report["runs"]]
    lines.append("")
    if report["primary"] is not None:
        g, p = report["groups"], report["primary"]
        seeds = [
            f"| {d['seed']} | {d['problems']} | {_difference(d)} | {format_p(d['p_value'])} |"
            for d in p["per_seed"]
        ]
        lines += [
            "## Primary: SFT + COBALT − SFT, in-family instances unseen by behaviour, last turn",
            "",
            f"{g['primary']} instances unseen by behaviour for every seed; out of family: {g['out_of_family']} "
            f"instances of {', '.join(g['families_kept'])}"
            + (
                f" (left out, solved by a training program: {', '.join(g['families_dropped'])})"
                if g["families_dropped"]
                else ""
            )
            + ".",
            "",
            f"Pooled over the seeds ({RESAMPLES:,} sign patterns, seed {TEST_SEED}): {_difference(p['pooled'])} "
            f"points, p = {format_p(p['pooled']['p_value'])}. Claim made: {'yes' if p['claim'] else 'no'}.",
            "",
            "| seed | instances | COBALT − SFT (points, 95% CI) | p (McNemar, exact) |",
            "|---|---:|---:|---:|",
            *seeds,
            "",
            f"## Secondary comparisons (last turn; Holm's correction over the {len(report['secondary'])})",
            "",
            "| # | comparison | instances | n | difference (points, 95% CI) | 90% CI | p | p (Holm) |",
            "|---|---|---|---:|---:|---:|---:|---:|",
            *[comparison_row(n, c) for n, c in enumerate(report["secondary"], 1)],
            "",
            f"COBALT matches GRPO-MT only if #1's 90% interval lies within ±{EQUIVALENCE_POINTS:g} points.",
            "",
            "## Pass@1 % per turn (reported, not tested)",
            "",
            f"![Pass@1 per turn, each seed a dot]({FIGURE_FILE})",
            "",
            *pass_at_1_table(report),
            "## Cost per training example (measured in the runs)",
            "",
            *cost_table(report),
        ]
    lines += repair_lines(report["repair"])
    return "\n".join(lines)


def pass_at_1_table(report: dict) -> list[str]:
    rows = []
    for group, arms in report["pass_at_1"].items():
        for arm, per_seed in arms.items():
            if per_seed:
                means = np.mean(per_seed, axis=0)
                rows.append(
                    f"| {GROUP_NAMES[group]} | {arm} | " + " | ".join(f"{m:.1f}" for m in means) + " |"
                )
    turns = max((len(r.split("|")) - 4 for r in rows), default=0)
    head = "| instances | arm | " + " | ".join(f"turn {t}" for t in range(turns)) + " |"
    return [head, "|---|---|" + "---:|" * turns, *rows, ""]


def cost_table(report: dict) -> list[str]:
    def mean(runs, key):
        values = [r[key] for r in runs if r.get(key) is not None]
        return f"{np.mean(values):.1f}" if values else "—"

    rows = [
        f"| {arm} | {mean(runs, 'examples')} | {mean(runs, 'per_example_s')} | {mean(runs, 'per_example_cpu_s')} | "
        f"{mean(runs, 'per_example_requests')} |"
        for arm, runs in report["cost"].items()
    ]
    lines = [
        "Means over seeds. A training example: a bandit prompt with its responses (COBALT), a problem with its episodes (GRPO-MT).",
        "",
        "| method | examples trained | wall s / example | machine CPU-s / example | evaluator requests / example |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    offline = [r["trajectories"] for r in report["cost"][COBALT] if "trajectories" in r]
    if offline:
        whole = np.mean([t["whole_s"] for t in offline])
        per = np.mean([t["per_prompt_s"] for t in offline])
        trained = np.mean([r["examples"] for r in report["cost"][COBALT]])
        lines += [
            f"COBALT's trajectories: {whole:.0f} s whole per seed ({np.mean([t['whole_cpu_s'] for t in offline]):.0f} "
            f"machine CPU-s), {per:.2f} s amortized per bandit prompt produced "
            f"({np.mean([t['bandit_prompts'] for t in offline]):.0f}); whole over the {trained:.0f} examples trained: "
            f"{whole / trained:.2f} s an example.",
            "",
        ]
    return lines


def repair_lines(repair: dict) -> list[str]:
    lines = ["## Repair against a placebo", ""]
    for arm, part in repair.items():
        table = part["table"]
        if part["missing"]:
            lines.append(f"{arm}: missing or incomplete: {', '.join(part['missing'])}.")
        if table is None:
            lines += [f"{arm}: no table yet.", ""]
            continue
        rates = ", ".join(f"{a} {table['rates'][a]['mean']:.1f} %" for a in ("feedback", "placebo", "fresh"))
        fp, pf = table["feedback_minus_placebo"], table["placebo_minus_fresh"]
        lines += [
            f"{arm}: {table['problems']} instances; {rates}; feedback − placebo {_difference(fp)} points "
            f"(p = {format_p(fp['p_value'])}), placebo − fresh {_difference(pf)} (p = {format_p(pf['p_value'])}).",
            "",
        ]
    return lines


FIGURE_FILE = "design_ft_pass_at_1.png"


def figure(report: dict):
    """Pass@1 per turn of each arm on each instance set: lines are the means over seeds, dots each seed."""
    from cobalt.eval.report import pyplot

    groups = list(report["pass_at_1"])
    fig, axes = pyplot().subplots(1, len(groups), figsize=(5 * len(groups), 3.6), dpi=120, squeeze=False)
    for ax, group in zip(axes[0], groups):
        for k, (arm, per_seed) in enumerate(report["pass_at_1"][group].items()):
            if not per_seed:
                continue
            turns = range(len(per_seed[0]))
            line = ax.plot(turns, np.mean(per_seed, axis=0), marker="o", label=arm)[0]
            for seed in per_seed:
                ax.scatter([t + (k - 1) * 0.06 for t in turns], seed, color=line.get_color(), s=10, alpha=0.6)
        ax.set_title(GROUP_NAMES[group])
        ax.set_xticks(range(max((len(s[0]) for s in report["pass_at_1"][group].values() if s), default=0)))
        ax.set_ylim(bottom=0)
        ax.set_xlabel("feedback turn")
        ax.set_ylabel("Pass@1 (%)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    return fig


def write_report(design: dict, root: str | Path = ".") -> Path:
    """``<runs_dir>/design_report.json`` and ``.md`` (and the figure once every run is done)."""
    from cobalt.common.jsonl import atomic_output
    from cobalt.eval.report import save_figure

    report = design_report(design, root)
    runs_dir = Path(root) / design["runs_dir"]
    runs_dir.mkdir(parents=True, exist_ok=True)
    if report["primary"] is not None:
        save_figure(figure(report), runs_dir / FIGURE_FILE)
    md = runs_dir / "design_report.md"
    for path, text in (
        (runs_dir / "design_report.json", json.dumps(report, indent=1) + "\n"),
        (md, describe_report(report) + "\n"),
    ):
        with atomic_output(path, overwrite=True) as tmp:
            tmp.write_text(text)
    return md
