"""COBALT data: problems, perturbation, trajectories, bandit prompts and veRL rows."""
