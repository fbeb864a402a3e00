"""Base vs trained on the same problems (held-out, or training problems): Pass@1 per turn with 95% bootstrap intervals
over problems, the paired difference (trained − base) with its interval and p-value, a verdict,
and one figure of both."""

from __future__ import annotations

from pathlib import Path

from cobalt.common.errors import DataError
from cobalt.common.jsonl import read_jsonl
from cobalt.common.passk import pass_at_1_per_problem
from cobalt.eval.report import pyplot, save_figure
from cobalt.eval.significance import Interval, bootstrap_interval, format_p, paired_difference, verdict


def pass_at_1_by_problem(evaluated_file: str | Path) -> dict:
    """``{problem id: [Pass@1 % per turn]}`` of a file whose records carry ``all_pass_rates``."""
    records = list(read_jsonl(evaluated_file, ("id", "all_pass_rates")))
    rows = pass_at_1_per_problem([r["all_pass_rates"] for r in records])
    return {r["id"]: row for r, row in zip(records, rows)}


def paired_rows(base: dict, trained: dict) -> tuple[list, list[list[float]], list[list[float]]]:
    """The problems both files hold (in the base file's order) and their rows, cut to the turns
    both have."""
    ids = [problem for problem in base if problem in trained]
    if not ids:
        raise DataError("the base and trained evaluations share no problem")
    turns = min(len(base[ids[0]]), len(trained[ids[0]]))
    return ids, [base[i][:turns] for i in ids], [trained[i][:turns] for i in ids]


def column(rows: list[list[float]], turn: int) -> list[float]:
    return [row[turn] for row in rows]


def compare(
    base_file: str | Path, trained_file: str | Path, seed: int = 0, problem_set: str = "held-out"
) -> dict:
    """Intervals per turn for each model, paired differences per turn, and the verdict (at turn 0
    and at the last turn); ``problem_set`` names the problems in the verdict and the figure."""
    _, base, trained = paired_rows(pass_at_1_by_problem(base_file), pass_at_1_by_problem(trained_file))
    return compare_rows(base, trained, seed, problem_set)


def compare_rows(
    base: list[list[float]], trained: list[list[float]], seed: int = 0, problem_set: str = "held-out"
) -> dict:
    """:func:`compare` of per-problem rows (Pass@1 % per turn, paired by position)."""
    turns = range(len(base[0]))
    differences = [paired_difference(column(base, t), column(trained, t), seed) for t in turns]
    ends = sorted({0, len(differences) - 1})
    return {
        "problem_set": problem_set,
        "problems": len(base),
        "base": [bootstrap_interval(column(base, t), seed=seed) for t in turns],
        "trained": [bootstrap_interval(column(trained, t), seed=seed) for t in turns],
        "difference": differences,
        "verdict": verdict({t: differences[t] for t in ends}, problem_set=problem_set),
    }


def _draw_models(ax, comparison: dict) -> None:
    for name, style in (("base", {"markersize": 8}), ("trained", {"markersize": 5, "linestyle": "--"})):
        intervals: list[Interval] = comparison[name]
        turns = range(len(intervals))
        ax.plot(turns, [i.mean for i in intervals], marker="o", label=f"{name} (mean)", **style)
        ax.fill_between(turns, [i.low for i in intervals], [i.high for i in intervals], alpha=0.2,
                        label=f"{name} 95% CI")  # fmt: skip
    highest = max(i.high for name in ("base", "trained") for i in comparison[name])
    top = min(105.0, max(5.0, highest * 1.15))
    ax.set_ylim(-0.04 * top, top)  # a 0 % curve stays visible above the axis
    ax.set_yticks([tick for tick in ax.get_yticks() if 0 <= tick <= top])
    ax.set_ylabel("Pass@1 (%)")
    ax.set_title(
        f"{comparison['problem_set'].capitalize()} Pass@1 per turn ({comparison['problems']} problems)"
    )


def _draw_difference(ax, comparison: dict) -> None:
    diffs = comparison["difference"]
    turns = range(len(diffs))
    means = [d.mean for d in diffs]
    errors = [[d.mean - d.low for d in diffs], [d.high - d.mean for d in diffs]]
    ax.errorbar(turns, means, yerr=errors, marker="o", capsize=4, label="trained − base, 95% CI")
    ax.axhline(0, color="grey", linewidth=1)
    low, high = min(min(d.low for d in diffs), 0.0), max(max(d.high for d in diffs), 0.0)
    margin = max(5.0, 0.2 * (high - low))
    ax.set_ylim(low - margin, high + margin)  # room for the p-values above the bars
    for t in sorted({0, len(diffs) - 1}):
        ax.annotate(f"p = {format_p(diffs[t].p_value)}", (t, diffs[t].high), textcoords="offset points",
                    xytext=(0, 8), ha="center", fontsize=9, bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8})  # fmt: skip
    ax.set_ylabel("difference (percentage points)")
    ax.set_title("Paired difference per turn")


def comparison_figure(comparison: dict):
    """Left: both models' Pass@1 with bands; right: the paired difference with error bars."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    _draw_models(left, comparison)
    _draw_difference(right, comparison)
    turns = len(comparison["difference"])
    for ax in (left, right):
        ax.set_xticks(range(turns))
        ax.set_xlim(-0.4, turns - 0.6)
        ax.set_xlabel("assistant turn (0 = first answer)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_comparison(comparison: dict, path: str | Path) -> None:
    save_figure(comparison_figure(comparison), path)
