"""`python -m cobalt.quickstart`: the main job (cobalt/recipes/quickstart/run.py)."""

import sys

from cobalt.common.cli import run
from cobalt.recipes.quickstart.run import main

if __name__ == "__main__":
    sys.exit(run(main))
