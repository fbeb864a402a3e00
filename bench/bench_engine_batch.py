"""vLLM decode throughput against the number of sequences decoded at once, offline (no Serve).

    .venv/bin/python bench/bench_engine_batch.py [--model DIR] [--dtype cpu_auto] [--batches 8,32,64,128]

Why ``configs/engine.yaml`` sets ``max_num_seqs`` and ``dtype: cpu_auto``: the overlapped
multi-turn scheme beats the reference's only by decoding more sequences per step, so what matters
is how tokens per second grow with the batch on this machine, in each dtype. Every sequence
decodes exactly ``--max-tokens`` tokens (EOS ignored). Baseline: batch 8, the reference scheme's.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from cobalt.common.cli import ArgumentParser


def main(argv=None) -> list[dict]:
    p = ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="model directory (default: SmolLM2 exported to a temp dir)")
    p.add_argument(
        "--dtype", default="cpu_auto", help="float32, bfloat16, or cpu_auto (as configs/engine.yaml)"
    )
    p.add_argument("--batches", default="8,32,64,128", help="comma-separated sequence counts")
    p.add_argument("--max-tokens", type=int, default=128)
    args = p.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]

    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "3")
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    os.environ.setdefault("OMP_NUM_THREADS", str(len(os.sched_getaffinity(0))))
    from vllm import LLM, SamplingParams

    from cobalt.serve.engine import resolve_dtype
    from cobalt.train.tiny_policy import export_smollm2

    dtype = resolve_dtype(args.dtype)
    model = args.model or str(export_smollm2(Path(tempfile.mkdtemp(prefix="bench-")) / "smollm2"))
    llm = LLM(model=model, max_num_seqs=max(batches), dtype=dtype, enforce_eager=True, max_model_len=2048)
    sampling = SamplingParams(temperature=0.6, top_p=0.95, max_tokens=args.max_tokens, ignore_eos=True)
    prompts = [
        f"Write Python program {i}: read two integers and print their sum." for i in range(max(batches))
    ]
    llm.generate(prompts[:4], sampling, use_tqdm=False)  # warm-up
    rows = []
    for batch in batches:
        started = time.monotonic()
        outputs = llm.generate(prompts[:batch], sampling, use_tqdm=False)
        seconds = time.monotonic() - started
        tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
        rows.append(
            {"dtype": dtype, "batch": batch, "tokens": tokens, "tokens_per_s": round(tokens / seconds, 1)}
        )
    base = rows[0]["tokens_per_s"]
    for row in rows:
        row["vs_first_batch"] = round(row["tokens_per_s"] / base, 2)
        print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    main()
