"""`python -m cobalt.reproduce`: the paper's chain (cobalt/recipes/paper/reproduce.py)."""

import sys

from cobalt.recipes.paper.reproduce import main

if __name__ == "__main__":
    sys.exit(main())
