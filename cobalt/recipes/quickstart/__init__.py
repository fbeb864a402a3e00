"""The main job (bash scripts/quickstart.sh): its config, its steps, its base sharing and its report."""
