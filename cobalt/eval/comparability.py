"""Which of the paper's figures a run of the paper's chain can be set beside.

The chain records its setting in ``data/setting.json`` (:func:`cobalt.recipes.paper.reproduce.write_setting`);
each aspect (split, model, samples, turns, context, mix, ...) is compared with the paper's, and a
figure of the paper is placed beside this run's number only when every aspect it depends on
matches. A run without a recorded setting matches nothing."""

from __future__ import annotations

import json
from pathlib import Path

from cobalt.common import rundir

# the paper's setting (reference sections 8-10), aspect by aspect
PAPER = {
    "split": "released",  # the authors' TACO-Cobalt train and TACO-Cobalt-PTB dev, as given
    "eval_samples": 16,
    "eval_turns": 8,
    "trajectory_samples": 16,
    "trajectory_turns": 2,
    "context": None,  # the model's own context window
    "perturbed_mix": True,
    "perturbed_ratio": 0.25,
    "max_problems": None,
}

# aspects each of the paper's figures depends on
NEEDS = {
    "lcb_base": ("model", "samples", "turns", "context", "problems"),
    "lcb_cobalt": ("model", "samples", "turns", "context", "problems", "training", "split", "overlap"),
    "taco_dev": ("model", "samples", "turns", "context", "problems", "training", "split", "overlap", "mix"),
}


# an online baseline's settings the paper does not give: (the paper's, this run's)
METHOD_READINGS = {
    "grpo_mt": (
        "GRPO-MT, its reward terms, per-turn budget and loss weighting not given",
        "this project's choices: COBALT's reward of the final turn on the hidden tests, a third of "
        "the response budget a turn, one training row per episode (docs/training.md)",
    ),
    "verpo_mt": (
        "VeRPO-MT, with VeRPO's reward equations (arXiv 2601.03525)",
        "the equations as a secondhand summary of v3 reports them, with the open constants chosen "
        "here (cobalt/reward/verpo.py)",
    ),
}


def read_setting(root: Path) -> dict | None:
    path = Path(root) / rundir.SETTING
    return json.loads(path.read_text()) if path.exists() else None


def differences(setting: dict | None) -> dict[str, tuple[str, str]]:
    """``{aspect: (the paper's, this run's)}`` for every aspect that differs."""
    if setting is None:
        return {"setting": ("recorded", "not recorded (a run from before data/setting.json)")}
    out = {}
    if setting.get("method") in METHOD_READINGS:
        out["method"] = METHOD_READINGS[setting["method"]]
    if setting.get("split") != PAPER["split"]:
        out["split"] = (
            "the authors' released train and perturbed dev (TACO-Cobalt, TACO-Cobalt-PTB)",
            "this chain's seeded split of TACO-verified: its TACO-dev is not the paper's",
        )
    if setting.get("rehearsal") or setting.get("model") != setting.get("paper_model"):
        out["model"] = (str(setting.get("paper_model")), str(setting.get("model")))
    if setting.get("rehearsal"):
        out["training"] = ("GRPO with the profile, 2 epochs", "one rehearsal step on a tiny random model")
    for aspect, what in (("samples", "conversations per problem"), ("turns", "feedback turns")):
        ours = (setting.get(f"eval_{aspect}"), setting.get(f"trajectory_{aspect}"))
        paper = (PAPER[f"eval_{aspect}"], PAPER[f"trajectory_{aspect}"])
        # a run without trajectories (single-turn training) is compared at evaluation only
        if ours[0] != paper[0] or ours[1] not in (None, paper[1]):
            out[aspect] = (
                f"{what}: {paper[0]} at evaluation, {paper[1]} in the trajectories",
                f"{ours[0]} at evaluation, {ours[1]} in the trajectories",
            )
    if setting.get("context") != PAPER["context"]:
        out["context"] = ("the model's own context window", f"{setting.get('context')} tokens")
    if setting.get("max_problems") != PAPER["max_problems"]:
        out["problems"] = (
            "every problem of each set",
            f"the first {setting.get('max_problems')} of each file",
        )
    if setting.get("perturbed_mix") is False:
        out["mix"] = (
            "25 % of the training rows from trajectories with perturbed feedback",
            "no perturbed rows (--trajectories without --trajectories-perturbed)",
        )
    elif setting.get("perturbed_mix") and setting.get("perturbed_ratio") != PAPER["perturbed_ratio"]:
        out["mix"] = ("25 % perturbed rows", f"{setting.get('perturbed_ratio'):.0%} perturbed rows")
    if setting.get("overlaps"):
        out["overlap"] = (
            "no training problem evaluated",
            f"{setting['overlaps']} training problem(s) also evaluated (--allow-overlap)",
        )
    return out


def blockers(figure: str, diffs: dict) -> list[str]:
    """The differing aspects that keep the paper's ``figure`` from being set beside this run's."""
    if "setting" in diffs:
        return ["setting"]
    return [aspect for aspect in NEEDS[figure] if aspect in diffs]


def section(diffs: dict) -> list[str]:
    """The report's "Comparability" section: each difference from the paper's setting."""
    lines = ["## Comparability", ""]
    if not diffs:
        return lines + [
            "This run's setting is the paper's in every aspect recorded (split, model, samples, turns, "
            "context, mix): its numbers stand beside the paper's.",
            "",
        ]
    lines += [
        "Each difference from the paper's setting; a figure of the paper stands beside this run's only "
        "where none of the aspects it depends on differs.",
        "",
        "| aspect | the paper | this run |",
        "|---|---|---|",
    ]
    lines += [f"| {aspect} | {paper} | {ours} |" for aspect, (paper, ours) in diffs.items()]
    return lines + [""]
