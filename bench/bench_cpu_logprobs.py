"""Token log-probs on CPU: veRL's own path against the CPU platform's ``logprobs_per_row`` patch.

Without flash-attn, veRL 0.9.1 takes log-probs in ``logprobs_from_logits_v2``: for float32 logits,
one ``torch.logsumexp`` per row of the packed ``(tokens, vocab)`` tensor its FSDP engine passes.
The patch (``cobalt/train/cpu_platform.py``) takes it over blocks of rows. This times both on one
micro-batch, forward alone (the old and reference log-prob passes) and forward + backward (the
update), on one thread as each FSDP rank of a rehearsal runs, and checks that they agree.

.venv/bin/python bench/bench_cpu_logprobs.py [--tokens 20992] [--vocab 2048] [--repeats 3]
Baseline: veRL's per-row path. The default shape is one log-prob micro-batch of the CI chain's
rehearsal: 16 sequences of 1,312 tokens, the tiny model's vocabulary of 2,048.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import verl.utils.torch_functional as verl_F

from cobalt.common.cli import ArgumentParser
from cobalt.train.cpu_platform import chunked_logprobs


def best_seconds(function, logits, labels, backward: bool, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        leaf = logits.clone().requires_grad_(backward)
        started = time.perf_counter()
        values = function(leaf, labels)
        if backward:
            values.sum().backward()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv=None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=16 * 1312, help="rows of the packed logits")
    parser.add_argument("--vocab", type=int, default=2048, help="the model's vocabulary")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    logits = torch.randn(args.tokens, args.vocab)
    labels = torch.randint(0, args.vocab, (args.tokens,))
    verls = getattr(verl_F.logprobs_from_logits_v2, "__wrapped__", verl_F.logprobs_from_logits_v2)
    gap = (verls(logits, labels) - chunked_logprobs(logits, labels)).abs().max().item()
    print(f"{args.tokens} tokens x {args.vocab} vocabulary, float32, 1 thread; largest gap {gap:.2e}")
    for label, backward in (("forward", False), ("forward + backward", True)):
        before = best_seconds(verls, logits, labels, backward, args.repeats)
        after = best_seconds(chunked_logprobs, logits, labels, backward, args.repeats)
        print(
            f"{label:20s} veRL per row {before:.3f} s   patched {after:.3f} s   {before / after:.1f}x faster"
        )


if __name__ == "__main__":
    main()
