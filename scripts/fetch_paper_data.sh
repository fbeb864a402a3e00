#!/usr/bin/env bash
# The paper's data (docs/paper.md): TACO-verified and LiveCodeBench test6 from the Hugging Face hub,
# checked, then the reproduce_paper.sh command with the flags to pass. Run after scripts/setup.sh.
#   bash scripts/fetch_paper_data.sh                 # into data/paper/
#   bash scripts/fetch_paper_data.sh --released      # the authors' TACO-Cobalt train and perturbed dev instead
#   bash scripts/fetch_paper_data.sh --from DIR      # a local copy in the hub's layout (DIR/<owner>/<name>/<file>)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=$ROOT/.venv/bin/python
[ -x "$PYTHON" ] || { echo "error: no $PYTHON: run bash scripts/setup.sh first" >&2; exit 1; }
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
exec "$PYTHON" -P -m cobalt.data.fetch "$@"
