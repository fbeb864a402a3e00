"""Bandit prompts (process_multi_turn_taco output) → veRL train.parquet / test.parquet (reference §1)."""

from cobalt.data import cli

if __name__ == "__main__":
    cli.run(lambda: cli.verl_preproc(__doc__, multi_turn=True))
