"""Offline trajectories from procedural problems: a buggy first attempt, the evaluator's feedback,
then a fix (the reference solution) or another buggy attempt.

    python -m cobalt.data.procedural.offline --problems DIR/train.jsonl --out offline.jsonl

For each problem, mutants of its reference solution (:mod:`cobalt.data.mutations`: off by one,
wrong operator, wrong output format, input read wrongly) run in the sandbox on the problem's
tests; those that fail at least one hidden test survive (the others are equivalent mutants and
are dropped). The survivors are the wrong programs of :mod:`cobalt.data.synthetic`, which writes
the trajectories in the format multi-turn inference writes: every conversation opens with a
surviving mutant and its real feedback, and each later turn is the reference (a fix, with
probability ``--p-fix``) or another mutant. ``preproc/process_multi_turn_taco.py`` turns the file
into partial-context bandit prompts unchanged.

Beside OUT, ``OUT.manifest.json`` (``offline.manifest.json`` for ``offline.jsonl``) holds the
settings and, per bug class and per family, how many mutants were tried and how many survived.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from cobalt.common.argtypes import fraction, non_negative_int, positive_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.errors import DataError
from cobalt.common.extract import extract_code
from cobalt.common.jsonl import atomic_output, load_jsonl, write_jsonl
from cobalt.data import cli
from cobalt.data.mutations import BUG_CLASSES, Survival, surviving_mutants, tries_for
from cobalt.data.procedural.generate import parse_id, reference_solution
from cobalt.data.synthetic import SyntheticOptions, generate

OFFLINE_TURN0_MIX = (0.0,)  # every conversation opens with a failing attempt


def manifest_path(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(f"{out.stem}.manifest.json")


def offline_options(num_samples: int = 16, num_turns: int = 2, p_fix: float = 0.5, seed: int = 0):
    """The synthetic generator's options for offline trajectories: turn 0 always a mutant, a
    failing attempt after a failing one another mutant, and every response has a program."""
    return SyntheticOptions(
        num_samples=num_samples,
        num_turns=num_turns,
        p_fix=p_fix,
        p_no_code=0.0,
        seed=seed,
        turn0_correct_mix=OFFLINE_TURN0_MIX,
        change_wrong=True,
    )


def references_of(problems: list[dict]) -> dict[str, str]:
    """``{id: reference solution}``; DataError for a problem that is not a procedural one."""
    out = {}
    for p in problems:
        try:
            out[p["id"]] = reference_solution(str(p["id"]))
        except ValueError as e:
            raise DataError(f"{e}: offline trajectories need procedural problems") from None
    return out


def family_of(problem: dict) -> str:
    return parse_id(str(problem["id"]))[0]


def bug_classes(record: dict, labels: dict[str, str]) -> list[list[str | None]]:
    """K × T: the bug class of each response's program, ``"reference"`` for the fix, None for a
    response without a program."""
    return [[labels.get(extract_code(r) or "") for r in row] for row in record["responses"]]


async def offline_trajectories(
    problems: list[dict],
    evaluator,
    *,
    per_problem: int = 4,
    tries_per_problem: int | None = None,
    opts: SyntheticOptions | None = None,
    survival: Survival | None = None,
) -> list[dict]:
    """Trajectory records for the ``problems`` that have at least one surviving mutant (each
    with ``bug_classes``, K × T, beside the usual fields); ``survival`` gets the counts."""
    opts = opts or offline_options()
    survival = survival if survival is not None else Survival()
    references = references_of(problems)
    kept = await surviving_mutants(
        problems,
        references,
        evaluator,
        per_problem=per_problem,
        tries_per_problem=tries_per_problem,
        seed=opts.seed,
        survival=survival,
        group=family_of,
    )
    usable = [p for p in problems if kept[p["id"]]]
    programs = {p["id"]: ([references[p["id"]]], [src for _, src in kept[p["id"]]]) for p in usable}
    records = await generate(usable, programs, evaluator, opts)
    for record in records:
        labels = {src.strip(): bug for bug, src in kept[record["id"]]}  # as extract_code reads them
        labels[references[record["id"]].strip()] = "reference"
        record["bug_classes"] = bug_classes(record, labels)
    return records


def main(argv: list[str] | None = None) -> None:
    p = ArgumentParser(
        prog="python -m cobalt.data.procedural.offline",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--problems", required=True, help="procedural problem records (DIR/train.jsonl)")
    p.add_argument("--out", required=True, help="the trajectories (JSONL); refused if it exists")
    p.add_argument("--per-problem", type=positive_int, default=4, help="surviving mutants kept per problem")
    p.add_argument(
        "--tries",
        type=positive_int,
        default=None,
        help="mutants run in the sandbox per problem, the bug classes taken in turn (default 4 * per_problem)",
    )
    p.add_argument("--num-samples", type=positive_int, default=16, help="conversations per problem")
    p.add_argument("--num-turns", type=positive_int, default=2, help="feedback turns after turn 0")
    p.add_argument("--p-fix", type=fraction, default=0.5, help="a buggy attempt is fixed at the next turn")
    p.add_argument("--seed", type=non_negative_int, default=0, help="picks the mutants and the conversations")
    p.add_argument("--limit", type=positive_int, default=None, help="use only the first N problems")
    cli.add_evaluator(p)
    p.set_defaults(evaluator="local")
    cli.add_overwrite(p)
    args = p.parse_args(argv)

    manifest = manifest_path(args.out)
    cli.refuse_existing([args.out, manifest], args.overwrite)
    problems = load_jsonl(
        args.problems, required=("id", "test_cases", "public_test_cases", "hidden_test_cases")
    )
    problems = problems[: args.limit] if args.limit else problems
    if not problems:
        raise DataError(f"{args.problems}: no problems")
    opts = offline_options(args.num_samples, args.num_turns, args.p_fix, args.seed)
    survival = Survival()
    records = asyncio.run(
        offline_trajectories(
            problems,
            cli.make_evaluator(args.evaluator),
            per_problem=args.per_problem,
            tries_per_problem=args.tries,
            opts=opts,
            survival=survival,
        )
    )
    write_jsonl(args.out, records, overwrite=args.overwrite)
    summary = {
        "problems": args.problems,
        "settings": {
            "per_problem": args.per_problem,
            "tries": tries_for(args.per_problem, args.tries),
            "num_samples": args.num_samples,
            "num_turns": args.num_turns,
            "p_fix": args.p_fix,
            "seed": args.seed,
            "limit": args.limit,
        },
        "problems_read": len(problems),
        "trajectories": len(records),
        "problems_without_survivor": survival.problems_without_survivor,
        "bug_classes": survival.table(),
        "by_family": survival.by_group(),
        "by_family_columns": ["tried", "survived"],
        "bug_class_order": list(BUG_CLASSES),
    }
    with atomic_output(manifest, overwrite=args.overwrite) as tmp:
        tmp.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print("\n".join(survival.lines()))
    print(
        f"wrote {len(records)} trajectories to {args.out} ({len(problems) - len(records)} of "
        f"{len(problems)} problems had no surviving mutant); survival per bug class and family in {manifest}"
    )


if __name__ == "__main__":
    cli.run(main)
