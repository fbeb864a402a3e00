#!/usr/bin/env bash
# The main job: COBALT end to end on this machine (CPU is enough), with the real components.
#   bash scripts/quickstart.sh                          # SmolLM2-135M-Instruct, embedded problems (time: docs/benchmarks.md)
#   bash scripts/quickstart.sh --profile quickstart_ci  # the reduced run CI makes
#   bash scripts/quickstart.sh --problems F          # problem records, or TACO-verified / LiveCodeBench as shipped
#   bash scripts/quickstart.sh --model DIR --engine-config engine_paper --train-profile ... [--num-gpus N]
#   bash scripts/quickstart.sh --profile generalize --train-seed 1 [--arm control]   # a seed; the control arm
#   bash scripts/quickstart.sh --method grpo_mt      # an online baseline instead of COBALT (grpo_mt, verpo_mt)
# Re-running resumes the newest unfinished run under runs/; the report is runs/<id>/report/report.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh" >/dev/null   # a no-op when the environment is up to date
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}
export WANDB_MODE=${WANDB_MODE:-disabled} RAY_USAGE_STATS_ENABLED=0 TOKENIZERS_PARALLELISM=false
exec "$ROOT/.venv/bin/python" -P -m cobalt.quickstart "$@"
