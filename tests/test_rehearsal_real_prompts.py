"""A rehearsal fed with bandit prompts of real problems (the APPS statements beside the checkout,
1,500 to 2,100 characters) sets its prompt length from the data: the rehearsal's own 384 tokens
fit none of them, and the step used to stop with "no prompt fits data.max_prompt_length=384"."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import APPS_SAMPLES

from cobalt.common.errors import ConfigError
from cobalt.common.prompts import SYSTEM_PROMPT, build_instruction
from cobalt.train.profile import hydra_overrides, load_profile, override_value
from cobalt.train.rehearsal import (
    PROMPT_LENGTH_STEP,
    plan,
    prepare,
    prompt_lengths,
    tile_prompts,
)

pytestmark = pytest.mark.skipif(not APPS_SAMPLES.is_dir(), reason=f"no {APPS_SAMPLES}")


MICRO_BATCH_SIZES = (
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
)


def real_prompts() -> list[list[dict]]:
    """Turn-0 and turn-1 bandit prompts of each real problem (a wrong program, then feedback)."""
    out = []
    for problem in sorted(p for p in APPS_SAMPLES.iterdir() if (p / "question.txt").exists()):
        first = [{"role": "system", "content": SYSTEM_PROMPT},
                 {"role": "user", "content": build_instruction((problem / "question.txt").read_text())}]  # fmt: skip
        solution = json.loads((problem / "solutions.json").read_text())[0]
        out += [first, [*first, {"role": "assistant", "content": f"```python\n{solution}\n```"},
                        {"role": "user", "content": "Your code failed 2 of 5 public tests. Fix it."}]]  # fmt: skip
    return out


def test_a_rehearsal_on_real_statements_sets_its_prompt_length_from_the_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the rehearsal's work directory: data/rehearsal/<profile>
    prompts = real_prompts()
    source = tmp_path / "bandit" / "train.parquet"
    source.parent.mkdir()
    pd.DataFrame({"prompt": prompts, "idx": range(len(prompts))}).to_parquet(source)
    staged = plan(load_profile("multi_turn_qwen3_8b"), [], str(source))
    overrides = hydra_overrides(staged.profile)
    assert override_value(overrides, "data.max_prompt_length") == "384"
    logged: list[str] = []
    fitted = prepare(staged, overrides, logged.append)  # the demo data and the tiny model's tokenizer too
    model = override_value(fitted, "actor_rollout_ref.model.path")
    lengths = prompt_lengths(source, model)
    assert min(lengths) > 384  # none fits the rehearsal's own length: the old code stopped here
    with pytest.raises(ConfigError, match=r"no prompt fits data\.max_prompt_length=384"):
        tile_prompts(source, model, 384, 4, tmp_path / "old.parquet")
    length = int(override_value(fitted, "data.max_prompt_length"))
    assert length >= max(lengths) and length % PROMPT_LENGTH_STEP == 0 and length - max(lengths) < 64
    response = int(override_value(fitted, "data.max_response_length"))
    assert int(override_value(fitted, "actor_rollout_ref.rollout.max_model_len")) == length + response
    # the profile's micro-batches at the longer length: each a pass of its own, so cutting them
    # multiplied the step's passes (the profile's 16-sequence log-prob micro-batches once ran out
    # of memory under the packed dense sdpa mask, not the unpacked fallback of today)
    for key in MICRO_BATCH_SIZES:
        assert override_value(fitted, key) == override_value(overrides, key), key
    tiled = pd.read_parquet(override_value(fitted, "data.train_files"))
    assert set(tiled["idx"]) == set(range(len(prompts)))  # every real prompt kept: fewer than 8
    assert any(f"{len(prompts)} distinct prompts of {len(prompts)}" in line for line in logged)
    assert any(f"prompt length set from the data: {length} tokens" in line for line in logged)
