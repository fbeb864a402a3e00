"""The inference command lines (``scripts/run_single_turn.py``, ``scripts/run_multi_turn.py``).

Both read and check their whole input first, then open the runtime (private Ray head, evaluator
and engine apps, or what ``--address`` / ``--engine litellm`` name), then stream records to the
output, resuming a previous run of the same command. Exit status: 0 done, 1 the engine or
evaluator failed (the output holds every finished problem; re-run to continue), 2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import time

from cobalt.common.argtypes import fraction, non_negative_float, non_negative_int, positive_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.config import load_config
from cobalt.common.errors import ConfigError, DataError
from cobalt.data.execute import Executor
from cobalt.infer.llm import EngineError, check_reachable
from cobalt.infer.runtime import EngineSpec, open_runtime
from cobalt.infer.single_turn import Sampling
from cobalt.infer.stream import stream_records

log = logging.getLogger("cobalt.infer")


def inference_settings() -> dict:
    return load_config("inference")


def add_num_gpus(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--num-gpus",
        type=non_negative_int,
        default=None,
        help="GPUs the private Ray head offers (default: the GPUs detected on this machine)",
    )


def base_parser(description: str, inputs: str | None = None) -> argparse.ArgumentParser:
    """The flags every inference command shares; ``inputs="+"``: ``-i`` takes one or more files."""
    settings = inference_settings()
    p = ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("-i", "--input-file", required=True, nargs=inputs)
    p.add_argument("-o", "--output-file", required=True, help="appended to; a re-run resumes")
    p.add_argument(
        "--engine",
        choices=["serve", "litellm"],
        default="serve",
        help="serve: vLLM replicas on Ray Serve (--model is a model directory or hub id); "
        "litellm: any LiteLLM endpoint (--model is a LiteLLM model name, e.g. openai/NAME)",
    )
    p.add_argument("--model", required=True)
    p.add_argument("--api-base", default=None, help="endpoint URL for --engine litellm (e.g. a `vllm serve`)")
    p.add_argument("--api-key", default=None, help="default: the provider's environment variable")
    p.add_argument(
        "--address",
        default=None,
        help="join this Ray cluster (reusing its apps) instead of starting a private head",
    )
    p.add_argument(
        "--evaluator",
        choices=["serve", "local"],
        default="serve",
        help="serve: the Ray Serve evaluator app; local: the sandbox in this process",
    )
    p.add_argument("--engine-config", default="engine", help="configs/<name>.yaml of the Serve engine")
    p.add_argument("--evaluator-config", default=None, help="configs/<name>.yaml of the evaluator")
    add_num_gpus(p)
    p.add_argument("--temperature", type=non_negative_float, default=settings["sampling"]["temperature"])
    p.add_argument("--top-p", type=fraction, default=settings["sampling"]["top_p"])
    p.add_argument("--max-tokens", type=positive_int, default=settings["sampling"]["max_tokens"])
    p.add_argument(
        "--enable-thinking",
        action="store_true",
        help="thinking model: ask for thinking and keep only the text after </think>",
    )
    p.add_argument(
        "--concurrency", type=positive_int, default=settings["concurrency"], help="problems in flight"
    )
    p.add_argument(
        "--evaluator-concurrency",
        type=positive_int,
        default=settings["evaluator_concurrency"],
        help="evaluator calls in flight",
    )
    return p


def engine_spec(args) -> EngineSpec:
    return EngineSpec(
        kind=args.engine,
        model=args.model,
        api_base=args.api_base,
        api_key=args.api_key,
        config=args.engine_config,
        enable_thinking=True if args.enable_thinking else None,
    )


def sampling(args, n: int) -> Sampling:
    return Sampling(temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens, n=n)


def run_job(args, records: list[dict], make_step, desc: str) -> dict:
    """Open the runtime, check the model answers, stream the records; a summary of the run."""
    settings = inference_settings()
    with open_runtime(
        engine=engine_spec(args),
        evaluator=args.evaluator,
        evaluator_config=args.evaluator_config,
        address=args.address,
        num_cpus=settings["ray_num_cpus"],
        num_gpus=args.num_gpus,
    ) as runtime:

        async def go():
            await check_reachable(runtime.model)
            executor = Executor(
                runtime.evaluator, args.evaluator_concurrency, settings["evaluator_timeout_s"]
            )
            stats = await stream_records(
                records,
                make_step(runtime.model, executor),
                args.output_file,
                concurrency=args.concurrency,
                desc=desc,
            )
            return {
                "problems": stats.total,
                "skipped": stats.skipped,
                "written": stats.written,
                "seconds": round(stats.seconds, 1),
                "execution_failures": executor.failures,
                "context_window_exceeded": runtime.model.context_exceeded,
                "engine_busy_fraction": round(runtime.model.activity.busy_s / max(stats.seconds, 1e-9), 3),
            }

        return asyncio.run(go())


def main_guard(body) -> None:
    """Run a command body: clear one-line errors, status 2 for bad input, 1 for failures."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    signal.signal(signal.SIGTERM, _interrupt)  # so `finally` blocks stop what the job started
    started = time.monotonic()
    try:
        summary = body()
    except (DataError, ConfigError, FileExistsError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except (EngineError, TimeoutError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("interrupted; re-run the same command to resume", file=sys.stderr)
        sys.exit(130)
    if summary is not None:
        summary.setdefault("seconds", round(time.monotonic() - started, 1))
        print(json.dumps(summary))


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def single_turn_main(argv=None) -> None:
    p = base_parser("Sample n completions per problem and run each on the problem's tests.")
    p.add_argument(
        "-n", "--num-completions", type=positive_int, default=inference_settings()["sampling"]["n"]
    )
    args = p.parse_args(argv)

    def body():
        from cobalt.common.passk import pass_at_k_summary
        from cobalt.infer.records import load_problems
        from cobalt.infer.single_turn import sample_problem

        problems = load_problems(args.input_file)
        opts = sampling(args, args.num_completions)
        summary = run_job(
            args, problems, lambda model, ex: lambda p: sample_problem(p, model, ex, opts), "single-turn"
        )
        return {**summary, **pass_at_k_summary(args.output_file, inference_settings()["pass_at_k"])}

    main_guard(body)


def multi_turn_main(argv=None) -> None:
    p = base_parser("Multi-turn self-debugging from single-turn output, with feedback on public tests.")
    p.add_argument(
        "--turns",
        type=positive_int,
        default=inference_settings()["turns"],
        help="feedback turns after the cached turn-0 answers (2 for training data, 8 to evaluate)",
    )
    p.add_argument(
        "--public-field",
        default="public_test_cases",
        help="tests whose feedback the model sees (perturbed_public_test_cases for the hacking study)",
    )
    args = p.parse_args(argv)

    def body():
        from cobalt.infer.multi_turn import debug_problem
        from cobalt.infer.records import load_single_turn

        records = load_single_turn(args.input_file, args.public_field)
        opts = sampling(args, 1)

        def make_step(model, executor):
            async def step(record):
                return await debug_problem(
                    record,
                    model,
                    executor,
                    opts,
                    turns=args.turns,
                    public_field=args.public_field,
                    thinking=args.enable_thinking,
                )

            return step

        return run_job(args, records, make_step, f"multi-turn ({args.turns} turns)")

    main_guard(body)
