#!/usr/bin/env python3
"""Bandit prompts (process_multi_turn_taco output) → veRL train.parquet / test.parquet (reference §1)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

from cobalt.data import cli

if __name__ == "__main__":
    cli.run(lambda: cli.verl_preproc(__doc__, multi_turn=True))
