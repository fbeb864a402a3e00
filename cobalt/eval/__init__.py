"""Evaluation and the project's reports: hidden-test re-runs of trajectories, Pass@1 per turn
(estimators in cobalt.common.passk), base-vs-trained comparisons with intervals, training curves, tables
and plots."""
