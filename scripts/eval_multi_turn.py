#!/usr/bin/env python3
"""Hidden-test Pass@1 per turn of multi-turn trajectories (summary, table, plot).  `--help` lists the flags."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

if __name__ == "__main__":
    from cobalt.eval.cli import main

    main()
