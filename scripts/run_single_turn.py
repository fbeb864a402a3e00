#!/usr/bin/env python3
"""Single-turn sampling: n completions per problem, each run on its tests.  `--help` lists the flags."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

if __name__ == "__main__":
    from cobalt.infer.cli import single_turn_main

    single_turn_main()
