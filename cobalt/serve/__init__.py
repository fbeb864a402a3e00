"""Ray Serve deployments and the one client every caller uses to reach the evaluator."""
