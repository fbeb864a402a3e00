#!/usr/bin/env python3
"""Multi-turn self-debugging from single-turn output (feedback on public tests).  `--help` lists the flags."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

if __name__ == "__main__":
    from cobalt.infer.cli import multi_turn_main

    multi_turn_main()
