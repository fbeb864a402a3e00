"""The paper chain's ``report/``: Pass@1 per turn of base and trained on LiveCodeBench and TACO-dev
(perturbed public tests) beside the paper's figures for the training profile, their repair rates
beside an independent resample (:mod:`cobalt.eval.repair`); stage times and the exact command of
every stage. Read from the run directory; nothing here runs a stage."""

from __future__ import annotations

import json
from pathlib import Path

from cobalt.common import rundir
from cobalt.common.jsonl import read_jsonl
from cobalt.eval import comparability
from cobalt.eval.comparability import blockers, differences, read_setting
from cobalt.eval.comparison import compare, plot_comparison
from cobalt.eval.repair import compare_repair, repair_section
from cobalt.eval.report import markdown_table, summarize
from cobalt.pipeline.report import commands, jsonable, stage_times, times_table
from cobalt.train.profile import METHOD_NAMES

# a trained model's cell where the reference gives no figure for the method (COBALT's only)
NOT_KNOWN = "not known here (the reference gives COBALT's figures only)"

SETS = {  # chain suffix: (report key, title, the paper's figure for trained, for base)
    "": ("livecodebench", "LiveCodeBench (test6)", "lcb_cobalt", "lcb_base"),
    "_dev": ("taco_dev", "TACO-dev, perturbed public tests", "taco_dev", None),
}


def evaluation(run, suffix: str, base: dict, trained: dict) -> dict | None:
    key, title, _, _ = SETS[suffix]
    base_file, trained_file = base.get(f"eval_base{suffix}"), trained.get(f"eval_trained{suffix}")
    if not (base_file and trained_file):
        return None
    comparison = compare(base_file, trained_file, problem_set=title)
    plot_comparison(comparison, run.root / rundir.figure(f"{key}.png"))
    return {
        "title": title,
        "figure": f"{key}.png",
        "pass_at_1": {"base": summarize(str(base_file)), "trained": summarize(str(trained_file))},
        "comparison": jsonable(comparison),
        "repair": compare_repair(base_file, trained_file),
        "context_cut": {"base": cut_turns(base_file), "trained": cut_turns(trained_file)},
    }


def cut_turns(path) -> dict | None:
    """Conversations whose turn t was cut by the context window (an empty, failing answer), per
    turn, from the records' ``context_cut``; ``None`` when the records do not say."""
    per_turn, conversations = [], 0
    for record in read_jsonl(path):
        if "context_cut" not in record:
            return None
        for row in record["context_cut"]:
            conversations += 1
            per_turn += [0] * (len(row) - len(per_turn))
            for turn, cut in enumerate(row):
                per_turn[turn] += bool(cut)
    return {"per_turn": per_turn, "conversations": conversations}


def cut_lines(cuts: dict) -> list[str]:
    """Beside Pass@1: how many conversations each turn lost to the context window."""
    rows = []
    for model in ("base", "trained"):
        counts = cuts.get(model)
        if counts is None:
            rows.append(f"- {model}: not recorded (trajectories written before `context_cut`)")
        else:
            per_turn = ", ".join(str(n) for n in counts["per_turn"])
            rows.append(f"- {model}: {per_turn} (turn 0 onwards; of {counts['conversations']} conversations)")
    return ["**Turns cut by the context window** (an empty answer that fails; per turn):", *rows, ""]


def paper_rows(report: dict, paper: dict, diffs: dict, method: str = "cobalt") -> list[str]:
    """The paper's headline figures beside this run's Pass@1 at the first answer and after the
    last feedback turn; a figure whose setting this run does not match is left out, with the
    aspects that differ (:mod:`cobalt.eval.comparability`). The trained model of another method
    than COBALT has no figure here: its cell says so."""
    rows = [
        "| problem set | model | the paper | this run, turn 0 | this run, last turn |",
        "|---|---|---:|---:|---:|",
    ]
    for key, title, trained_key, base_key in SETS.values():
        if key not in report:
            continue
        for model, paper_key in (("base", base_key), ("trained", trained_key)):
            curve = report[key]["pass_at_1"][model]["pass_at_1"]
            figure = paper.get(paper_key) if paper_key else None
            differ = blockers(paper_key, diffs) if figure is not None else []
            cell = "" if figure is None else f"— ({', '.join(differ)} differ)" if differ else figure
            if model == "trained" and method != "cobalt":
                cell = NOT_KNOWN
            rows.append(f"| {title} | {model} | {cell} | {curve[0]:.1f} | {curve[-1]:.1f} |")
    return rows


def overlap_lines(root: Path) -> list[str]:
    """The report's first lines when the run trained on evaluation problems (``--allow-overlap``)."""
    path = root / rundir.OVERLAP
    if not path.exists():
        return []
    record = json.loads(path.read_text())
    if not record.get("allowed"):
        return []
    found = record.get("overlaps", [])
    if not found:
        return ["**Run with `--allow-overlap`**; no training problem was found in an evaluation set."]
    named = ", ".join(f"{o['train_id']} = {o['eval_set']} {o['eval_id']}" for o in found[:8])
    more = f" and {len(found) - 8} more" if len(found) > 8 else ""
    return [
        f"**Trained on evaluation problems (`--allow-overlap`)**: {len(found)} training problem(s) "
        f"are also evaluated ({named}{more}). The Pass@1 below is not a held-out figure."
    ]


def rehearsal_lines(root: Path) -> list[str]:
    """What the rehearsal's GRPO step left out of the chain's prompts (the longest, where the
    rehearsal's prompt length holds too few) and the prompt length it took, from its log."""
    log = root / rundir.log("grpo")
    if not log.exists():
        return []
    marks = ("rehearsal prompts: ", "rehearsal prompt length set from the data: ")
    found = [
        mark + line.split(mark, 1)[1].strip()
        for line in log.read_text(errors="replace").splitlines()
        for mark in marks
        if mark in line
    ]
    return [f"GRPO's step: {text}." for text in found]


def write_paper_report(
    run, profile: str, base: dict, trained: dict, seconds: float, method: str = "cobalt"
) -> Path:
    """``report/report.json``, one figure per problem set and, last (the run is done),
    ``report/report.md``; returns the Markdown's path."""
    (run.root / rundir.REPORT_DIR).mkdir(parents=True, exist_ok=True)
    paper = run.cfg.paper.get(profile) or {}
    report = {"profile": profile, "method": method, "rehearsal": run.cfg.rehearse, "paper": paper}
    for suffix, (key, *_rest) in SETS.items():
        section = evaluation(run, suffix, base, trained)
        if section:
            report[key] = section
    report |= {
        **stage_times(run.state),
        "commands": run.state.get("commands", {}),
        "seconds": round(seconds, 1),
    }
    setting = read_setting(run.root)
    diffs = differences(setting)
    report["setting"], report["differences"] = setting, {k: list(v) for k, v in diffs.items()}
    rundir.write_atomically(run.root / rundir.REPORT_JSON, json.dumps(report, indent=1))
    title = f"# {METHOD_NAMES[method]}, the paper's chain — profile `{profile}`"
    lines = [title, "", *overlap_lines(run.root), ""]
    if setting and setting.get("perturbed_mix") is False:
        lines += [
            "**No perturbed training rows**: the run was given trajectories without "
            "`--trajectories-perturbed`, so nothing with perturbed feedback was mixed in; the paper's "
            "TACO-dev figure (COBALT-FT with perturbed training) is left out.",
            "",
        ]
    if run.cfg.rehearse:
        lines += [
            "**A rehearsal on CPU**: SmolLM2 stands in for the base model and GRPO trained a tiny random "
            "model for one step, so the numbers below say the chain runs, not what it learns.",
            *rehearsal_lines(run.root),
            "",
        ]
    lines += [
        *comparability.section(diffs),
        "## Beside the paper",
        "",
        *paper_rows(report, paper, diffs, method),
        "",
    ]
    for key, *_rest in SETS.values():
        if key in report:
            section = report[key]
            lines += [
                f"## {section['title']}",
                "",
                markdown_table(section["pass_at_1"]),
                *cut_lines(section["context_cut"]),
                f"**Verdict.** {section['comparison']['verdict']}",
                "",
                f"![Pass@1 per turn, {section['title']}]({section['figure']})",
                "",
                *repair_section(section["repair"], section["title"]),
            ]
    lines += [*times_table(report), *commands(report)]
    return rundir.write_atomically(run.root / rundir.DONE, "\n".join(lines))
