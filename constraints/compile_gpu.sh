#!/usr/bin/env bash
# Resolve constraints/gpu.txt, the CUDA stack `COBALT_PROFILE=gpu bash scripts/setup.sh` installs, from
# PyPI for Linux x86_64 and Python 3.11 (no GPU needed):  bash constraints/compile_gpu.sh
# Inputs: the project's [train,test] extras (pyproject.toml), torch 2.13.0 (PyPI's default Linux wheel,
# a CUDA build), vllm 0.32.0 (its CUDA build) and verl 0.9.1, whose transformers<5.11 pin is
# overridden as setup.sh does by installing veRL with --no-deps (it runs with 5.19, as on CPU).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
UV=${UV:-$ROOT/.venv/bin/uv}
OUT=$ROOT/constraints/gpu.txt
cd "$ROOT"
body=$(printf 'torch==2.13.0\nvllm==0.32.0\nverl==0.9.1\n' | "$UV" pip compile --quiet \
  --python-platform x86_64-manylinux_2_28 --python-version 3.11 \
  --extra train --extra test pyproject.toml - \
  --override <(echo 'transformers>=5.16.1,<5.20') \
  --no-header --annotation-style line)
cuda=$(sed -n 's/^cuda-toolkit==\([0-9]*\.[0-9]*\).*/\1/p' <<<"$body")
{
  cat <<HEADER
# The CUDA stack that \`COBALT_PROFILE=gpu bash scripts/setup.sh\` installs: Linux x86_64, Python 3.11.
# Resolved (not written by hand) from PyPI by \`bash constraints/compile_gpu.sh\`, which runs
#   printf 'torch==2.13.0\nvllm==0.32.0\nverl==0.9.1\n' | .venv/bin/uv pip compile \\
#     --python-platform x86_64-manylinux_2_28 --python-version 3.11 --extra train --extra test \\
#     pyproject.toml - --override <(echo 'transformers>=5.16.1,<5.20') --no-header --annotation-style line
# (uv $("$UV" --version | cut -d' ' -f2); the override: veRL 0.9.1 asks transformers<5.11, vLLM 0.32 needs newer;
# setup.sh installs veRL with --no-deps and it runs with 5.19, as on CPU).
# CUDA: torch 2.13.0 and vllm 0.32.0 from PyPI are built for CUDA $cuda (the cuda-toolkit $cuda wheels
# below ship the runtime; no system CUDA toolkit is needed to run). That needs an NVIDIA driver
# >= 580.65.06 (CUDA 13.0's minimum on Linux) and a GPU of compute capability 7.5 or newer (Turing,
# Ampere, Hopper, Blackwell; CUDA 13 dropped Maxwell, Pascal and Volta).
# flash-attn is NOT here: PyPI ships it as source only (flash-attn 2.8.3.post2, compiled against the
# installed torch and a CUDA toolkit with nvcc). COBALT_FLASH_ATTN=1 makes setup.sh build it; GRPO
# keeps veRL's default attention, flash_attention_2, where flash-attn imports, and uses sdpa where it
# does not (cobalt/train/attention.py, docs/training.md).
HEADER
  echo "$body"
} > "$OUT"
echo "wrote $OUT ($(grep -c '^[a-z0-9]' "$OUT") pins, CUDA $cuda)"
