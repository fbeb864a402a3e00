#!/usr/bin/env bash
# Build the bandit-training parquet files from the embedded problem set, offline, in one command:
#   scripts/build_demo_data.sh --out data/demo [--model-name DIR] [--limit N] [--overwrite]
# Writes OUT/train.parquet and OUT/test.parquet (multi-turn bandit prompts) and
# OUT/single_turn/{train,test}.parquet. Interrupted? Run the same command again: it finishes
# the job (OUT/build_state.json says which stages are done). See docs/data.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
exec "$PYTHON" -P -m cobalt.data.demo "$@"
