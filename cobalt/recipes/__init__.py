"""The recipes: each composes the pipeline's steps (cobalt.pipeline) into one job, with its config and report."""
