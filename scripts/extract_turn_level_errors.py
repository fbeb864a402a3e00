#!/usr/bin/env python3
"""Turn-level reward-hacking cases on perturbed public tests (docs/analysis.md).  `--help` lists the flags."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

if __name__ == "__main__":
    from cobalt.analysis.cli import extract_main

    extract_main()
