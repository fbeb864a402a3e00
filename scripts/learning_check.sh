#!/usr/bin/env bash
# The learning check: a short, seeded COBALT GRPO run on CPU that must make the policy better.
#   bash scripts/learning_check.sh [hydra overrides for veRL's main_ppo ...]
# Exit 0 when it learned, 1 when not, 2 when the metrics could not be judged, else the trainer's
# failure status. Prints the per-step reward means and the verdict's numbers; leaves veRL's
# metrics file (file logger), its rollout dump (rollouts/<step>.jsonl: the verdict pairs the
# reward gain by prompt) and the trainer's log in the output directory.
# Environment: LEARNING_CHECK_DIR (output directory, new or empty; default
# runs/learning_check/<UTC time>-<pid>), LEARNING_CHECK_SEED (data order and rollout sampling; 1),
# LEARNING_CHECK_METHOD (cobalt, the default: bandit prompts of the demo's offline trajectories;
# grpo_mt: online multi-turn GRPO on the demo's problems), LEARNING_CHECK_INPUTS (the output directory
# of an earlier check: its demo data and warmed-up policy are copied in instead of built afresh, so
# that both methods' checks start from the very same inputs).
# Profiles: configs/train/learning_check.yaml, learning_check_grpo_mt.yaml. Verdict: cobalt/train/learning_check.py.
# Docs: docs/training.md ("The learning check").
set -euo pipefail
case "${1:-}" in
  -h|--help) echo "usage: [LEARNING_CHECK_DIR=...] bash scripts/learning_check.sh [hydra overrides ...]"
             sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
OUT=${LEARNING_CHECK_DIR:-$ROOT/runs/learning_check/$(date -u +%Y%m%d-%H%M%S)-$$}
SEED=${LEARNING_CHECK_SEED:-1}
METHOD=${LEARNING_CHECK_METHOD:-cobalt}
case "$METHOD" in
  cobalt) PROFILE=learning_check ROWS=demo/train.parquet ;;
  grpo_mt) PROFILE=learning_check_grpo_mt ROWS=demo/online/train.parquet ;;
  *) echo "learning check: LEARNING_CHECK_METHOD is $METHOD; expected cobalt or grpo_mt" >&2; exit 2 ;;
esac
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT")" ]; then
  echo "learning check: $OUT is not empty; the check builds its data and policy afresh" >&2
  exit 2
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
INPUTS=${LEARNING_CHECK_INPUTS:-}
if [ -n "$INPUTS" ]; then   # an earlier check's demo (not its online rows) and policy
  if [ ! -f "$INPUTS/demo/train.parquet" ] || [ ! -f "$INPUTS/policy/config.json" ]; then
    echo "learning check: LEARNING_CHECK_INPUTS=$INPUTS holds no demo/train.parquet and policy/config.json of an earlier check" >&2
    exit 2
  fi
  mkdir -p "$OUT/demo"
  for entry in "$INPUTS/demo"/*; do [ "$(basename "$entry")" = online ] || cp -r "$entry" "$OUT/demo/"; done
  cp -r "$INPUTS/policy" "$OUT/policy"
  echo "learning check: demo data and policy taken from $INPUTS"
fi
export VERL_FILE_LOGGER_PATH=$OUT/metrics.jsonl
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=${WANDB_MODE:-disabled}
export RAY_USAGE_STATS_ENABLED=0
unset RAY_ADDRESS  # always a private loopback Ray head of its own (with a fake GPU slot for veRL)
echo "learning check: $METHOD, seed $SEED, output $OUT (trainer log: train.log)"
started=$(date +%s)
status=0
# The trainer gets SIGTERM (and stops its Ray head) when this script dies, even by SIGKILL
DIE_WITH_SCRIPT=()
if command -v setpriv > /dev/null; then DIE_WITH_SCRIPT=(setpriv --pdeathsig TERM); fi
"${DIE_WITH_SCRIPT[@]}" "$PYTHON" -P -m cobalt.train.launch --profile "$PROFILE" \
  "data.train_files=$OUT/$ROWS" "data.val_files=$OUT/$ROWS" \
  "actor_rollout_ref.model.path=$OUT/policy" "trainer.default_local_dir=$OUT/checkpoints" \
  "trainer.rollout_data_dir=$OUT/rollouts" \
  "data.seed=$SEED" "actor_rollout_ref.rollout.seed=$SEED" "$@" > "$OUT/train.log" 2>&1 || status=$?
echo "learning check: training took $(( $(date +%s) - started )) s, exit status $status"
if [ "$status" -ne 0 ]; then
  tail -n 40 "$OUT/train.log" >&2
  exit "$status"
fi
exec "$PYTHON" -P -m cobalt.train.learning_check "$OUT/metrics.jsonl" --rollouts "$OUT/rollouts" \
  --method "$METHOD" --json "$OUT/verdict.json"
