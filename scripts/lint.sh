#!/usr/bin/env bash
# Lint and format check (ruff), then the import contract (import-linter), both configured in
# pyproject.toml. `bash scripts/lint.sh --fix` repairs what ruff can.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUFF=$ROOT/.venv/bin/ruff
cd "$ROOT"
if [ "${1:-}" = --fix ]; then
  "$RUFF" check --fix .
  "$RUFF" format .
else
  "$RUFF" check .
  "$RUFF" format --check .
fi
"$ROOT/.venv/bin/lint-imports" --no-cache
