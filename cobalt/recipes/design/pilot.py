"""The dose of a design: a pilot on training and dev data only (docs/preregistration_ft.md, "Dose").

The design's ``pilot`` names a quickstart profile that evaluates the dev split at earlier
checkpoints too (``eval_steps``), one training seed that is none of the design's, and a directory
with one run per arm. :func:`dose_curve` reads each arm's dev Pass@1 after the last feedback turn
at step 0 (the start model), at each earlier checkpoint and at the last step; :func:`choose_dose`
applies the rule fixed before the pilot was read: the step with the highest mean over the arms,
the fewer steps on a tie. Nothing here reads a held-out instance.
"""

from __future__ import annotations

from pathlib import Path

from cobalt.common import rundir
from cobalt.common.config import from_dict, load_config
from cobalt.eval.report import summarize
from cobalt.recipes.design.report import arms


def pilot_settings(design: dict):
    """The pilot's quickstart settings; ValueError unless it evaluates dev and no held-out family."""
    from cobalt.recipes.quickstart.config import QuickstartConfig

    pilot = design["pilot"]
    cfg = from_dict(QuickstartConfig, load_config(pilot["profile"]), source=pilot["profile"])
    if cfg.procedural.get("evaluate") != "dev" or cfg.procedural.get("heldout_families"):
        raise ValueError(
            f"{pilot['profile']}: a pilot evaluates procedural.evaluate: dev and no held-out family "
            f"(heldout_families: 0), not {cfg.procedural}"
        )
    return cfg


def pilot_runs(design: dict, root: str | Path = ".") -> dict[str, Path]:
    """``{arm: run directory}`` of the pilot, in the design's arm order."""
    runs_dir = Path(root) / design["pilot"]["runs_dir"]
    return {arm: runs_dir / arm for arm in arms(design)}


def pilot_commands(design: dict, root: str | Path = ".") -> list[str]:
    """The quickstart command of each arm's pilot run. Each makes its own start (the same SFT seed:
    minutes), so a pilot run never depends on another's files."""
    runs = pilot_runs(design, root)
    seed = design["pilot"]["seed"]
    return [
        f"bash scripts/quickstart.sh --profile {design['pilot']['profile']}"
        + ("" if method == "cobalt" else f" --method {method}")
        + f" --train-seed {seed} --run-dir {runs[arm]}"
        for arm, method in arms(design).items()
    ]


def dose_curve(design: dict, root: str | Path = ".") -> dict[str, dict[int, float]]:
    """``{arm: {step: dev Pass@1 (%) after the last feedback turn}}`` over the evaluations found."""
    cfg = pilot_settings(design)
    steps = [0, *cfg.eval_steps, cfg.grpo_steps]
    curve = {}
    for arm, run_dir in pilot_runs(design, root).items():
        tags = {0: "eval_base", cfg.grpo_steps: "eval_trained"}
        tags |= {s: f"eval_trained_step{s}" for s in cfg.eval_steps}
        files = {s: run_dir / rundir.evaluated(tags[s]) for s in steps}
        curve[arm] = {s: summarize(str(f))["pass_at_1"][-1] for s, f in files.items() if f.exists()}
    return curve


def choose_dose(curve: dict[str, dict[int, float]], steps: list[int]) -> int | None:
    """The pre-stated rule: of the trained ``steps``, the one with the highest mean dev Pass@1 over
    the arms, the fewer steps on a tie; None until every arm has every step."""
    if not curve or not steps or any(not set(steps) <= set(points) for points in curve.values()):
        return None
    mean = {s: sum(points[s] for points in curve.values()) / len(curve) for s in steps}
    return min(steps, key=lambda s: (-mean[s], s))


def describe_pilot(design: dict, root: str | Path = ".") -> str:
    cfg = pilot_settings(design)
    curve = dose_curve(design, root)
    steps = [0, *cfg.eval_steps, cfg.grpo_steps]
    lines = [
        "dev Pass@1 (%) after the last feedback turn, by GRPO step (step 0: the start model)",
        "| arm | " + " | ".join(str(s) for s in steps) + " |",
        "|---|" + "---:|" * len(steps),
        *[
            f"| {arm} | " + " | ".join(f"{points[s]:.1f}" if s in points else "" for s in steps) + " |"
            for arm, points in curve.items()
        ],
    ]
    dose = choose_dose(curve, steps[1:])
    lines.append(
        f"dose: {dose} steps (the highest mean over the arms, the fewer on a tie)"
        if dose is not None
        else "no dose yet: every arm needs every step; run: " + " ; ".join(pilot_commands(design, root))
    )
    return "\n".join(lines)
