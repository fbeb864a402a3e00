"""Training on veRL: the reward manager, the CPU platform plugin and launch helpers (a recipe on top of
an unmodified veRL 0.9.1)."""
