#!/usr/bin/env bash
# Run the test suite: sets up .venv first if needed (a no-op when up to date).
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -m "not slow"   # quick subset; any pytest arguments pass through
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled
export RAY_USAGE_STATS_ENABLED=0 TOKENIZERS_PARALLELISM=false
exec "$ROOT/.venv/bin/python" -m pytest "$@"
