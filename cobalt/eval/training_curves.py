"""Training curves from veRL's metrics file (its ``file`` logger: one ``{"step", "data"}`` JSON
line per logged step), as one PNG of small multiples: learning on top, health beneath.

    python -m cobalt.eval.training_curves METRICS_JSONL [-o PNG]

From Python: ``plot(metrics_path, png_path)``. Panels whose metrics the file lacks are left out;
steps where a metric was not logged are not drawn for it (validation runs only every
``trainer.test_freq`` steps).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

from cobalt.common.cli import ArgumentParser
from cobalt.eval.report import pyplot, save_figure

SPREAD = "reward/groups_with_spread/fraction"
NO_SPREAD = "groups_without_spread/fraction"  # derived: 1 - SPREAD
VALIDATION_PREFIX = "val-core/"


@dataclasses.dataclass(frozen=True)
class Panel:
    title: str
    ylabel: str
    lines: tuple[tuple[str, str], ...]  # (label, metric key); a key ending in "*" is a prefix
    fraction: bool = False  # values in [0, 1]: drawn on that whole range


PANELS = (
    Panel("Reward and its parts", "mean per response", (
        ("reward", "critic/score/mean"), ("correctness", "reward/correctness/mean"),
        ("improvement", "reward/improvement/mean"), ("format", "reward/format_reward/mean"))),
    Panel("Pass rate of the rollouts", "hidden-test pass rate", (("mean", "reward/pass_rate/mean"),), True),
    Panel("Groups with a reward spread", "fraction of GRPO groups", (("with spread", SPREAD),), True),
    Panel("Response length", "tokens", (("mean", "response_length/mean"), ("max", "response_length/max"))),
    Panel("Validation score", "score", (("", VALIDATION_PREFIX + "*"),)),
    Panel("Health: groups with zero spread", "fraction (no learning signal)", (("zero spread", NO_SPREAD),),
          True),
    Panel("Health: truncated responses", "fraction at max length", (("clipped", "response_length/clip_ratio"),),
          True),
    Panel("Health: trainer vs rollout", "gap", (
        ("mean |p_rollout - p_trainer|", "training/rollout_probs_diff_mean"),
        ("KL(rollout, trainer)", "rollout_corr/kl"), ("actor ppo_kl", "actor/ppo_kl"))),
)  # fmt: skip


def read_metrics(path: str | Path) -> dict[int, dict[str, float]]:
    """``{step: {metric: value}}``; lines of one step are merged (later values win); numbers only."""
    steps: dict[int, dict[str, float]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            numbers = {k: float(v) for k, v in entry.get("data", {}).items() if _is_number(v)}
            steps.setdefault(int(entry["step"]), {}).update(numbers)
    return {step: with_derived(metrics) for step, metrics in sorted(steps.items())}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def with_derived(metrics: dict[str, float]) -> dict[str, float]:
    return {**metrics, NO_SPREAD: 1.0 - metrics[SPREAD]} if SPREAD in metrics else metrics


def series(metrics: dict[int, dict[str, float]], key: str) -> tuple[list[int], list[float]]:
    """The steps that logged ``key`` and its values there."""
    steps = [step for step, values in metrics.items() if key in values]
    return steps, [metrics[step][key] for step in steps]


def panel_lines(panel: Panel, keys: set[str]) -> list[tuple[str, str]]:
    """(label, key) of the panel's metrics present in ``keys``, wildcards expanded."""
    lines = []
    for label, key in panel.lines:
        if key.endswith("*"):
            lines += [(k.removeprefix(key[:-1]) or label, k) for k in sorted(keys) if k.startswith(key[:-1])]
        elif key in keys:
            lines.append((label, key))
    return lines


def draw_panel(ax, panel: Panel, lines: list[tuple[str, str]], metrics: dict) -> None:
    from matplotlib.ticker import MaxNLocator

    for order, (label, key) in enumerate(lines):  # smaller markers on top: equal values stay visible
        ax.plot(*series(metrics, key), marker="o", markersize=max(2.5, 7 - 1.5 * order), label=label)
    ax.set_title(panel.title, fontsize=10)
    ax.set_xlabel("training step")
    ax.set_ylabel(panel.ylabel)
    ax.set_xlim(min(metrics) - 0.5, max(metrics) + 0.5)  # the same steps in every panel
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4))
    ax.grid(alpha=0.3)
    if panel.fraction:
        ax.set_ylim(-0.03, 1.03)
    if len(panel.lines) > 1 or panel.lines[0][1].endswith("*"):  # which of several metrics it is
        ax.legend(fontsize=7)


def curves_figure(metrics: dict[int, dict[str, float]], columns: int = 4):
    """One panel per :data:`PANELS` entry that has data."""
    keys = {key for values in metrics.values() for key in values}
    drawn = [(panel, lines) for panel in PANELS if (lines := panel_lines(panel, keys))]
    if not drawn:
        raise ValueError("no training metric to plot (is this veRL's file-logger output?)")
    rows = math.ceil(len(drawn) / columns)
    fig, axes = pyplot().subplots(rows, columns, figsize=(4.2 * columns, 3.3 * rows), dpi=100, squeeze=False)
    for ax, (panel, lines) in zip(axes.flat, drawn):
        draw_panel(ax, panel, lines, metrics)
    for ax in axes.flat[len(drawn) :]:
        ax.set_visible(False)
    fig.suptitle(f"GRPO training (veRL metrics), steps {min(metrics)} to {max(metrics)}")
    fig.tight_layout()
    return fig


def plot(metrics_path: str | Path, png_path: str | Path) -> Path:
    """Draw the training curves of ``metrics_path`` into ``png_path``."""
    metrics = read_metrics(metrics_path)
    if not metrics:
        raise ValueError(f"{metrics_path}: no logged step")
    save_figure(curves_figure(metrics), png_path)
    return Path(png_path)


def main(argv=None) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("metrics", help="veRL's file-logger output (VERL_FILE_LOGGER_PATH)")
    p.add_argument("-o", "--out", default=None, help="the PNG to write (default: beside the metrics, .png)")
    args = p.parse_args(argv)
    out = args.out or str(Path(args.metrics).with_suffix(".png"))
    try:
        print(plot(args.metrics, out))
    except (OSError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
