#!/usr/bin/env python3
"""Label reward-hacking cases with an LLM judge and the rule-based detector (docs/analysis.md).  `--help` lists the flags."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cobalt.common.venv import use_project_python

use_project_python()

if __name__ == "__main__":
    from cobalt.analysis.cli import judge_main

    judge_main()
