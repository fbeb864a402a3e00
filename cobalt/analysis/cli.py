"""The command lines of the reward-hacking analysis (``scripts/extract_turn_level_errors.py``,
``scripts/run_llm_judge.py``); usage in ``docs/analysis.md``."""

from __future__ import annotations

import argparse
import asyncio

from cobalt.analysis.judge import CASE_KEY, judge_file, summarize
from cobalt.analysis.turn_errors import extract_cases
from cobalt.common.cli import ArgumentParser
from cobalt.common.config import load_config
from cobalt.common.errors import DataError
from cobalt.common.jsonl import load_jsonl, record_key, write_jsonl
from cobalt.common.testcases import parse_test_cases
from cobalt.data import cli as data_cli
from cobalt.data.sources import iter_local

CASE_FIELDS = (
    *CASE_KEY,
    "question",
    "previous_code",
    "feedback",
    "current_code",
    "patch",
    "modified_test_cases",
)


# --- extraction -----------------------------------------------------------------------------------
def extract_main(argv=None) -> None:
    p = ArgumentParser(
        description="Turn-level reward-hacking cases of multi-turn runs on perturbed public tests "
        "(reference section 8): one JSONL record per case."
    )
    p.add_argument(
        "-d", "--data-file", required=True, help="perturbed problems (preproc/run_perturbation.py output)"
    )
    p.add_argument(
        "-i",
        "--input-file",
        required=True,
        help="multi-turn trajectories run on perturbed_public_test_cases (evaluated: all_pass_rates)",
    )
    p.add_argument("-o", "--output-file", required=True)
    data_cli.add_overwrite(p)
    args = p.parse_args(argv)

    def body():
        data_cli.refuse_existing([args.output_file], args.overwrite)
        cases, counts = extract_cases(args.data_file, args.input_file)
        write_jsonl(args.output_file, cases, args.overwrite)
        for line in counts.lines():
            print(line)
        if cases and cases[0]["all_acc"] is None:
            print("note: the trajectories have no all_pass_rates (not evaluated): all_acc is null")
        print(f"wrote {len(cases)} cases to {args.output_file}")

    data_cli.run(body)


# --- the judge ------------------------------------------------------------------------------------
def load_cases(path: str) -> list[dict]:
    """Extraction records, checked: required fields, unique (id, conversation, turn)."""
    cases, seen = [], {}
    for line, case in iter_local(path, CASE_FIELDS):
        key = record_key(case, CASE_KEY)
        if key in seen:
            raise DataError(f"duplicate case {key} (also on line {seen[key]})", path=path, line=line)
        seen[key] = line
        parse_test_cases(case["modified_test_cases"], path=path, line=line, field="modified_test_cases")
        cases.append(case)
    return cases


def judge_parser() -> argparse.ArgumentParser:
    settings = load_config("judge")
    sampling = settings["sampling"]
    p = ArgumentParser(
        description="Label reward-hacking cases with an LLM judge (Hard Coding, Logic Overfitting, "
        "Semantic Drifting, Others) and the rule-based hard-coding detector.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("-i", "--input-file", required=True, help="extract_turn_level_errors.py output")
    p.add_argument("-o", "--output-file", required=True, help="appended to; a re-run resumes")
    p.add_argument("--model", required=True, help="a LiteLLM model name, e.g. openai/NAME for a vLLM server")
    p.add_argument("--api-base", default=None, help="endpoint URL, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key", default=None, help="default: the provider's environment variable")
    p.add_argument("--temperature", type=float, default=sampling["temperature"])
    p.add_argument("--top-p", type=float, default=sampling["top_p"])
    p.add_argument("--max-tokens", type=int, default=sampling["max_tokens"])
    p.add_argument("--concurrency", type=int, default=settings["concurrency"], help="cases in flight")
    p.add_argument("--max-retries", type=int, default=settings["max_retries"])
    p.add_argument("--request-timeout-s", type=float, default=settings["request_timeout_s"])
    return p


def print_summary(summary: dict) -> None:
    print(f"judged cases: {summary['judged']}")
    for label, count in summary["labels"].items():
        print(f"  {label}: {count}")
    print(
        f"rule-based detector flagged {summary['rule_based_flagged']} "
        f"(judge says Hard Coding for {summary['rule_based_and_judge_hard_coding']} of them); "
        f"judge-only Hard Coding: {summary['judge_hard_coding_only']}"
    )
    for item in summary["unparsed"]:
        key = ", ".join(f"{k}={item[k]!r}" for k in CASE_KEY)
        print(f"could not parse the verdict of {key}: {item['problem']}")


def judge_main(argv=None) -> None:
    from cobalt.infer.cli import main_guard

    args = judge_parser().parse_args(argv)
    main_guard(lambda: run_judge(args))


def run_judge(args) -> None:
    from cobalt.infer.llm import ChatModel

    cases = load_cases(args.input_file)
    model = ChatModel(
        model=args.model,
        api_base=args.api_base,
        api_key=args.api_key,
        max_retries=args.max_retries,
        request_timeout_s=args.request_timeout_s,
    )
    sampling = {"temperature": args.temperature, "top_p": args.top_p, "max_tokens": args.max_tokens}
    asyncio.run(judge_file(cases, model, args.output_file, sampling=sampling, concurrency=args.concurrency))
    print_summary(summarize(load_jsonl(args.output_file)))
