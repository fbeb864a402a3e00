"""Training profiles: every profile composes into veRL 0.9.1's real hydra config (so a renamed or
misspelt key fails here, not after a cluster has started), with the paper's settings (section 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt.common.config import config_dir
from cobalt.common.errors import ConfigError
from cobalt.train.profile import format_value, hydra_overrides, load_profile, override_value

PROFILES = sorted(p.stem for p in (config_dir() / "train").glob("*.yaml") if p.stem != "common")
ROOT = Path(__file__).resolve().parents[1]


def test_profiles_extend_common_and_children_win():
    smoke = load_profile("cpu_smoke")
    assert smoke.overrides["reward.reward_manager.name"] == "CobaltRewardManager"  # from common
    assert smoke.env["VERL_PLATFORM"] == "cpu" and smoke.env["RAY_DEDUP_LOGS"] == "0"
    smol = load_profile("cpu_smollm2")
    assert smol.overrides["actor_rollout_ref.model.path"] == "data/smollm2"
    assert "tiny_policy" not in smol.prepare and "smollm2" in smol.prepare  # null removes a step


# Reference section 9, one row a setting: (its words there, veRL key, multi-turn Qwen3-8B run,
# single-turn R1-Distill-Llama-8B run). The single-turn run is the multi-turn one with prompts of
# 2,048 tokens, 4 epochs and no offload.
PAPER_SETTINGS = [
    ("GRPO", "algorithm.adv_estimator", "grpo", "grpo"),
    ("train batch 128", "data.train_batch_size", 128, 128),
    ("max prompt 10,240 / 2,048", "data.max_prompt_length", 10240, 2048),
    ("max response 6,144", "data.max_response_length", 6144, 6144),
    ("truncation right", "data.truncation", "right", "right"),
    ("lr 1e-6", "actor_rollout_ref.actor.optim.lr", 1e-6, 1e-6),
    ("remove padding", "actor_rollout_ref.model.use_remove_padding", True, True),
    ("PPO mini-batch 64", "actor_rollout_ref.actor.ppo_mini_batch_size", 64, 64),
    ("micro-batch 2 per GPU", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", 2, 2),
    (
        "log-prob micro-batch 16 (rollout)",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
        16,
        16,
    ),
    (
        "log-prob micro-batch 16 (reference)",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
        16,
        16,
    ),
    ("grad clip 1.0", "actor_rollout_ref.actor.grad_clip", 1.0, 1.0),
    ("clip ratio 0.2", "actor_rollout_ref.actor.clip_ratio_low", 0.2, 0.2),
    ("clip ratio 0.4", "actor_rollout_ref.actor.clip_ratio_high", 0.4, 0.4),
    ("KL loss", "actor_rollout_ref.actor.use_kl_loss", True, True),
    ("KL loss coef 1e-4", "actor_rollout_ref.actor.kl_loss_coef", 1e-4, 1e-4),
    ("KL loss mse", "actor_rollout_ref.actor.kl_loss_type", "mse", "mse"),
    ("gradient checkpointing", "actor_rollout_ref.model.enable_gradient_checkpointing", True, True),
    ("actor parameters not offloaded", "actor_rollout_ref.actor.fsdp_config.param_offload", False, False),
    ("actor optimizer offload / none", "actor_rollout_ref.actor.fsdp_config.optimizer_offload", True, False),
    ("reference parameter offload / none", "actor_rollout_ref.ref.fsdp_config.param_offload", True, False),
    ("vLLM rollout", "actor_rollout_ref.rollout.name", "vllm", "vllm"),
    ("temperature 1.0", "actor_rollout_ref.rollout.temperature", 1.0, 1.0),
    ("n 16", "actor_rollout_ref.rollout.n", 16, 16),
    ("GPU memory 0.7", "actor_rollout_ref.rollout.gpu_memory_utilization", 0.7, 0.7),
    ("TP 1", "actor_rollout_ref.rollout.tensor_model_parallel_size", 1, 1),
    ("16,384 batched tokens", "actor_rollout_ref.rollout.max_num_batched_tokens", 16384, 16384),
    ("validation sampling", "actor_rollout_ref.rollout.val_kwargs.do_sample", True, True),
    ("validation temperature 0.6", "actor_rollout_ref.rollout.val_kwargs.temperature", 0.6, 0.6),
    ("validation top-p 0.95", "actor_rollout_ref.rollout.val_kwargs.top_p", 0.95, 0.95),
    ("algorithm KL coef 1e-4", "algorithm.kl_ctrl.kl_coef", 1e-4, 1e-4),
    ("KL as a loss, not in the reward", "algorithm.use_kl_in_reward", False, False),
    ("1 node", "trainer.nnodes", 1, 1),
    ("4 GPUs", "trainer.n_gpus_per_node", 4, 4),
    ("save every 10 steps", "trainer.save_freq", 10, 10),
    ("test every 10 steps", "trainer.test_freq", 10, 10),
    ("2 / 4 epochs", "trainer.total_epochs", 2, 4),
    (
        "base model",
        "actor_rollout_ref.model.path",
        "Qwen/Qwen3-8B",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    ),
]
PAPER_ENV = {"RAY_SERVE_QUEUE_LENGTH_RESPONSE_DEADLINE_S": "10"}  # set by the reference's launch scripts


def dry_run(profile: str) -> dict:
    """What ``cobalt.train.launch --dry-run`` would run (no Ray, no GPU), with no cluster to join."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = subprocess.run(
        [sys.executable, "-m", "cobalt.train.launch", "--profile", profile, "--dry-run"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=ROOT,
        env=env,
    ).stdout
    return json.loads(out)


def hydra_value(text: str):
    """A hydra override's value as the number, bool or string it means."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def differences_from_section_9(profile: str, column: int) -> dict:
    """``{setting: (given, expected)}`` for each row of PAPER_SETTINGS the dry-run command misses."""
    from cobalt.train.attention import choose

    command = dry_run(profile)["command"]
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    # the profile's own settings: not sdpa's, which the launcher adds where flash-attn does not import
    # (tests/test_attention_fallback.py)
    fallback = choose([], flash_attn=False).overrides
    overrides = [o for o in command[3:] if o not in fallback]
    wrong = {}
    for row in PAPER_SETTINGS:
        given = override_value(overrides, row[1])
        if given is None or hydra_value(given) != row[column]:
            wrong[f"{row[0]} ({row[1]})"] = (given, row[column])
    return wrong


@pytest.mark.parametrize(
    "profile, column", [("multi_turn_qwen3_8b", 2), ("single_turn_r1_distill_llama_8b", 3)]
)
def test_paper_profiles_dry_run_matches_reference_section_9(profile, column):
    assert differences_from_section_9(profile, column) == {}
    env = dry_run(profile)["env"]
    assert {k: env.get(k) for k in PAPER_ENV} == PAPER_ENV


def test_dry_run_comparison_names_a_changed_setting(tmp_path):
    changed = tmp_path / "changed.yaml"
    changed.write_text(
        f"extends: {config_dir() / 'train' / 'multi_turn_qwen3_8b.yaml'}\n"
        "overrides:\n  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: 2\n"
    )
    assert differences_from_section_9(str(changed), 2) == {
        "log-prob micro-batch 16 (rollout) (actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu)": (
            "2",
            16,
        )
    }


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


def test_reward_scores_in_flight_never_exceed_what_the_evaluator_runs_at_once():
    from cobalt.train.profile import REWARD_IN_FLIGHT, within_evaluator_capacity

    given = ["a=1", f"+{REWARD_IN_FLIGHT}=64", "b=2", f"{REWARD_IN_FLIGHT}=32"]  # the profile's, the user's
    lowered, note = within_evaluator_capacity(given, 8)
    assert lowered == ["a=1", f"+{REWARD_IN_FLIGHT}=8", "b=2", f"{REWARD_IN_FLIGHT}=8"]
    assert "8, not 32" in note
    assert within_evaluator_capacity(given, 32) == (given, None)
    assert within_evaluator_capacity(["a=1"], 8) == (["a=1"], None)


def test_dry_run_lowers_reward_concurrency_to_the_evaluator_s_capacity(tmp_path):
    """The learning check's evaluator (configs/evaluator.yaml's 2 replicas x 4 sandboxes) runs 8
    scores at once, not common.yaml's 64 (there, right programs waiting in the evaluator behind slow
    ones timed out); the reference's 80 single-request replicas take all 64."""
    plan = dry_run("learning_check")
    assert override_value(plan["command"][3:], "reward.reward_kwargs.cobalt.max_in_flight") == "8"
    assert plan["notes"] == [
        "reward scores in flight: 8, not 64: the evaluator runs 8 requests at once, and a call "
        "waiting in it would count against the reward's call timeout"
    ]
    paper = tmp_path / "paper_evaluator.yaml"
    paper.write_text(
        f"extends: {config_dir() / 'train' / 'multi_turn_qwen3_8b.yaml'}\nevaluator_config: evaluator_paper\n"
    )
    plan = dry_run(str(paper))
    assert override_value(plan["command"][3:], "reward.reward_kwargs.cobalt.max_in_flight") == "64"
    assert plan["notes"] == []


def test_the_shells_own_verl_plugins_are_added_to_the_profiles():
    from cobalt.train.profile import PLUGIN_MODULES, with_shell_plugins

    profile = load_profile("cpu_smoke")
    own = profile.env[PLUGIN_MODULES]
    shell = {PLUGIN_MODULES: f"my_estimators, {own}"}
    assert with_shell_plugins(profile, shell).env[PLUGIN_MODULES] == f"{own},my_estimators"
    assert with_shell_plugins(profile, {}).env == profile.env  # nothing of the shell's: unchanged
    assert profile.env[PLUGIN_MODULES] == own  # the loaded profile itself is left alone


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
from cobalt.train.profile import load_profile, hydra_overrides
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
    managers = {
        "cobalt": "CobaltRewardManager",
        "grpo_mt": "OnlineRewardManager",
        "verpo_mt": "VerpoRewardManager",
    }
    assert {name: manager for name, (manager, _) in result.items()} == {
        name: managers[load_profile(name).method] for name in PROFILES
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


# the online baselines' paper profiles keep every setting of COBALT's run but these (docs/training.md,
# "The online baselines"): the paper's 8 GPUs. Each turn is one row of COBALT's lengths
ONLINE_CHANGES = {"4 GPUs (trainer.n_gpus_per_node)": ("8", 4)}
LENGTHS = ("data.max_prompt_length", "data.max_response_length", "actor_rollout_ref.rollout.max_model_len")


@pytest.mark.parametrize(
    "profile, method, manager",
    [
        ("grpo_mt_qwen3_8b", "grpo_mt", "OnlineRewardManager"),
        ("verpo_mt_qwen3_8b", "verpo_mt", "VerpoRewardManager"),
    ],
)
def test_online_paper_profiles_differ_from_cobalt_s_only_in_rollout_and_reward(profile, method, manager):
    column = 2  # the multi-turn run's settings
    # VeRPO's reward comes as per-turn advantages, in place of GRPO's
    verpo = {"GRPO (algorithm.adv_estimator)": ("verpo", "grpo")} if method == "verpo_mt" else {}
    assert differences_from_section_9(profile, column) == ONLINE_CHANGES | verpo
    loaded = load_profile(profile)
    assert loaded.method == method
    assert loaded.overrides["reward.reward_manager.name"] == manager
    cobalt = load_profile("multi_turn_qwen3_8b")
    assert [loaded.overrides.get(key) for key in LENGTHS] == [cobalt.overrides.get(key) for key in LENGTHS]
    # the paper's models think: the history keeps each answer after </think>, as COBALT's does
    assert loaded.overrides["actor_rollout_ref.rollout.agent.agent_loop_config_path"].endswith(
        "code_repair_thinking.yaml"
    )
    env = dry_run(profile)["env"]
    assert {k: env.get(k) for k in PAPER_ENV} == PAPER_ENV


def test_a_profile_of_another_method_or_an_unknown_method_is_refused(tmp_path):
    from cobalt.train.profile import check_method

    assert check_method("grpo_mt", "grpo_mt_cpu") == "grpo_mt"
    with pytest.raises(ConfigError, match=r"trains method cobalt, not verpo_mt.*verpo_mt_qwen3_8b"):
        check_method("verpo_mt", "multi_turn_qwen3_8b")
    with pytest.raises(ConfigError, match="expected one of cobalt, grpo_mt, verpo_mt"):
        check_method("ppo", "multi_turn_qwen3_8b")
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: grpo\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: method 'grpo'"):
        load_profile(str(bad))


@pytest.mark.parametrize("method", ["grpo_mt", "verpo_mt"])
def test_online_r1_distill_profiles_are_the_qwen3_ones_with_the_other_model(method):
    qwen, llama = load_profile(f"{method}_qwen3_8b"), load_profile(f"{method}_r1_distill_llama_8b")
    own = ("actor_rollout_ref.model.path", "trainer.experiment_name", "trainer.default_local_dir")
    assert llama.method == method
    assert {k: v for k, v in llama.overrides.items() if k not in own} == {
        k: v for k, v in qwen.overrides.items() if k not in own
    }
    assert llama.overrides["actor_rollout_ref.model.path"] == "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"
