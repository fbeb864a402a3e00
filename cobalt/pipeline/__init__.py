"""The shared steps of the recipes, the runner (stages) and the map of a run directory (rundir)."""
