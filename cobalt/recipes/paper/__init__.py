"""The paper's chain (bash scripts/reproduce_paper.sh): the chain, its preflight and its report."""
