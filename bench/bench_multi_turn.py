"""Multi-turn self-debugging throughput: the overlapped scheme vs the reference's, in one run.

    .venv/bin/python bench/bench_multi_turn.py [--model DIR] [--problems 16] [--samples 4] [--turns 2]

Both schemes run on the same engine (vLLM on Ray Serve, SmolLM2-135M-Instruct by default), the
same evaluator app and the same cached turn-0 answers:

* overlapped (``cobalt.infer.multi_turn``): every conversation moves to its next turn as soon as
  its own program has run; ``--concurrency`` problems in flight (default: ``scripts/run_multi_turn.py``'s,
  from ``configs/inference.yaml``); evaluator calls bounded, no sleeps.
* reference: 2 problems at a time; each turn generates for all conversations of a problem, then
  executes them all, each evaluator call preceded by a random 0.1–1.1 s sleep.

Prints problems per minute and the engine's idle fraction (time with no request in flight) for
each, and the speed-up against the goal of 2x.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

from cobalt.common.cli import ArgumentParser


async def reference_problem(record, model, executor, sampling, turns, public_field, rng):
    """The reference's loop for one problem: whole-turn barriers, a random sleep per call."""
    from cobalt.common.extract import extract_code
    from cobalt.data.trajectories import add_turn, start_conversation

    async def run(response):
        await asyncio.sleep(rng.uniform(0.1, 1.1))
        return await executor.run(extract_code(response), record[public_field])

    conversations = [start_conversation(record["instruction"]) for _ in record["responses"]]
    responses = list(record["responses"])
    for turn in range(turns + 1):
        if turn:
            completions = await asyncio.gather(
                *(model.complete(conv, n=1, **sampling.params()) for conv in conversations)
            )
            responses = [c.texts[0] for c in completions]
        results = await asyncio.gather(*(run(r) for r in responses))
        for conv, response, result in zip(conversations, responses, results):
            add_turn(conv, response, result, thinking=False)


async def time_scheme(name, records, model, executor, run_one, concurrency) -> dict:
    slots = asyncio.Semaphore(concurrency)
    busy_before = model.activity.busy_s

    async def one(record):
        async with slots:
            await run_one(record)

    print(f"[bench] {name} scheme: {len(records)} problems ...", flush=True)
    started = time.monotonic()
    await asyncio.gather(*(one(r) for r in records))
    seconds = time.monotonic() - started
    print(f"[bench] {name} scheme: {seconds:.0f} s", flush=True)
    busy = model.activity.busy_s - busy_before
    return {
        "scheme": name,
        "seconds": round(seconds, 1),
        "problems_per_minute": round(60 * len(records) / seconds, 2),
        "engine_idle_fraction": round(1 - busy / seconds, 3),
    }


def main(argv=None) -> dict:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="model directory (default: SmolLM2 exported to a temp dir)")
    p.add_argument("--problems", type=int, default=16)
    p.add_argument("--samples", type=int, default=4, help="conversations per problem")
    p.add_argument("--turns", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="problems in flight (overlapped scheme; default: configs/inference.yaml)",
    )
    p.add_argument("--json", default=None, help="also write the report here")
    args = p.parse_args(argv)

    from cobalt.common.config import load_config
    from cobalt.data import embedded
    from cobalt.data.embedded import problem_records
    from cobalt.data.execute import Executor
    from cobalt.infer.multi_turn import debug_problem
    from cobalt.infer.runtime import EngineSpec, open_runtime
    from cobalt.infer.single_turn import Sampling, sample_problem
    from cobalt.serve.engine import llm_config, load_engine_config
    from cobalt.train.tiny_policy import export_smollm2

    concurrency = args.concurrency or load_config("inference")["concurrency"]
    model_dir = args.model or str(export_smollm2(Path(tempfile.mkdtemp(prefix="bench-")) / "smollm2"))
    ids = [p["id"] for p in embedded.load_problems()[: args.problems]]
    problems = problem_records(ids)
    sampling = Sampling(temperature=0.6, top_p=0.95, max_tokens=args.max_tokens, n=args.samples)
    with open_runtime(engine=EngineSpec("serve", model_dir), num_cpus=8) as runtime:
        model = runtime.model

        async def go():
            executor = Executor(runtime.evaluator, concurrency=64, timeout_s=300)
            print(
                f"[bench] turn-0 answers for {len(problems)} problems (shared by both schemes) ...",
                flush=True,
            )
            singles = await asyncio.gather(*(sample_problem(p, model, executor, sampling) for p in problems))
            one = Sampling(sampling.temperature, sampling.top_p, sampling.max_tokens, 1)
            rng = random.Random(0)
            overlapped = await time_scheme(
                "overlapped", singles, model, executor,
                lambda r: debug_problem(r, model, executor, one, turns=args.turns,
                                        public_field="public_test_cases", thinking=False),
                concurrency,
            )  # fmt: skip
            reference = await time_scheme(
                "reference", singles, model, executor,
                lambda r: reference_problem(r, model, executor, one, args.turns, "public_test_cases", rng),
                2,
            )  # fmt: skip
            return overlapped, reference

        overlapped, reference = asyncio.run(go())
    engine_kwargs = llm_config(model_dir, load_engine_config()).engine_kwargs
    speedup = overlapped["problems_per_minute"] / reference["problems_per_minute"]
    report = {
        "model": model_dir,
        "problems": len(problems),
        "samples": args.samples,
        "turns": args.turns,
        "max_tokens": args.max_tokens,
        "concurrency": {"overlapped": concurrency, "reference": 2},
        "engine": {k: engine_kwargs.get(k) for k in ("dtype", "max_num_seqs")},
        "overlapped": overlapped,
        "reference": reference,
        "speedup": round(speedup, 2),
        "goal": ">= 2x problems per minute",
        "meets_goal": speedup >= 2,
    }
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
