"""Pieces of the quickstart that need no cluster."""

from __future__ import annotations

import pandas as pd
from transformers import AutoTokenizer

from cobalt.quickstart import fitted_lengths
from cobalt.train.launch import load_profile, override_value


def test_grpo_prompt_slot_fits_the_longest_prompt_and_never_exceeds_the_profile(tmp_path, tiny_tokenizer_dir):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_tokenizer_dir))
    prompts = [[{"role": "user", "content": "word " * n}] for n in (10, 60, 30)]
    parquet = tmp_path / "train.parquet"
    pd.DataFrame({"prompt": prompts}).to_parquet(parquet)
    longest = max(
        len(tokenizer.apply_chat_template(p, add_generation_prompt=True, return_dict=False)) for p in prompts
    )
    profile = load_profile("quickstart_ci").overrides
    response = int(profile["data.max_response_length"])

    overrides = fitted_lengths("quickstart_ci", parquet, tiny_tokenizer_dir, multiple=64)
    prompt_len = int(override_value(overrides, "data.max_prompt_length"))
    assert longest <= prompt_len < longest + 64 and prompt_len % 64 == 0
    assert int(override_value(overrides, "actor_rollout_ref.rollout.max_model_len")) == prompt_len + response

    pd.DataFrame({"prompt": [[{"role": "user", "content": "word " * 5000}]]}).to_parquet(parquet)
    capped = fitted_lengths("quickstart_ci", parquet, tiny_tokenizer_dir)
    assert override_value(capped, "data.max_prompt_length") == str(profile["data.max_prompt_length"])
