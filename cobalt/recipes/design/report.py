"""The pooled analysis of the pre-registered design (docs/preregistration.md).

Reads the design's run directories (``<runs_dir>/trained-seed<k>/report/report.json``,
``control-seed<k>/report/report.json``, ``repair-seed<k>/repair.jsonl``) and computes what the
pre-registration fixes: the primary test (trained − control, Pass@1 after the feedback turn, on the
unseen-program held-out instances, pooled over the seeds), the five secondary comparisons with
Holm's correction, Pass@1 at turn 0 per arm and per family, and the placebo repair table. With a
trained or control seed missing it gives no verdict and names the missing runs.

An instance is paired by id; one that a run lacks is left out of every comparison that needs it,
and the count is reported. Scores are the report's Pass@1 % per turn (0..100): differences are in
points.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from cobalt.common import rundir
from cobalt.common.errors import DataError
from cobalt.data.novelty import KINDS, SEEN_GRPO, SEEN_SFT, UNSEEN
from cobalt.eval.significance import ALPHA, format_p, paired_difference, pooled_paired_test
from cobalt.recipes.quickstart.config import ARMS  # a run per arm and training seed; base: the trained runs'

FIGURE_FILE = "design_pass_at_1.png"
REPAIR_OUTPUT = "repair.jsonl"  # python -m cobalt.eval.repair_run writes its summary beside it last
RESAMPLES = 100_000  # sign patterns of the pooled test (preregistration.md)
TEST_SEED = 0
EVALUATIONS = ("heldout", "heldout_families")
GROUPS = {  # instance set: (report.json's evaluation key, the novelty kinds kept; None: all)
    "unseen": ("heldout", (UNSEEN,)),
    "seen": ("heldout", (SEEN_SFT, SEEN_GRPO)),
    "out_of_family": ("heldout_families", None),
}
GROUP_NAMES = {
    "unseen": "unseen-program held-out",
    "seen": "seen-program held-out",
    "out_of_family": "out-of-family",
}
PRIMARY = ("trained", "control", "unseen")
SECONDARY = (  # in the order of preregistration.md, "Secondary comparisons"
    ("trained", "base", "unseen"),
    ("trained", "control", "seen"),
    ("trained", "base", "seen"),
    ("trained", "control", "out_of_family"),
    ("trained", "base", "out_of_family"),
)
CLAIM = "COBALT's reward beats a control that saw the same data"


DEFAULT_ARMS = {"trained": "cobalt", "control": "control"}  # the first design's: arm -> what it trains


def arms(design: dict) -> dict[str, str]:
    """``{arm: method}`` in the design's order; the first arm's runs make the base."""
    return dict(design.get("arms") or DEFAULT_ARMS)


# ------------------------------------------------------------------------------------ reading
def run_name(arm: str, seed: int) -> str:
    return f"{arm}-seed{seed}"


def report_path(runs_dir: Path, arm: str, seed: int) -> Path:
    return runs_dir / run_name(arm, seed) / rundir.REPORT_JSON


def repair_path(runs_dir: Path, seed: int, arm: str | None = None) -> Path:
    """A repair run's output: ``repair-seed<k>`` (the first design repairs its one trained arm), or
    ``repair_<arm>-seed<k>``."""
    return runs_dir / run_name("repair" if arm is None else f"repair_{arm}", seed) / REPAIR_OUTPUT


def _scores(value, path: Path, field: str) -> list[float]:
    ok = (
        isinstance(value, list)
        and value
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
    )
    if not ok:
        raise DataError("expected a non-empty list of Pass@1 % per turn", path=path, field=field)
    return [float(x) for x in value]


def read_rows(rows, path: Path, key: str) -> dict[str, dict]:
    """``{id: {"base", "trained", "novelty"}}`` of one evaluation's ``per_instance`` rows, checked."""
    if not isinstance(rows, list):
        raise DataError("expected a list of per-instance rows", path=path, field=f"{key}.per_instance")
    out: dict[str, dict] = {}
    for n, row in enumerate(rows):
        where = f"{key}.per_instance[{n}]"
        if not isinstance(row, dict) or not isinstance(row.get("id"), (str, int)):
            raise DataError("expected a row with an id", path=path, field=f"{where}.id")
        pid = str(row["id"])
        if pid in out:
            raise DataError(f"duplicate id {pid!r}", path=path, field=f"{where}.id")
        novelty = row.get("novelty")
        if key == "heldout" and novelty not in KINDS:
            raise DataError(
                f"expected one of {', '.join(KINDS)}, got {novelty!r}", path=path, field=f"{where}.novelty"
            )
        out[pid] = {
            "base": _scores(row.get("base"), path, f"{where}.base"),
            "trained": _scores(row.get("trained"), path, f"{where}.trained"),
            "novelty": novelty,
        }
    return out


def read_run(path: Path, arm: str, seed: int) -> dict[str, dict[str, dict]]:
    """The per-instance rows of each evaluation of one run's report.json, checked to be the run
    of ``arm`` and training seed ``seed``."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DataError(f"cannot read the report: {error}", path=path) from error
    if not isinstance(report, dict):
        raise DataError("expected a JSON object", path=path)
    for field, want in (("arm", arm), ("train_seed", seed)):
        if report.get(field) != want:
            raise DataError(f"expected {want!r}, got {report.get(field)!r}", path=path, field=field)
    out = {}
    for key in EVALUATIONS:
        evaluation = report.get(key)
        if not isinstance(evaluation, dict) or "per_instance" not in evaluation:
            raise DataError(
                "missing (the report keeps per_instance rows)", path=path, field=f"{key}.per_instance"
            )
        out[key] = read_rows(evaluation["per_instance"], path, key)
    return out


def check_agreement(runs: dict, paths: dict) -> None:
    """Every run labels an instance with the same program novelty (the labels pick the split) and
    holds the same base scores for it (every run takes one base: ``--base-run``)."""
    for key, field in (("heldout", "novelty"), ("heldout", "base"), ("heldout_families", "base")):
        first: dict[str, tuple] = {}
        for name, run in runs.items():
            for pid, row in run[key].items():
                value, where = first.setdefault(pid, (row[field], paths[name]))
                if value != row[field]:
                    raise DataError(
                        f"instance {pid!r} is {row[field]!r} here but {value!r} in {where}"
                        + (" (the runs must share one base: --base-run)" if field == "base" else ""),
                        path=paths[name],
                        field=f"{key}.per_instance.{field}",
                    )


# ------------------------------------------------------------------------------------ scores
def arm_maps(runs: dict, seeds: list[int], arm: str, group: str, turn: int) -> list[dict[str, float]]:
    """Per seed, ``{id: Pass@1 %}`` of ``arm`` at ``turn`` (-1: last) on ``group``'s instances. The
    base of seed s is the base evaluation in trained seed s's report."""
    key, kinds = GROUPS[group]
    source, column = ("trained", "base") if arm == "base" else (arm, "trained")
    return [
        {
            pid: row[column][turn]
            for pid, row in runs[run_name(source, s)][key].items()
            if kinds is None or row["novelty"] in kinds
        }
        for s in seeds
    ]


def left_out(maps: list[dict]) -> list[str]:
    """The ids some map holds but not every one."""
    every = set.intersection(*(set(m) for m in maps))
    return sorted(set().union(*maps) - every)


def spread(values: list[float]) -> dict:
    v = np.asarray(values, dtype=float)
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return {"mean": float(v.mean()), "min": float(v.min()), "max": float(v.max()), "sd": sd}


def compare(runs: dict, seeds: list[int], first: str, second: str, group: str) -> dict:
    """``first`` − ``second`` on ``group`` at the last turn: the pooled test, each seed's own paired
    difference (McNemar's exact test with pass/fail scores), their spread, the left-out ids."""
    a, b = arm_maps(runs, seeds, first, group, -1), arm_maps(runs, seeds, second, group, -1)
    if not set.intersection(*(set(m) for m in a + b)):
        raise DataError(f"{first} − {second}: the runs share no {GROUP_NAMES[group]} instance")
    pooled = pooled_paired_test(a, b, resamples=RESAMPLES, seed=TEST_SEED)
    per_seed = []
    for s, x, y in zip(seeds, a, b):
        ids = [i for i in x if i in y]
        d = paired_difference([y[i] for i in ids], [x[i] for i in ids], seed=TEST_SEED)
        per_seed.append({"seed": s, **dataclasses.asdict(d)})
    missing = left_out(a + b)
    return {
        "first": first,
        "second": second,
        "group": group,
        "pooled": {**dataclasses.asdict(pooled), "per_seed": list(pooled.per_seed)},
        "per_seed": per_seed,
        "spread": spread([d["mean"] for d in per_seed]),
        "left_out": len(missing),
        "left_out_ids": missing,
    }


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the given order."""
    m = len(p_values)
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def pooled_means(runs: dict, seeds: list[int], group: str, turn: int) -> dict:
    """Each arm's Pass@1 % at ``turn``, averaged over seeds and instances every run holds, and
    each seed's own mean (``per_seed``)."""
    maps = {arm: arm_maps(runs, seeds, arm, group, turn) for arm in ("base", *ARMS)}
    every = [m for ms in maps.values() for m in ms]
    ids = [i for i in every[0] if all(i in m for m in every)]
    per_seed = {
        arm: [float(np.mean([m[i] for i in ids])) for m in ms] if ids else [] for arm, ms in maps.items()
    }
    means = {arm: float(np.mean(v)) if v else None for arm, v in per_seed.items()}  # every seed holds `ids`
    return {"instances": len(ids), "left_out": len(left_out(every)), **means, "per_seed": per_seed}


def family_of(pid: str) -> str | None:
    from cobalt.data.procedural.generate import parse_id

    try:
        return parse_id(pid)[0]
    except ValueError:
        return None


def turn0_per_family(runs: dict, seeds: list[int]) -> list[dict] | None:
    """Each arm's turn-0 Pass@1 % per procedural family, over both evaluations; None when an id
    is not a procedural one."""
    maps = {arm: [{} for _ in seeds] for arm in ("base", *ARMS)}
    for group in ("unseen", "seen", "out_of_family"):
        for arm, ms in maps.items():
            for m, new in zip(ms, arm_maps(runs, seeds, arm, group, 0)):
                m.update(new)
    every = [m for ms in maps.values() for m in ms]
    ids = [i for i in every[0] if all(i in m for m in every)]
    families = {i: family_of(i) for i in ids}
    if not ids or None in families.values():
        return None
    rows = []
    for family in sorted(set(families.values())):
        chosen = [i for i in ids if families[i] == family]
        means = {arm: float(np.mean([[m[i] for i in chosen] for m in ms])) for arm, ms in maps.items()}
        rows.append({"family": family, "instances": len(chosen), **means})
    return rows


# ------------------------------------------------------------------------------------ the report
def run_states(design: dict, runs_dir: Path) -> list[dict]:
    """Every run the analysis reads, with its path and whether it is done."""
    from cobalt.eval.repair_run import summary_path

    states = [
        {"run": run_name(arm, s), "arm": arm, "seed": s, "path": str(p), "done": rundir.is_done(p.parents[1])}
        for arm in ARMS
        for s in design["seeds"]
        for p in [report_path(runs_dir, arm, s)]
    ]
    for s in design["repair"]["seeds"]:
        p = repair_path(runs_dir, s)
        states.append(
            {
                "run": f"repair-seed{s}",
                "arm": "repair",
                "seed": s,
                "path": str(p),
                "done": summary_path(p).exists(),
            }
        )
    return states


def repair_part(states: list[dict]) -> dict:
    """The placebo table over the complete repair files, and which are missing."""
    from cobalt.eval.repair import placebo_samples, placebo_table

    done = [r["path"] for r in states if r["arm"] == "repair" and r["done"]]
    missing = [r["run"] for r in states if r["arm"] == "repair" and not r["done"]]
    samples = placebo_samples(*done) if done else None
    try:
        table = placebo_table(samples) if samples else None
    except DataError:  # no instance with samples in every arm (no turn-0 failure)
        table = None
    return {"files": done, "missing": missing, "table": table}


PRIMARY_TEXT = "trained − control on {n} unseen-program held-out instances, Pass@1 after the feedback turn"


def verdict(
    primary: dict | None,
    missing: list[str],
    what: str = PRIMARY_TEXT,
    claim: str = CLAIM,
    other_better: str = "the control is better",
) -> str:
    """The primary outcome in one sentence (``what``: the comparison, ``{n}`` its instances)."""
    if primary is None:
        return f"No verdict: the design is incomplete (missing: {', '.join(missing)}); nothing pooled is computed."
    p = primary["pooled"]
    numbers = (
        f"{what.format(n=p['problems'])}, pooled over {p['seeds']} seeds: {p['mean']:+.1f} points "
        f"(95% CI {p['low']:+.1f} to {p['high']:+.1f}), p = {format_p(p['p_value'])}"
    )
    if primary["claim"]:
        return f"Primary: {numbers} — the claim “{claim}” is made."
    if p["p_value"] < ALPHA:
        return f"Primary: {numbers} — the claim is not made: {other_better}."
    return f"Primary: {numbers} — the claim is not made: not detected at this power."


def design_report(design: dict, root: str | Path = ".") -> dict:
    """The pooled analysis of the design's runs under ``root`` (JSON-able)."""
    runs_dir = Path(root) / design["runs_dir"]
    seeds = list(design["seeds"])
    states = run_states(design, runs_dir)
    missing = [r["run"] for r in states if r["arm"] in ARMS and not r["done"]]
    out: dict = {
        "runs_dir": str(runs_dir),
        "seeds": seeds,
        "alpha": ALPHA,
        "runs": states,
        "missing": missing,
        "complete": not missing,
        "primary": None,
        "secondary": [],
        "pass_at_1": None,
        "turn0_per_family": None,
        "repair": repair_part(states),
    }
    if not missing:
        paths = {r["run"]: Path(r["path"]) for r in states if r["arm"] in ARMS}
        runs = {r["run"]: read_run(Path(r["path"]), r["arm"], r["seed"]) for r in states if r["arm"] in ARMS}
        check_agreement(runs, paths)
        primary = compare(runs, seeds, *PRIMARY)
        primary["claim"] = primary["pooled"]["p_value"] < ALPHA and primary["pooled"]["mean"] > 0
        secondary = [compare(runs, seeds, *c) for c in SECONDARY]
        for c, adjusted in zip(secondary, holm([c["pooled"]["p_value"] for c in secondary])):
            c["p_holm"] = adjusted
            c["significant"] = adjusted < ALPHA
        out["primary"], out["secondary"] = primary, secondary
        out["pass_at_1"] = {
            g: {"turn0": pooled_means(runs, seeds, g, 0), "last": pooled_means(runs, seeds, g, -1)}
            for g in GROUPS
        }
        out["turn0_per_family"] = turn0_per_family(runs, seeds)
    out["verdict"] = verdict(out["primary"], missing)
    return out


# ------------------------------------------------------------------------------------ Markdown
def _difference(d: dict) -> str:
    return f"{d['mean']:+.1f} ({d['low']:+.1f} to {d['high']:+.1f})"


def _rate(i: dict) -> str:
    return f"{i['mean']:.1f} ({i['low']:.1f} to {i['high']:.1f})"


def _mean(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def runs_section(report: dict) -> list[str]:
    rows = [f"| {r['run']} | {'done' if r['done'] else 'missing'} | {r['path']} |" for r in report["runs"]]
    return ["## Runs", "", "| run | state | file |", "|---|---|---|", *rows, ""]


def primary_section(primary: dict) -> list[str]:
    p, s = primary["pooled"], primary["spread"]
    seeds = [
        f"| {d['seed']} | {d['problems']} | {_difference(d)} | {format_p(d['p_value'])} |"
        for d in primary["per_seed"]
    ]
    return [
        "## Primary: trained − control, unseen-program held-out instances, last turn",
        "",
        f"Pooled over {p['seeds']} seeds (sign-flip test on the per-instance means over seeds, "
        f"{RESAMPLES:,} sign patterns, seed {TEST_SEED}): {p['problems']} instances, "
        f"{_difference(p)} points (95% bootstrap CI over instances), p = {format_p(p['p_value'])}; "
        f"{primary['left_out']} instances left out (missing from some run). Claim made: "
        f"{'yes' if primary['claim'] else 'no'}.",
        "",
        "| seed | instances | trained − control (points, 95% CI) | p (McNemar, exact) |",
        "|---|---:|---:|---:|",
        *seeds,
        "",
        f"Per-seed means: mean {s['mean']:+.1f}, min {s['min']:+.1f}, max {s['max']:+.1f}, "
        f"standard deviation {s['sd']:.1f} points (over seeds, n − 1).",
        "",
    ]


def secondary_section(secondary: list[dict]) -> list[str]:
    rows = [
        f"| {n} | {c['first']} − {c['second']} | {GROUP_NAMES[c['group']]} | {c['pooled']['problems']} | "
        f"{c['left_out']} | {_difference(c['pooled'])} | {format_p(c['pooled']['p_value'])} | "
        f"{format_p(c['p_holm'])} |"
        for n, c in enumerate(secondary, 1)
    ]
    return [
        "## Secondary comparisons (last turn; Holm's correction over the five)",
        "",
        "| # | comparison | instances | n | left out | difference (points, 95% CI) | p | p (Holm) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]


def pass_at_1_section(report: dict) -> list[str]:
    rows = [
        f"| {GROUP_NAMES[g]} | {when} | {m['instances']} | {_mean(m['base'])} | {_mean(m['trained'])} | "
        f"{_mean(m['control'])} |"
        for g, by_turn in report["pass_at_1"].items()
        for when, m in (("0", by_turn["turn0"]), ("last", by_turn["last"]))
    ]
    lines = [
        "## Pass@1 % per arm (reported, not tested)",
        "",
        "Means over seeds and over the instances every run holds.",
        "",
        f"![Pass@1 after feedback per arm and seed]({FIGURE_FILE})",
        "",
        "| instances | turn | n | base | trained | control |",
        "|---|---|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    families = report["turn0_per_family"]
    if families:
        lines += [
            "### Turn 0 per family",
            "",
            "| family | n | base | trained | control |",
            "|---|---:|---:|---:|---:|",
            *[
                f"| {f['family']} | {f['instances']} | {f['base']:.1f} | {f['trained']:.1f} | {f['control']:.1f} |"
                for f in families
            ],
            "",
        ]
    return lines


def repair_section(repair: dict) -> list[str]:
    lines = ["## Repair against a placebo (secondary)", ""]
    if repair["missing"]:
        lines += [f"Missing or incomplete repair runs: {', '.join(repair['missing'])}.", ""]
    table = repair["table"]
    if table is None:
        return lines + ["No table: no repair run is complete, or no instance has samples in every arm.", ""]
    rates = " | ".join(_rate(table["rates"][a]) for a in ("feedback", "placebo", "fresh"))
    fp, pf = table["feedback_minus_placebo"], table["placebo_minus_fresh"]
    return lines + [
        f"{table['problems']} instances, samples and seeds pooled within an instance "
        f"({len(repair['files'])} repair files).",
        "",
        "| feedback % | placebo % | fresh % |",
        "|---:|---:|---:|",
        f"| {rates} |",
        "",
        f"Feedback − placebo: {_difference(fp)} points, p = {format_p(fp['p_value'])}; "
        f"placebo − fresh: {_difference(pf)} points, p = {format_p(pf['p_value'])}.",
        "",
    ]


def describe_design_report(report: dict) -> str:
    """Markdown: the primary verdict in one sentence, then the tables."""
    lines = [report["verdict"], "", *runs_section(report)]
    if report["primary"] is not None:
        lines += primary_section(report["primary"]) + secondary_section(report["secondary"])
        lines += pass_at_1_section(report)
    lines += repair_section(report["repair"])
    return "\n".join(lines)


def design_figure(report: dict):
    """Pass@1 after the feedback turn per arm on each instance set: bars are the means over seeds,
    dots each seed's mean."""
    from cobalt.eval.report import pyplot

    fig, ax = pyplot().subplots(figsize=(7, 4), dpi=120)
    arms, width = ("base", "control", "trained"), 0.26
    last = {g: report["pass_at_1"][g]["last"] for g in GROUPS}
    for k, arm in enumerate(arms):
        xs = [n + (k - 1) * width for n in range(len(GROUPS))]
        ax.bar(xs, [last[g][arm] or 0.0 for g in GROUPS], width, label=arm)
        for x, g in zip(xs, GROUPS):
            seeds = last[g]["per_seed"][arm]
            ax.scatter([x] * len(seeds), seeds, color="black", s=9, zorder=3)
    ax.set_xticks(range(len(GROUPS)), [f"{GROUP_NAMES[g]}\n(n = {last[g]['instances']})" for g in GROUPS])
    ax.set_ylim(0, 115)
    ax.set_ylabel("Pass@1 after feedback (%)")
    ax.set_title(f"Pass@1 per arm, {len(report['seeds'])} seeds (dots: each seed)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper center", ncol=3)
    fig.tight_layout()
    return fig


def write_design_report(design: dict, root: str | Path = ".") -> Path:
    """``<runs_dir>/design_report.json`` and ``design_report.md``, regenerated from the runs, and
    with every trained and control run done ``design_pass_at_1.png``; returns the Markdown's path."""
    from cobalt.common.jsonl import atomic_output
    from cobalt.eval.report import save_figure

    report = design_report(design, root)
    runs_dir = Path(root) / design["runs_dir"]
    md = runs_dir / "design_report.md"
    if report["pass_at_1"] is not None:
        save_figure(design_figure(report), runs_dir / FIGURE_FILE)
    for path, text in (
        (runs_dir / "design_report.json", json.dumps(report, indent=1) + "\n"),
        (md, describe_design_report(report) + "\n"),
    ):
        with atomic_output(path, overwrite=True) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return md
