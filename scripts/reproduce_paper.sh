#!/usr/bin/env bash
# The paper's chain, one command (docs/paper.md): TACO-verified -> trajectories -> bandit prompts ->
# GRPO with a training profile -> LiveCodeBench and TACO-dev evaluation, beside the paper's table.
#   bash scripts/reproduce_paper.sh --profile multi_turn_qwen3_8b --taco TACO.parquet --lcb test6.jsonl
#   bash scripts/reproduce_paper.sh ... --dry-run     # every stage's settings and the GPUs it needs
#   bash scripts/reproduce_paper.sh ... --preflight   # the checks only: exit 1 if one fails (a job's gate)
#   bash scripts/reproduce_paper.sh ... --rehearse    # the same chain cut down for a CPU
#   bash scripts/reproduce_paper.sh --method grpo_mt --profile grpo_mt_qwen3_8b ...   # a baseline (grpo_mt, verpo_mt)
#   bash scripts/reproduce_paper.sh ... -- KEY=VALUE  # hydra overrides for the GRPO stage (after the profile's)
# Re-running resumes the newest unfinished run under runs/paper/<profile>/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh" >/dev/null   # a no-op when the environment is up to date
export RAY_USAGE_STATS_ENABLED=0 TOKENIZERS_PARALLELISM=false
case " $* " in
  *" --rehearse "*) export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1} ;;
esac
exec "$ROOT/.venv/bin/python" -P -m cobalt.reproduce "$@"
