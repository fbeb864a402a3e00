"""What every recipe's report says of its run's stages (from ``stages.json``): their times and
their exact commands."""

from __future__ import annotations

import dataclasses


def stage_times(state: dict) -> dict:
    """Seconds per stage as measured when each ran; stages that ran beside another one are inside
    their block's time and not added to the total."""
    stages = {k: v for k, v in state.items() if k != "commands"}
    return {
        "stages": {k: v["seconds"] for k, v in stages.items()},
        "concurrent_stages": [k for k, v in stages.items() if v.get("concurrent")],
        "stages_total_s": round(sum(v["seconds"] for v in stages.values() if not v.get("concurrent")), 1),
        "stages_machine_cpu_s": {k: v["machine_cpu_s"] for k, v in stages.items() if "machine_cpu_s" in v},
        "stages_invocations": {k: v["invocations"] for k, v in stages.items() if "invocations" in v},
    }


def times_table(report: dict) -> list[str]:
    """The stage times of :func:`stage_times` as a Markdown section."""
    concurrent = set(report["concurrent_stages"])
    invocations = report.get("stages_invocations", {})
    rows = [
        f"| {'  ↳ ' if k in concurrent else ''}{k}{f' ({invocations[k]} invocations)' if k in invocations else ''} | {v:.0f} |"
        for k, v in report["stages"].items()
    ]
    return [
        "## Stage times",
        "",
        "| stage | seconds |",
        "|---|---:|",
        *rows,
        f"| **all stages** | {report['stages_total_s']:.0f} |",
        "",
    ]


def commands(report: dict) -> list[str]:
    return ["## Commands", "", *[f"- `{name}`: `{cmd}`" for name, cmd in report["commands"].items()], ""]


def jsonable(comparison: dict) -> dict:
    """A comparison (:func:`cobalt.eval.comparison.compare`) as report.json keeps it."""
    return {
        k: [dataclasses.asdict(x) for x in v] if isinstance(v, list) else v for k, v in comparison.items()
    }
