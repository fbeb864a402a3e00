#!/usr/bin/env bash
# A Ray cluster of several nodes on this machine (127.0.0.1, private token), to rehearse multi-node
# training and serving; it keeps running after this command returns.
#   eval "$(bash scripts/local_cluster.sh start --nodes 2 --num-cpus 4 --num-gpus 1)"
#   bash scripts/local_cluster.sh stop "$RAY_ADDRESS"      # or the temp dir start printed
# Logic: cobalt/serve/cluster.py (LocalCluster). Docs: docs/training.md, "Before your GPU run".
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
exec "$PYTHON" -P -m cobalt.serve.cluster "$@"
