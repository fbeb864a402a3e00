"""Evaluation: hidden-test re-runs of trajectories, Pass@k per turn, summaries, tables and plots."""
