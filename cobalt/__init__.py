"""COBALT: contextual bandit learning with offline trajectories for multi-turn code generation."""

import os

# Ray 2.60 reads its auth mode once, when `ray` is imported; a process that imports it without
# RAY_AUTH_MODE=token can never join a token-auth cluster (every cluster this project starts, see
# cobalt.serve.cluster). Set it before anything imports ray; RAY_AUTH_MODE=disabled still wins.
os.environ.setdefault("RAY_AUTH_MODE", "token")

__version__ = "0.1.0"
