"""Summaries of evaluated trajectories: Pass@1 per turn as JSON, a Markdown table and a plot;
the figure helpers every report of the project draws with."""

from __future__ import annotations

import json
from pathlib import Path

from cobalt.common.jsonl import atomic_output, read_jsonl
from cobalt.common.passk import pass_at_1_per_turn


def summarize(evaluated_file: str) -> dict:
    """``pass_at_1`` (per assistant turn, %), ``relative_change`` (% of turn 0) and
    ``absolute_change`` (points) of a file whose records carry ``all_pass_rates``."""
    grids = [r["all_pass_rates"] for r in read_jsonl(evaluated_file, ("all_pass_rates",))]
    curve = pass_at_1_per_turn(grids)
    base = curve[0] if curve else 0.0
    return {
        "file": str(evaluated_file),
        "problems": len(grids),
        "samples": sorted({len(g) for g in grids}),
        "pass_at_1": [round(v, 2) for v in curve],
        "absolute_change": [round(v - base, 2) for v in curve],
        "relative_change": [round(100.0 * (v - base) / base, 2) if base else None for v in curve],
    }


def markdown_table(summaries: dict[str, dict]) -> str:
    """One row per turn; per model its Pass@1 and the change in points since turn 0."""
    turns = max(len(s["pass_at_1"]) for s in summaries.values())
    head = "| turn | " + " | ".join(f"{name} Pass@1 (%) | Δ vs turn 0" for name in summaries) + " |"
    rule = "|---|" + "---:|---:|" * len(summaries)
    rows = []
    for t in range(turns):
        cells = []
        for s in summaries.values():
            if t < len(s["pass_at_1"]):
                cells += [f"{s['pass_at_1'][t]:.2f}", f"{s['absolute_change'][t]:+.2f}"]
            else:
                cells += ["", ""]
        rows.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *rows]) + "\n"


def pass_at_1_figure(summaries: dict[str, dict], title: str = "Pass@1 per turn (hidden tests)"):
    """One curve per summary; turns as integer ticks, the percentage axis from 0 (a flat 0 % curve
    sits on the axis instead of in the middle of a made-up range around it)."""
    fig, ax = pyplot().subplots(figsize=(6, 4), dpi=120)
    for name, s in summaries.items():
        ax.plot(range(len(s["pass_at_1"])), s["pass_at_1"], marker="o", label=name)
    ax.set_xticks(range(max(len(s["pass_at_1"]) for s in summaries.values())))
    highest = max((v for s in summaries.values() for v in s["pass_at_1"]), default=0.0)
    ax.set_ylim(0, min(105.0, max(5.0, highest * 1.15)))
    ax.set_xlabel("assistant turn (0 = first answer)")
    ax.set_ylabel("Pass@1 (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def pyplot():
    """matplotlib's pyplot drawing off-screen (no display on servers and in tests)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | Path) -> None:
    """``fig`` as a PNG at ``path`` (written whole or not at all), then closed."""
    with atomic_output(path, overwrite=True) as tmp:
        fig.savefig(tmp, format="png")
    pyplot().close(fig)


def plot(summaries: dict[str, dict], path: str | Path, title: str = "Pass@1 per turn (hidden tests)") -> None:
    save_figure(pass_at_1_figure(summaries, title), path)


def write_reports(summaries: dict[str, dict], stem: str | Path) -> dict[str, str]:
    """``<stem>.summary.json``, ``<stem>.summary.md`` and ``<stem>.pass_at_1.png``."""
    stem = str(stem)
    paths = {
        "json": f"{stem}.summary.json",
        "markdown": f"{stem}.summary.md",
        "plot": f"{stem}.pass_at_1.png",
    }
    only = next(iter(summaries.values())) if len(summaries) == 1 else {"compare": summaries}
    with atomic_output(paths["json"], overwrite=True) as tmp:
        Path(tmp).write_text(json.dumps(only, indent=1) + "\n", encoding="utf-8")
    with atomic_output(paths["markdown"], overwrite=True) as tmp:
        Path(tmp).write_text(markdown_table(summaries), encoding="utf-8")
    plot(summaries, paths["plot"])
    return paths
