"""Repair against a placebo on the engine (docs/preregistration.md, issue 41).

    python -m cobalt.eval.repair_run -i RUN/eval_trained/eval.jsonl [MORE.jsonl ...] -o repair.jsonl \\
        --model MODEL --samples 4 --temperature 0.6 --top-p 0.95 --max-tokens 128

Reads evaluated multi-turn files (``scripts/eval_multi_turn.py``'s output: the quickstart's
``<run_dir>/eval_<arm>/eval.jsonl`` and ``eval_<arm>_families/eval.jsonl``), takes every conversation whose turn-0 answer failed the
hidden tests (``all_pass_rates[k][0]`` < 1), samples the repair turn in the three arms of
:func:`cobalt.eval.repair.repair_arms` (the real feedback on the turn-0 answer's public tests, the
placebo turn, a fresh turn-0 sample), ``--samples`` answers per failure and arm at one decoding,
and judges each answer on the hidden tests. One record per problem with a failure, its arms
together (paired by problem); problems without a failure are not written. Resumable as the
inference commands are (a re-run skips the problems already written and never rewrites them); at
the end ``<output stem>.summary.json`` holds :func:`cobalt.eval.repair.placebo_table` of the
output. Exit status: 0 done, 1 the engine or evaluator failed (re-run to continue), 2 bad input.

Output record::

    id                   problem id
    failed_conversations the conversations (k) whose turn-0 answer failed, in order
    decoding             temperature, top_p, max_tokens, samples (one for every arm)
    tests_field          the tests the samples were judged on
    arms                 {feedback|placebo|fresh: {responses, hidden_pass_rates, solved, context_cut}}
                         responses, hidden_pass_rates, solved (0/1): one list of ``samples`` per
                         failed conversation; context_cut: one flag per failed conversation
    usage                tokens and calls of the problem's samples
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

from cobalt.common.argtypes import positive_int
from cobalt.common.errors import DataError
from cobalt.common.jsonl import atomic_output, read_numbered_jsonl, resume_appending
from cobalt.common.passk import turn_solved
from cobalt.common.testcases import parse_test_cases, pass_rate
from cobalt.data.execute import Executor
from cobalt.data.trajectories import read_trajectories
from cobalt.eval.repair import (
    MIN_REPAIR_SAMPLES,
    REPAIR_ARMS,
    RepairDecoding,
    placebo_samples,
    placebo_table,
    repair_arms,
)
from cobalt.infer.llm import ChatModel
from cobalt.infer.single_turn import Sampling, sample_and_run


def turn0_failures(record: dict) -> list[int]:
    """The conversations of an evaluated record whose turn-0 answer failed the hidden tests."""
    return [k for k, rates in enumerate(record["all_pass_rates"]) if not turn_solved(rates[0])]


def load_failures(paths: list[str], tests_field: str = "hidden_test_cases") -> tuple[list[dict], int]:
    """The evaluated records of ``paths`` with a turn-0 failure, checked up front, and how many
    records the files have. Each needs ``all_pass_rates`` (the hidden verdicts), ``public_results``
    (the feedback's source) and ``tests_field``; ids are unique across the files."""
    records, first_seen, total = [], {}, 0
    for path in paths:
        for line, record in read_trajectories(path, need_hidden=True):
            total += 1
            pid = record["id"]
            if pid in first_seen:
                raise DataError(f"duplicate id {pid!r} (also at {first_seen[pid]})", path=path, line=line,
                                field="id")  # fmt: skip
            first_seen[pid] = f"{path}:{line}"
            for field, why in (
                ("public_results", "the turn-0 public-test results the feedback arm shows (run_multi_turn.py writes them)"),
                (tests_field, "the tests the repairs are judged on; see --tests-field"),
            ):  # fmt: skip
                if field not in record:
                    raise DataError(f"missing ({why})", path=path, line=line, field=field)
            parse_test_cases(record[tests_field], path=path, line=line, field=tests_field)
            if turn0_failures(record):
                records.append(record)
    return records, total


def arms_of(record: dict, k: int, decoding: RepairDecoding):
    """The three arms after conversation ``k``'s turn-0 failure: its prompt, its turn-0 answer as
    the conversation holds it and its public-test result, as the self-debugging turn saw them."""
    conversation = record["conversations"][k]
    return repair_arms(
        conversation[1]["content"], conversation[2]["content"], record["public_results"][k][0], decoding
    )


async def repair_record(
    record: dict, model: ChatModel, executor: Executor, decoding: RepairDecoding, tests_field: str
) -> dict:
    """The output record of one problem: every turn-0 failure's three arms, sampled and judged."""
    failed = turn0_failures(record)
    sampling = Sampling(decoding.temperature, decoding.top_p, decoding.max_tokens, n=decoding.samples)
    jobs = [(k, arm) for k in failed for arm in arms_of(record, k, decoding)]
    runs = await asyncio.gather(
        *(
            sample_and_run(
                arm.messages,
                record[tests_field],
                model,
                executor,
                sampling,
                f"{record['id']}: conversation {k}'s {arm.name} prompt",
            )
            for k, arm in jobs
        )
    )
    arms = {
        a: {"responses": [], "hidden_pass_rates": [], "solved": [], "context_cut": []} for a in REPAIR_ARMS
    }
    usage: dict[str, int] = {}
    for (_, arm), (completion, results, cut) in zip(jobs, runs):
        rates = [pass_rate(r) for r in results]
        out = arms[arm.name]
        out["responses"].append(completion.texts)
        out["hidden_pass_rates"].append(rates)
        out["solved"].append([int(turn_solved(r)) for r in rates])
        out["context_cut"].append(cut)
        for key, value in completion.usage.items():
            usage[key] = usage.get(key, 0) + value
    return {
        "id": record["id"],
        "failed_conversations": failed,
        "decoding": dataclasses.asdict(decoding),
        "tests_field": tests_field,
        "arms": arms,
        "usage": usage,
    }


def check_resumable(output: str, decoding: RepairDecoding, tests_field: str) -> None:
    """An output being resumed must have been written at the same decoding and on the same
    tests; otherwise its problems would mix two experiments."""
    if not Path(output).exists():
        return
    resume_appending(output)  # a torn last line set aside first
    want = {"decoding": dataclasses.asdict(decoding), "tests_field": tests_field}
    for line, record in read_numbered_jsonl(output, ("id", *want)):
        for field, value in want.items():
            if record[field] != value:
                raise DataError(
                    f"written with {record[field]!r}, this run asks for {value!r}; resume with the same "
                    "settings or write to another output",
                    path=output,
                    line=line,
                    field=field,
                )


def summary_path(output: str | Path) -> Path:
    """Where the summary of ``output`` goes (written last: the run is done when it exists)."""
    path = Path(output)
    return path.with_name((path.stem if path.suffix == ".jsonl" else path.name) + ".summary.json")


def write_summary(output: str, counts: dict, seed: int = 0) -> dict:
    """The run's counts and the placebo table of its output, also written beside it."""
    try:
        table = placebo_table(placebo_samples(output), seed=seed) if Path(output).exists() else None
    except DataError:  # no problem with samples in every arm
        table = None
    summary = {**counts, "placebo_table": table}
    with atomic_output(summary_path(output), overwrite=True) as tmp:
        tmp.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def parser():
    """The command line (the inference commands' flags, with ``-i`` taking several files)."""
    from cobalt.infer.cli import base_parser

    p = base_parser(
        "Repair against a placebo: after each turn-0 failure of an evaluated multi-turn file, sample "
        "the repair turn with the real feedback, a placebo turn and as a fresh turn-0 sample, and "
        "judge every answer on the hidden tests (docs/preregistration.md).",
        inputs="+",
    )
    p.prog = "python -m cobalt.eval.repair_run"
    p.add_argument(
        "--samples",
        type=positive_int,
        default=MIN_REPAIR_SAMPLES,
        help=f"answers per failure and arm (at least {MIN_REPAIR_SAMPLES}; configs/generalize_design.yaml repair.samples)",
    )
    p.add_argument("--tests-field", default="hidden_test_cases", help="tests each answer is judged on")
    p.epilog = (
        "-i: evaluated multi-turn files (scripts/eval_multi_turn.py output, e.g. RUN/eval_trained/eval.jsonl "
        "RUN/eval_trained_families/eval.jsonl); their problems are repaired into one output"
    )
    return p


def main(argv=None) -> None:
    from cobalt.infer.cli import main_guard, run_job

    p = parser()
    args = p.parse_args(argv)
    try:
        decoding = RepairDecoding(args.temperature, args.top_p, args.max_tokens, args.samples)
    except ValueError as e:
        p.error(str(e))

    def body():
        from cobalt.serve.engine import load_engine_config

        load_engine_config(args.engine_config)  # a wrong name is refused even with nothing to sample
        records, total = load_failures(args.input_file, args.tests_field)
        check_resumable(args.output_file, decoding, args.tests_field)
        failures = sum(len(turn0_failures(r)) for r in records)
        counts = {"evaluated_problems": total, "problems_with_failure": len(records), "failures": failures}
        summary = {}
        if records:  # otherwise nothing to sample: the engine is not started

            def make_step(model, executor):
                return lambda record: repair_record(record, model, executor, decoding, args.tests_field)

            summary = run_job(args, records, make_step, f"repair ({len(REPAIR_ARMS)} arms x {args.samples})")
        return {
            **summary,
            **write_summary(args.output_file, counts),
            "summary": str(summary_path(args.output_file)),
        }

    main_guard(body)


if __name__ == "__main__":
    main()
