"""`python -m cobalt.design`: the pre-registered design (cobalt/recipes/design/design.py)."""

import sys

from cobalt.recipes.design.design import main

if __name__ == "__main__":
    sys.exit(main())
