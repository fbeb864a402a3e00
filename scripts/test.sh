#!/usr/bin/env bash
# Run the test suite: sets up .venv first if needed (a no-op when up to date).
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -m "not slow"   # quick subset; any pytest arguments pass through
#   bash scripts/test.sh -n 0            # one process (the default: a worker per core, at most 2;
#                                        # heavy tests run alone either way: tests/run_alone.py)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled
export RAY_USAGE_STATS_ENABLED=0 TOKENIZERS_PARALLELISM=false
WORKERS=(-n "$(( $(nproc) < 2 ? 1 : 2 ))")
for arg in "$@"; do   # the caller's own -n / --numprocesses / -p no:xdist wins
  case $arg in -n|-n*|--numprocesses*|no:xdist) WORKERS=() ;; esac
done
exec "$ROOT/.venv/bin/python" -m pytest "${WORKERS[@]}" "$@"
