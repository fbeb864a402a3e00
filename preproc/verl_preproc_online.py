#!/usr/bin/env python3
"""Problem records → veRL train.parquet / test.parquet of the online baselines (GRPO-MT, VeRPO-MT):
one row per problem, its turn-0 prompt, all of its tests for the reward (as COBALT's rows), public tests for the feedback
(cobalt.data.verl_rows.online_row)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

from cobalt.data import cli
from cobalt.data.verl_rows import online_row

if __name__ == "__main__":
    cli.run(lambda: cli.verl_preproc(__doc__, multi_turn=False, make=online_row))
