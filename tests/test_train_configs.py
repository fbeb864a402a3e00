"""Training profiles: every profile composes into veRL 0.9.1's real hydra config (so a renamed or
misspelt key fails here, not after a cluster has started), with the paper's settings (section 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt.config import config_dir
from cobalt.errors import ConfigError
from cobalt.train.launch import format_value, hydra_overrides, load_profile, override_value

PROFILES = sorted(p.stem for p in (config_dir() / "train").glob("*.yaml") if p.stem != "common")
ROOT = Path(__file__).resolve().parents[1]


def test_profiles_extend_common_and_children_win():
    smoke = load_profile("cpu_smoke")
    assert smoke.overrides["reward.reward_manager.name"] == "CobaltRewardManager"  # from common
    assert smoke.env["VERL_PLATFORM"] == "cpu" and smoke.env["RAY_DEDUP_LOGS"] == "0"
    smol = load_profile("cpu_smollm2")
    assert smol.overrides["actor_rollout_ref.model.path"] == "data/smollm2"
    assert "tiny_policy" not in smol.prepare and "smollm2" in smol.prepare  # null removes a step


def test_paper_settings_of_the_gpu_profiles():
    qwen = load_profile("multi_turn_qwen3_8b").overrides
    expected = {
        "data.train_batch_size": 128,
        "data.max_prompt_length": 10240,
        "data.max_response_length": 6144,
        "actor_rollout_ref.actor.optim.lr": 1e-6,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 64,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 2,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 16,  # reference section 9
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 16,
        "actor_rollout_ref.actor.clip_ratio_low": 0.2,
        "actor_rollout_ref.actor.clip_ratio_high": 0.4,
        "actor_rollout_ref.actor.kl_loss_coef": 1e-4,
        "actor_rollout_ref.actor.kl_loss_type": "mse",
        "actor_rollout_ref.rollout.n": 16,
        "actor_rollout_ref.rollout.temperature": 1.0,
        "actor_rollout_ref.rollout.val_kwargs.temperature": 0.6,
        "actor_rollout_ref.rollout.val_kwargs.top_p": 0.95,
        "trainer.n_gpus_per_node": 4,
        "trainer.save_freq": 10,
        "trainer.test_freq": 10,
        "trainer.total_epochs": 2,
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": True,
    }
    assert {k: qwen[k] for k in expected} == expected
    llama = load_profile("single_turn_r1_distill_llama_8b").overrides
    assert llama["data.max_prompt_length"] == 2048 and llama["trainer.total_epochs"] == 4
    assert llama["actor_rollout_ref.actor.fsdp_config.optimizer_offload"] is False


def test_override_formatting_and_lookup():
    assert format_value(True) == "true" and format_value(None) == "null"
    assert format_value(["console", "wandb"]) == "[console,wandb]" and format_value(1e-6) == "1e-06"
    assert format_value({"param_dtype": "fp32", "n": [1, 2]}) == "{param_dtype:fp32,n:[1,2]}"
    overrides = hydra_overrides(
        load_profile("cpu_smoke"), ["console", "tensorboard"], ["data.train_batch_size=8"], forward_env=True
    )
    assert override_value(overrides, "trainer.logger") == "[console,tensorboard]"
    assert override_value(overrides, "data.train_batch_size") == "8"  # the user's override comes last
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_PLATFORM='cpu'" in overrides
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.TOKENIZERS_PARALLELISM='false'" in overrides


def test_unknown_profile_keys_are_rejected(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("overides: {}\n")
    with pytest.raises(ConfigError, match="overides"):
        load_profile(str(bad))


@pytest.mark.train
def test_every_profile_composes_with_verl_hydra_config():
    pytest.importorskip("verl")
    code = """
import json, os, sys
from hydra import compose, initialize_config_dir
import verl.trainer.main_ppo as main_ppo
from cobalt.train.launch import load_profile, hydra_overrides
config_path = os.path.join(os.path.dirname(main_ppo.__file__), "config")
result = {}
for name in sys.argv[1:]:
    with initialize_config_dir(config_dir=config_path, version_base=None):
        try:
            cfg = compose(config_name="ppo_trainer",
                          overrides=hydra_overrides(load_profile(name), ["console"], forward_env=True))
            env_vars = cfg.ray_kwargs.ray_init.runtime_env.env_vars
            assert all(isinstance(v, str) for v in env_vars.values()), dict(env_vars)
            # the dtype veRL's FSDP engines compute in (bf16 when mixed_precision is unset)
            dtypes = {role: (cfg.actor_rollout_ref[role].fsdp_config.get("mixed_precision") or {})
                      .get("param_dtype", "bf16") for role in ("actor", "ref")}
            result[name] = [cfg.reward.reward_manager.name, dtypes]
        except Exception as e:
            result[name] = "ERROR " + str(e)[:500]
print(json.dumps(result))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code, *PROFILES],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {name: manager for name, (manager, _) in result.items()} == {
        name: "CobaltRewardManager" for name in PROFILES
    }
    for name, (_, dtypes) in result.items():
        # CPU runs in float32 (bfloat16 matmuls are ~35x slower without AVX512-BF16); GPU in bf16
        expected = "fp32" if load_profile(name).env.get("VERL_PLATFORM") == "cpu" else "bf16"
        assert dtypes == {"actor": expected, "ref": expected}, (name, dtypes)


def test_scripts_pass_profile_and_overrides_through():
    out = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts/train_grpo_multi_turn.sh"),
            "--dry-run",
            "--logger",
            "console,tensorboard",
            "trainer.total_epochs=1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    command = json.loads(out)["command"]
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    assert "actor_rollout_ref.model.path=Qwen/Qwen3-8B" in command
    assert command[-1] == "trainer.total_epochs=1" and "trainer.logger=[console,tensorboard]" in command
    out = subprocess.run(
        ["bash", str(ROOT / "scripts/train_grpo_single_turn.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "data.max_prompt_length=2048" in json.loads(out)["command"]
