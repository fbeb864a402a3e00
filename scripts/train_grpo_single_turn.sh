#!/usr/bin/env bash
# Single-step GRPO fine-tuning on turn-0 prompts (veRL main_ppo), the paper's baseline.
#   bash scripts/train_grpo_single_turn.sh [--profile single_turn_r1_distill_llama_8b|cpu_smoke|...]
#        [--address HOST:PORT] [--logger console,tensorboard,wandb] [--rehearse] [hydra overrides...]
#        [--evaluator-config evaluator_paper] [--num-gpus N] [--dry-run]
# --rehearse: one step of the profile's ranks and batch arithmetic on CPU (configs/rehearsal.yaml)
# With --profile cpu_smoke, point the data at the single-turn files:
#   data.train_files=data/demo/single_turn/train.parquet data.val_files=data/demo/single_turn/test.parquet
# Profiles: configs/train/*.yaml. Logic: cobalt/train/launch.py. Docs: docs/training.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
case " $* " in
  *" --profile "*|*" --profile="*) ;;
  *) set -- --profile single_turn_r1_distill_llama_8b "$@" ;;
esac
exec "$PYTHON" -P -m cobalt.train.launch "$@"
