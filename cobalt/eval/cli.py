"""``scripts/eval_multi_turn.py``: hidden-test Pass@1 per turn of multi-turn trajectories.

    scripts/eval_multi_turn.py -i multi.jsonl -o eval.jsonl
    scripts/eval_multi_turn.py --compare base_eval.jsonl trained_eval.jsonl -o compare

The first re-runs every assistant turn on the hidden tests, writes each record with
``all_pass_rates`` added (resumable, like the inference commands) and then ``eval.summary.json``,
``eval.summary.md`` and ``eval.pass_at_1.png`` beside the output. The second only reports:
files already evaluated, one curve each in one plot; with two files (base first, then trained)
the Markdown also has their repair rates (:mod:`cobalt.eval.repair`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from cobalt.common.argtypes import positive_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.errors import DataError
from cobalt.data.execute import Executor
from cobalt.data.trajectories import read_trajectories
from cobalt.eval.hidden import evaluate_record
from cobalt.eval.repair import compare_repair, repair_section
from cobalt.eval.report import summarize, write_reports
from cobalt.infer.cli import add_num_gpus, inference_settings, main_guard
from cobalt.infer.runtime import open_runtime
from cobalt.infer.stream import stream_records

log = logging.getLogger("cobalt.eval")


def report_stem(output_file: str) -> Path:
    path = Path(output_file)
    return path.with_suffix("") if path.suffix == ".jsonl" else path


def load_for_eval(path: str, tests_field: str) -> list[dict]:
    records = []
    for line, record in read_trajectories(path):
        if tests_field not in record:
            raise DataError(
                "missing (the tests to evaluate on; see --tests-field)",
                path=path,
                line=line,
                field=tests_field,
            )
        records.append(record)
    return records


def evaluate_file(args) -> dict:
    records = load_for_eval(args.input_file, args.tests_field)
    settings = inference_settings()
    with open_runtime(
        engine=None,
        evaluator=args.evaluator,
        evaluator_config=args.evaluator_config,
        address=args.address,
        num_cpus=settings["ray_num_cpus"],
        num_gpus=args.num_gpus,
    ) as runtime:

        async def go():
            executor = Executor(
                runtime.evaluator, args.evaluator_concurrency, settings["evaluator_timeout_s"]
            )
            stats = await stream_records(
                records,
                lambda r: evaluate_record(r, executor, args.tests_field),
                args.output_file,
                concurrency=args.concurrency,
                desc="hidden tests",
            )
            return stats, executor.failures

        stats, failures = asyncio.run(go())
    summary = summarize(args.output_file)
    paths = write_reports({args.label or Path(args.output_file).stem: summary}, report_stem(args.output_file))
    return {
        **summary,
        "written": stats.written,
        "skipped": stats.skipped,
        "execution_failures": failures,
        "reports": paths,
    }


def compare_files(args) -> dict:
    labels = args.labels or [Path(f).stem for f in args.compare]
    if len(labels) != len(args.compare):
        raise DataError(f"--labels names {len(labels)} curves but --compare has {len(args.compare)} files")
    summaries = {label: summarize(f) for label, f in zip(labels, args.compare)}
    out = {"compare": summaries, "reports": write_reports(summaries, report_stem(args.output_file))}
    if len(args.compare) == 2:  # the first as base, the second as trained
        out["repair"] = compare_repair(*args.compare)
        markdown = Path(out["reports"]["markdown"])
        section = repair_section(out["repair"], "the compared", names=tuple(labels))
        markdown.write_text(
            markdown.read_text(encoding="utf-8") + "\n" + "\n".join(section), encoding="utf-8"
        )
    return out


def main(argv=None) -> None:
    settings = inference_settings()
    p = ArgumentParser(
        description=__doc__.split("\n\n")[0].strip("`").split(": ", 1)[-1],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("-i", "--input-file", help="multi-turn trajectories (run_multi_turn.py output)")
    p.add_argument(
        "-o",
        "--output-file",
        required=True,
        help="evaluated records (appended to; a re-run resumes); reports go beside it",
    )
    p.add_argument("--compare", nargs="+", metavar="EVAL_JSONL", help="only plot already evaluated files")
    p.add_argument("--labels", nargs="+", help="curve names for --compare (default: file names)")
    p.add_argument("--label", default=None, help="curve name of this evaluation")
    p.add_argument("--tests-field", default="hidden_test_cases", help="tests each turn is re-run on")
    p.add_argument("--address", default=None, help="join this Ray cluster instead of starting a private head")
    p.add_argument("--evaluator", choices=["serve", "local"], default="serve")
    p.add_argument("--evaluator-config", default=None)
    add_num_gpus(p)
    p.add_argument("--concurrency", type=positive_int, default=4, help="problems in flight")
    p.add_argument("--evaluator-concurrency", type=positive_int, default=settings["evaluator_concurrency"])
    args = p.parse_args(argv)
    if not args.compare and not args.input_file:
        p.error("give -i/--input-file to evaluate, or --compare FILES to plot")
    main_guard(lambda: compare_files(args) if args.compare else evaluate_file(args))
