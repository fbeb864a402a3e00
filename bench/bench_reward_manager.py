"""Reward scoring of one training batch: the reward manager versus the evaluator's raw capacity,
and versus the reference's scheme (a random 0.1-2.1 s sleep before each evaluator call).

    python bench/bench_reward_manager.py --responses 256 --tests 8 [--replicas 2] [--json out.json]

All three modes score the same responses (right and wrong programs of the embedded problems in the
reference response format, ``--tests`` tests each) on the same Ray Serve evaluator, started on a
private Ray head on loopback (or the cluster at ``$RAY_ADDRESS``):

* ``raw``: ``evaluator.evaluate(code, tests)`` for every response, ``--max-in-flight`` at a time,
  straight through the Serve handle -- what the evaluator can do on this machine;
* ``manager``: :class:`cobalt.train.reward_manager.CobaltRewardManager` over a veRL ``DataProto``
  with the project's reward (decode, code extraction, evaluator call, format reward, bounded
  concurrency) -- what a training step pays; goal: within 1.2x of ``raw``;
* ``reference``: the same manager and reward with the reference's random sleep before each call.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cobalt.common.cli import ArgumentParser


class ByteTokenizer:
    """Token ids = UTF-8 bytes (+1; 0 is padding): decoding costs what a real tokenizer's does, roughly."""

    def encode(self, text: str) -> list[int]:
        return [b + 1 for b in text.encode()]

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return bytes(int(i) - 1 for i in ids if int(i) > 0).decode(errors="replace")


def workload(n_responses: int, n_tests: int, seed: int = 0) -> list[dict]:
    """Responses alternating right and wrong programs of problems with enough tests."""
    from cobalt.data.embedded import load_problems
    from cobalt.train.tiny_policy import response_text

    rng = random.Random(seed)
    items = []
    problems = [
        p
        for p in load_problems()
        if len(p["public_tests"]["inputs"]) + len(p["hidden_tests"]["inputs"]) >= n_tests
    ]
    for problem in problems:
        inputs = problem["public_tests"]["inputs"] + problem["hidden_tests"]["inputs"]
        outputs = problem["public_tests"]["outputs"] + problem["hidden_tests"]["outputs"]
        tests = json.dumps({"inputs": inputs[:n_tests], "outputs": outputs[:n_tests]})
        for program in problem["solutions"][:1] + [w["code"] for w in problem["wrong_solutions"][:1]]:
            items.append({"program": program, "response": response_text(program), "tests": tests})
    rng.shuffle(items)
    return [items[i % len(items)] for i in range(n_responses)]


def data_proto(items: list[dict], tokenizer: ByteTokenizer):
    import torch
    from verl import DataProto

    encoded = [tokenizer.encode(item["response"]) for item in items]
    width = max(map(len, encoded))
    responses = torch.zeros((len(items), width), dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, ids in enumerate(encoded):
        responses[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = 1
    prompts = torch.ones((len(items), 4), dtype=torch.long)
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.cat([torch.ones_like(prompts), mask], dim=1),
        },
        non_tensors={
            "data_source": np.array(["code_taco_verified"] * len(items), dtype=object),
            "reward_model": np.array(
                [{"style": "rule", "ground_truth": it["tests"]} for it in items], dtype=object
            ),
            "extra_info": np.array(
                [{"split": "train", "index": i, "prev_best_pass_rate": 0.0} for i in range(len(items))],
                dtype=object,
            ),
        },
    )


async def run_raw(items: list[dict], max_in_flight: int) -> float:
    from cobalt.serve.client import get_evaluator

    evaluator, slots = get_evaluator("serve"), asyncio.Semaphore(max_in_flight)

    async def one(item):
        async with slots:
            return await evaluator.evaluate(item["program"], item["tests"])

    started = time.perf_counter()
    await asyncio.gather(*(one(item) for item in items))
    return time.perf_counter() - started


def manager(max_in_flight: int, reference_sleep: bool):
    from omegaconf import OmegaConf

    from cobalt.reward import score_details
    from cobalt.train.reward_manager import CobaltRewardManager

    async def with_reference_sleep(**kwargs):
        await asyncio.sleep(random.uniform(0.1, 2.1))  # the reference's load spreading (quirk)
        return await score_details(**kwargs)

    config = OmegaConf.create(
        {
            "reward": {
                "num_workers": 1,
                "reward_kwargs": {"cobalt": {"max_in_flight": max_in_flight, "print_examples": False}},
            }
        }
    )
    return CobaltRewardManager(
        config, ByteTokenizer(), with_reference_sleep if reference_sleep else score_details
    )


async def run_manager(batch, max_in_flight: int, reference_sleep: bool) -> tuple[float, list[float]]:
    m = manager(max_in_flight, reference_sleep)
    started = time.perf_counter()
    _, extras = await m.score_batch(batch)
    return time.perf_counter() - started, extras["acc"]


def main(argv=None) -> dict:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=256)
    parser.add_argument("--tests", type=int, default=8)
    parser.add_argument("--max-in-flight", type=int, default=64)
    parser.add_argument("--evaluator-config", default="evaluator")
    parser.add_argument("--repeats", type=int, default=1, help="runs per mode (the best is reported)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    import ray

    from cobalt.serve.cluster import connect, ray_cluster
    from cobalt.serve.evaluator import load_evaluator_config, start_evaluator_app

    items = workload(args.responses, args.tests)
    batch = data_proto(items, ByteTokenizer())
    _, serve_cfg = load_evaluator_config(args.evaluator_config)
    num_cpus = max(4, serve_cfg.num_replicas * int(serve_cfg.num_cpus) + 2)
    with ray_cluster(None, num_cpus=num_cpus) as address:
        connect(address)
        try:
            start_evaluator_app(args.evaluator_config)
            asyncio.run(run_raw(items[:16], args.max_in_flight))  # warm the replicas and the handle
            modes = {
                "raw": lambda: (asyncio.run(run_raw(items, args.max_in_flight)), None),
                "manager": lambda: asyncio.run(run_manager(batch, args.max_in_flight, reference_sleep=False)),
                "reference": lambda: asyncio.run(
                    run_manager(batch, args.max_in_flight, reference_sleep=True)
                ),
            }
            times, order, scores = {mode: [] for mode in modes}, list(modes), []
            for repeat in range(args.repeats):
                for mode in order[repeat % 3 :] + order[: repeat % 3]:  # rotate: no mode always runs first
                    seconds, result = modes[mode]()
                    times[mode].append(seconds)
                    if mode == "manager":
                        scores = result
        finally:
            ray.shutdown()
    best = {mode: min(values) for mode, values in times.items()}
    report = {
        "responses": args.responses,
        "tests_per_response": args.tests,
        "max_in_flight": args.max_in_flight,
        "evaluator_replicas": serve_cfg.num_replicas,
        "seconds": best,
        "manager_over_raw": best["manager"] / best["raw"],
        "reference_over_manager": best["reference"] / best["manager"],
        "tests_per_second_raw": args.responses * args.tests / best["raw"],
        "mean_score": float(np.mean(scores)) if scores else None,
    }
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
