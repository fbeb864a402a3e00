"""Repair rate: Pass@1 at turn t+1 of the conversations that failed at turn t, beside what an
independent resample at the same budget would give, so that a "repair" that is only a second draw
is seen as such.

The resample baseline of a failed conversation is the turn-0 solve rate of the *other*
conversations of its problem (leave-one-out: the failing draw itself is not counted); a problem
with one conversation has none. Both rates pool the failed conversations: each problem weighs by
how many of its conversations failed at turn t. Weighing problems equally instead would bias the
baseline at turn 0, where the same draws choose the failures and estimate the solve rate (with 2
conversations a problem with one failure scores 100 % and one with two 0 %). Problems are the unit
of the bootstrap intervals and of the paired sign-flip tests (:mod:`cobalt.eval.significance`).

Repair against a placebo (docs/preregistration.md): after a turn-0 failure the repair turn is
sampled in three arms that share the prompt prefix and the decoding settings
(:func:`repair_arms`): the real feedback, a placebo turn that says only that the answer was wrong,
and a fresh turn-0 sample; :func:`placebo_table` compares their repair rates problem by problem.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cobalt.common.errors import DataError
from cobalt.common.jsonl import read_jsonl, read_numbered_jsonl
from cobalt.common.passk import turn_solved
from cobalt.common.prompts import feedback_message, initial_messages, placebo_message
from cobalt.eval.significance import (
    Interval,
    PairedDifference,
    bootstrap_interval,
    describe,
    paired_difference,
)


@dataclasses.dataclass(frozen=True)
class ProblemRepair:
    """One problem at one turn: how many conversations failed, the share of them solved at the
    next turn (%), and the mean leave-one-out turn-0 solve rate over them (%, None with one
    conversation)."""

    failed: int
    repair: float
    resample: float | None


@dataclasses.dataclass(frozen=True)
class TurnRepair:
    """Turn ``turn`` → ``turn + 1`` of one model: ``problems`` with a failure at ``turn``,
    ``failed`` conversations in all, the pooled rates in % and repair − resample in points."""

    turn: int
    problems: int
    failed: int
    repair: Interval | None
    resample: Interval | None
    difference: PairedDifference | None
    without_baseline: int  # problems with a failure but one conversation only


def problem_repair(grid: list[list[float]], turn: int) -> ProblemRepair | None:
    """The repair of one problem's K × T hidden pass-rate grid at ``turn``; None without failure."""
    solved = [[turn_solved(rate) for rate in row] for row in grid]
    failed = [row for row in solved if not row[turn]]
    if not failed:
        return None
    repair = 100.0 * sum(row[turn + 1] for row in failed) / len(failed)
    if len(solved) < 2:
        return ProblemRepair(len(failed), repair, None)
    first = sum(row[0] for row in solved)
    others = [(first - row[0]) / (len(solved) - 1) for row in failed]  # leave the failing draw out
    return ProblemRepair(len(failed), repair, 100.0 * sum(others) / len(others))


def turn_repair(turn: int, problems: list[ProblemRepair | None], seed: int = 0) -> TurnRepair:
    """Pool the problems' repairs at ``turn`` (None: no failure there, left out)."""
    rows = [r for r in problems if r is not None]
    based = [r for r in rows if r.resample is not None]
    repair = resample = difference = None
    if rows:
        repair = bootstrap_interval([r.repair for r in rows], seed=seed, weights=[r.failed for r in rows])
    if based:
        weights = [r.failed for r in based]
        resample = bootstrap_interval([r.resample for r in based], seed=seed, weights=weights)
        difference = paired_difference([r.resample for r in based], [r.repair for r in based], seed, weights)
    failed = sum(r.failed for r in rows)
    return TurnRepair(turn, len(rows), failed, repair, resample, difference, len(rows) - len(based))


def common_turns(grids: list) -> int:
    return min(len(grid[0]) for grid in grids)


def repair_rates(grids: list, seed: int = 0) -> list[TurnRepair]:
    """One :class:`TurnRepair` per turn t → t+1 that every problem has."""
    return [
        turn_repair(t, [problem_repair(g, t) for g in grids], seed) for t in range(common_turns(grids) - 1)
    ]


def repair_difference(base: list, trained: list, seed: int = 0) -> PairedDifference | None:
    """Trained − base repair rate at one turn from each problem's repairs (None: no failure),
    paired by problem over those where both models failed, each weighing by both models' failures."""
    pairs = [(b, t) for b, t in zip(base, trained) if b is not None and t is not None]
    if not pairs:
        return None
    weights = [b.failed + t.failed for b, t in pairs]
    return paired_difference([b.repair for b, _ in pairs], [t.repair for _, t in pairs], seed, weights)


def grids_by_problem(evaluated_file: str | Path) -> dict:
    """``{problem id: K × T hidden pass rates}`` of an evaluated trajectory file."""
    return {r["id"]: r["all_pass_rates"] for r in read_jsonl(evaluated_file, ("id", "all_pass_rates"))}


def compare_repair(base_file: str | Path, trained_file: str | Path, seed: int = 0) -> dict:
    """Each model's repair rates on the problems both files hold and trained − base per turn, as
    plain data (report.json)."""
    base, trained = grids_by_problem(base_file), grids_by_problem(trained_file)
    ids = [i for i in base if i in trained]
    if not ids:
        raise DataError("the base and trained evaluations share no problem")
    grids = {"base": [base[i] for i in ids], "trained": [trained[i] for i in ids]}
    turns = min(common_turns(g) for g in grids.values()) - 1
    rows = {m: [[problem_repair(g, t) for g in gs] for t in range(turns)] for m, gs in grids.items()}
    return {
        "problems": len(ids),
        **{
            m: [dataclasses.asdict(turn_repair(t, by_turn[t], seed)) for t in range(turns)]
            for m, by_turn in rows.items()
        },
        "trained_minus_base": [
            _asdict(repair_difference(rows["base"][t], rows["trained"][t], seed)) for t in range(turns)
        ],
    }


def _asdict(value):
    return None if value is None else dataclasses.asdict(value)


def _percent(interval: dict | None) -> str:
    return (
        "—"
        if interval is None
        else f"{interval['mean']:.1f} ({interval['low']:.1f} to {interval['high']:.1f})"
    )


def _difference(difference: dict | None) -> str:
    return "—" if difference is None else describe(PairedDifference(**difference))


def repair_section(repair: dict, problem_set: str, names: tuple[str, str] = ("base", "trained")) -> list[str]:
    """The report's "Repair rate" section from :func:`compare_repair`'s data; ``names``: what the
    tables call the base and the trained model."""
    rows = []
    for model, name in zip(("base", "trained"), names):
        for r in repair[model]:
            note = f"; {r['without_baseline']} without baseline" if r["without_baseline"] else ""
            rows.append(
                f"| {r['turn']} → {r['turn'] + 1} | {name} | {r['failed']} ({r['problems']}{note}) | "
                f"{_percent(r['repair'])} | {_percent(r['resample'])} | {_difference(r['difference'])} |"
            )
    between = [f"| {t} → {t + 1} | {_difference(d)} |" for t, d in enumerate(repair["trained_minus_base"])]
    return [
        f"## Repair rate on {problem_set} problems (hidden tests)",
        "",
        "Repair: Pass@1 at turn t+1 of the conversations that failed at turn t. Resample: for the "
        "same failed conversations, the turn-0 solve rate of the problem's other conversations — "
        "what an independent second draw would give at the same budget (a problem with one "
        "conversation has none). Both pool the failed conversations (a problem weighs by its "
        "failures); intervals: 95% bootstrap over problems; p: paired sign-flip test over problems.",
        "",
        "| turn | model | failed conversations (problems) | repair % (95% CI) | resample % (95% CI) "
        "| repair − resample (points, 95% CI, p) |",
        "|---|---|---:|---:|---:|---|",
        *rows,
        "",
        f"{names[1]} − {names[0]}: paired by problem, over the problems where both models failed at "
        "turn t (each weighs by both models' failures).",
        "",
        f"| turn | {names[1]} − {names[0]} repair rate (points, 95% CI, p) |",
        "|---|---|",
        *between,
        "",
    ]


# ------------------------------------------------------------------- repair against a placebo
REPAIR_ARMS = ("feedback", "placebo", "fresh")
MIN_REPAIR_SAMPLES = 4


@dataclasses.dataclass(frozen=True)
class RepairDecoding:
    """The decoding of every repair arm: sampled (the profile's ``sampling``), ``samples`` per
    failure and arm."""

    temperature: float = 0.6
    top_p: float = 0.95
    max_tokens: int = 128
    samples: int = MIN_REPAIR_SAMPLES

    def __post_init__(self):
        if self.temperature <= 0:
            raise ValueError(f"temperature {self.temperature}: the repair arms sample (> 0)")
        if self.samples < MIN_REPAIR_SAMPLES:
            raise ValueError(f"samples {self.samples}: at least {MIN_REPAIR_SAMPLES} per arm")


@dataclasses.dataclass(frozen=True)
class RepairArm:
    name: str  # one of REPAIR_ARMS
    messages: list[dict]
    decoding: RepairDecoding


def repair_arms(
    instruction: str, failed_answer: str, result: dict, decoding: RepairDecoding
) -> list[RepairArm]:
    """The three arms after a turn-0 failure: ``failed_answer`` (the model's turn-0 response) and
    ``result`` (its execution result on the public tests, as :func:`cobalt.common.prompts.feedback_message`
    reads it) followed by the real feedback, or by the placebo turn; or the turn-0 prompt again
    (a fresh sample). All start from the same turn-0 prompt and share ``decoding``."""
    prefix = initial_messages(instruction)
    answered = [*prefix, {"role": "assistant", "content": failed_answer}]
    return [
        RepairArm("feedback", [*answered, {"role": "user", "content": feedback_message(result)}], decoding),
        RepairArm("placebo", [*answered, {"role": "user", "content": placebo_message()}], decoding),
        RepairArm("fresh", list(prefix), decoding),
    ]


def placebo_table(solved: dict[str, dict[str, list[float]]], seed: int = 0) -> dict:
    """``solved[arm][problem id]``: 0/1 (hidden tests) of each sample of the arm after the
    problem's turn-0 failure. Each arm's repair rate (%, mean over problems of the problem's
    share, 95% bootstrap interval over problems) and the paired differences feedback − placebo and
    placebo − fresh over the problems every arm has."""
    missing = set(REPAIR_ARMS) - set(solved)
    if missing:
        raise DataError(f"repair arms missing: {', '.join(sorted(missing))}")
    ids = [i for i in solved["feedback"] if all(solved[a].get(i) for a in REPAIR_ARMS)]
    if not ids:
        raise DataError("the repair arms share no problem with samples")
    rate = {a: [100.0 * sum(solved[a][i]) / len(solved[a][i]) for i in ids] for a in REPAIR_ARMS}
    return {
        "problems": len(ids),
        "rates": {a: dataclasses.asdict(bootstrap_interval(rate[a], seed=seed)) for a in REPAIR_ARMS},
        "feedback_minus_placebo": dataclasses.asdict(
            paired_difference(rate["placebo"], rate["feedback"], seed)
        ),
        "placebo_minus_fresh": dataclasses.asdict(paired_difference(rate["fresh"], rate["placebo"], seed)),
    }


def placebo_samples(*paths: str | Path) -> dict[str, dict[str, list[float]]]:
    """``solved[arm][problem id]`` for :func:`placebo_table` from the files
    ``python -m cobalt.eval.repair_run`` writes (one per trained seed): each problem's samples of
    every failure, pooled over the files (samples and seeds averaged within an instance)."""
    solved: dict[str, dict[str, list[float]]] = {arm: {} for arm in REPAIR_ARMS}
    for path in paths:
        for line, record in read_numbered_jsonl(path, ("id", "arms")):
            arms = record["arms"]
            for arm in REPAIR_ARMS:
                rows = arms.get(arm, {}).get("solved") if isinstance(arms, dict) else None
                if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
                    raise DataError("expected a list of per-failure sample lists", path=path, line=line,
                                    field=f"arms.{arm}.solved")  # fmt: skip
                solved[arm].setdefault(record["id"], []).extend(float(s) for row in rows for s in row)
    return solved
