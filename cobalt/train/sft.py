"""Supervised warm-up: teach a policy the response layout COBALT rewards before GRPO.

    python -m cobalt.train.sft --model DIR --problems train.jsonl --out DIR_WARM [--epochs 2] [--seed 0]

SmolLM2-135M-Instruct as shipped never writes ``</think>`` (every answer takes the −0.9 format
penalty) and rarely reads stdin, so GRPO on it has no signal: every reward is about −1. A short
SFT on the *training* problems' reference solutions, each written as reasoning, ``</think>``, one
```` ```python ```` block and a line of explanation, gives it the layout and some of the skill,
so rewards vary within GRPO groups. Held-out problems must never be passed here.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from pathlib import Path

from cobalt.common.cli import ArgumentParser, run
from cobalt.common.prompts import initial_messages


@dataclasses.dataclass(frozen=True)
class SFTOptions:
    max_steps: int = 400
    target_loss: float = 0.0  # stop early once the mean loss of the last 5 steps is below it
    lr: float = 5e-5
    batch_size: int = 4
    seed: int = 0


REASONING = (
    "<think>\nI read the whole input from standard input, work out what the statement asks for, "
    "check the idea on the sample, and print exactly the expected output.\n</think>\n\n"
)


def response_text(program: str) -> str:
    """A response in the layout the format reward expects."""
    return f"{REASONING}```python\n{program.strip()}\n```\nThe program reads the input and prints the answer."


def prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    return tokenizer.apply_chat_template(
        list(messages), add_generation_prompt=True, tokenize=True, return_dict=False
    )


def encode(tokenizer, messages: list[dict], response: str) -> tuple[list[int], int]:
    """Token ids of prompt + response + eos, and where the response starts."""
    ids = prompt_ids(tokenizer, messages)
    response_ids = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return ids + response_ids, len(ids)


def response_loss(model, input_ids, mask, labels, first: int):
    """Mean next-token loss over the labelled (response) tokens, with the output layer applied only
    from position ``first - 1`` on: no row has a label before ``first``, and on a small model the
    vocabulary projection over the prompt is a large share of the step (49k x 576 for SmolLM2)."""
    import torch.nn.functional as F

    keep = input_ids.shape[1] - first + 1
    logits = model(input_ids=input_ids, attention_mask=mask, logits_to_keep=keep).logits
    targets = labels[:, first:]
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]).float(), targets.reshape(-1), ignore_index=-100
    )


def fine_tune(model, tokenizer, examples: list[tuple], opts: SFTOptions, progress=None) -> list[float]:
    """Plain SFT with the loss on response tokens only; returns the loss per step."""
    import torch

    encoded = [encode(tokenizer, m, r) for m, r in examples]
    optimizer = torch.optim.AdamW(model.parameters(), lr=opts.lr)
    rng, losses = random.Random(opts.seed), []
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    for _ in range(opts.max_steps):
        batch = rng.sample(encoded, min(opts.batch_size, len(encoded)))
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), pad)
        labels = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (ids, start) in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            labels[row, start : len(ids)] = torch.tensor(ids[start:])
            mask[row, : len(ids)] = 1
        loss = response_loss(model, input_ids, mask, labels, first=min(start for _, start in batch))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if progress:
            progress(len(losses), losses[-1])
        if len(losses) >= 5 and sum(losses[-5:]) / 5 < opts.target_loss:
            break
    return losses


def warm_up_instruct(
    model_dir: str | Path,
    problems: list[dict],
    solutions: dict,
    out: str | Path,
    epochs: float = 2.0,
    opts: SFTOptions = SFTOptions(),
) -> dict:
    """Fine-tune the model at ``model_dir`` on ``problems`` (records with ``id`` and
    ``instruction``) answered with ``solutions[id]``; save it to ``out``; return a report."""
    import torch
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    examples = [
        (initial_messages(p["instruction"]), response_text(solutions[str(p["id"])])) for p in problems
    ]
    steps = max(1, round(epochs * len(examples) / opts.batch_size))
    opts = dataclasses.replace(opts, max_steps=steps)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    bar = tqdm(total=steps, desc="SFT warm-up", unit="step")
    losses = fine_tune(
        model,
        tokenizer,
        examples,
        opts,
        progress=lambda step, loss: (bar.set_postfix(loss=f"{loss:.3f}"), bar.update(1)),
    )
    bar.close()
    out = Path(out)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    report = {
        "problems": [p["id"] for p in problems],
        "examples": len(examples),
        "steps": len(losses),
        "first_loss": round(losses[0], 4),
        "last_loss": round(losses[-1], 4),
        "seconds": round(time.monotonic() - started, 1),
        "lr": opts.lr,
        "epochs": epochs,
        "batch_size": opts.batch_size,
        "seed": opts.seed,
    }
    (out / "warm_up.json").write_text(json.dumps(report, indent=1))
    return report


def solutions_by_id(records) -> dict[str, str]:
    """The first reference solution of each record that has one: problem records with a
    ``solutions`` list, or TACO-verified rows whose ``solutions`` is a JSON string."""
    found = {}
    for record in records:
        solutions = record.get("solutions")
        if isinstance(solutions, str):
            try:
                solutions = json.loads(solutions)
            except json.JSONDecodeError:
                continue
        if isinstance(solutions, list) and solutions and isinstance(solutions[0], str):
            found[str(record["id"])] = solutions[0]
    return found


def embedded_solutions() -> dict[str, str]:
    """Every embedded set's solutions (their ids are distinct)."""
    from cobalt.data.embedded import PROBLEM_SETS, load_problems

    return solutions_by_id(prob for path in PROBLEM_SETS.values() for prob in load_problems(path))


def main(argv=None) -> None:
    from cobalt.common.argtypes import non_negative_int
    from cobalt.data.sources import iter_local
    from cobalt.infer.records import load_problems as load_problem_records

    p = ArgumentParser(
        description="SFT of an instruct model on training problems' solutions (the quickstart's warm-up, "
        "and its control arm's fine-tuning): the embedded problems' own, the records' `solutions`, or "
        "those of --solutions files."
    )
    p.add_argument("--model", required=True, help="Hugging Face model directory")
    p.add_argument("--problems", required=True, help="problem records (JSONL) to train on")
    p.add_argument(
        "--solutions",
        action="append",
        default=[],
        help="a file of rows with `id` and `solutions` (e.g. the raw TACO-verified file the "
        "problems came from); repeatable",
    )
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--lr", type=float, default=SFTOptions.lr)
    p.add_argument("--batch-size", type=int, default=SFTOptions.batch_size)
    p.add_argument(
        "--seed",
        type=non_negative_int,
        default=SFTOptions.seed,
        help="seeds the order of the examples (which examples form each batch); default %(default)s",
    )
    args = p.parse_args(argv)
    problems = load_problem_records(args.problems)
    solutions = embedded_solutions() | solutions_by_id(problems)
    for path in args.solutions:
        solutions |= solutions_by_id(record for _, record in iter_local(path, ("id", "solutions")))
    answered = [p for p in problems if str(p["id"]) in solutions]
    if not answered:
        sys.exit(
            f"error: {args.problems}: none of its {len(problems)} problems has a reference solution "
            "(the embedded sets', a `solutions` field, or --solutions FILE)"
        )
    if len(answered) < len(problems):
        print(
            f"warm-up: {len(problems) - len(answered)} of {len(problems)} problems have no solution, skipped"
        )
    report = warm_up_instruct(
        args.model,
        answered,
        solutions,
        args.out,
        args.epochs,
        SFTOptions(lr=args.lr, batch_size=args.batch_size, seed=args.seed),
    )
    print(json.dumps(report))


if __name__ == "__main__":
    sys.exit(run(main))
