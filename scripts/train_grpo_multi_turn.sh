#!/usr/bin/env bash
# COBALT contextual-bandit GRPO on multi-turn trajectories (veRL main_ppo).
#   bash scripts/train_grpo_multi_turn.sh [--profile multi_turn_qwen3_8b|cpu_smoke|...]
#        [--address HOST:PORT] [--logger console,tensorboard,wandb] [--rehearse] [hydra overrides...]
#        [--evaluator-config evaluator_paper] [--num-gpus N] [--dry-run]
# --rehearse: one step of the profile's ranks and batch arithmetic on CPU (configs/rehearsal.yaml)
# Profiles: configs/train/*.yaml. Logic: cobalt/train/launch.py. Docs: docs/training.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
case " $* " in
  *" --profile "*|*" --profile="*) ;;
  *) set -- --profile multi_turn_qwen3_8b "$@" ;;
esac
exec "$PYTHON" -P -m cobalt.train.launch "$@"
