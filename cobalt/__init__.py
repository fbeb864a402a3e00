"""COBALT: contextual bandit learning with offline trajectories for multi-turn code generation."""

__version__ = "0.1.0"
