"""``launch --rehearse``: what a CPU rehearsal of a GPU profile keeps and changes, and that veRL
rejects a profile's numbers in a rehearsal before any rollout, as it would on the GPUs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from cobalt.common.config import config_dir
from cobalt.common.errors import ConfigError
from cobalt.train import rehearsal
from cobalt.train.profile import format_value, load_profile
from cobalt.train.rehearsal import describe, model_family, plan, ranks_that_fit, tile_prompts

ROOT = Path(__file__).resolve().parents[1]
PAPER_PROFILES = ["multi_turn_qwen3_8b", "multi_turn_r1_distill_llama_8b", "single_turn_r1_distill_llama_8b"]
# what a rehearsal exists to check: none of it may differ from the profile
TOPOLOGY_KEYS = [
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "data.train_batch_size",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.use_dynamic_bsz",
    "actor_rollout_ref.actor.fsdp_config.param_offload",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload",
    "actor_rollout_ref.ref.fsdp_config.param_offload",
    "actor_rollout_ref.model.enable_gradient_checkpointing",
    "actor_rollout_ref.model.use_remove_padding",
]


@pytest.fixture(autouse=True)
def many_cores(monkeypatch):
    """A machine whose cores hold every rank: the tests below are about memory and the profile's
    numbers (the cores' cap has its own tests)."""
    monkeypatch.setattr(rehearsal, "machine_cores", lambda: 64)


def test_the_rehearsal_overlay_changes_no_topology_or_batch_key():
    overlay = yaml.safe_load((config_dir() / "rehearsal.yaml").read_text())["overrides"]
    touched = {key.lstrip("+") for key in overlay} & set(TOPOLOGY_KEYS)
    assert not touched, f"configs/rehearsal.yaml must not change {sorted(touched)}"


@pytest.mark.parametrize("name", PAPER_PROFILES)
def test_a_rehearsal_keeps_every_profile_key_it_does_not_list_as_changed(name):
    profile = load_profile(name)
    staged = plan(profile)
    changed = {key for key, _, _ in staged.changes}
    for key, value in profile.overrides.items():
        if key not in changed:
            assert staged.profile.overrides[key] == value, key
    for key in TOPOLOGY_KEYS:
        if key in profile.overrides:
            assert (key, format_value(profile.overrides[key])) in staged.kept
    assert profile.overrides["trainer.n_gpus_per_node"] == 4
    lines = []
    describe(staged, lines.append)
    expected = f"  changed data.max_response_length: {profile.overrides['data.max_response_length']} -> 32"
    assert expected in lines
    assert "  kept    trainer.n_gpus_per_node: 4" in lines
    assert (
        staged.profile.overrides["trainer.device"] == "cpu" and staged.profile.env["VERL_PLATFORM"] == "cpu"
    )


def test_the_model_family_comes_from_the_hub_name_or_the_local_config(tmp_path):
    assert model_family("Qwen/Qwen3-8B") == "qwen3"
    assert model_family("deepseek-ai/DeepSeek-R1-Distill-Llama-8B") == "llama"
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert model_family(str(tmp_path)) == "llama"
    with pytest.raises(ConfigError, match=r"actor_rollout_ref\.model\.path=google/gemma-2b.*qwen3"):
        model_family("google/gemma-2b")


def test_rehearsal_prompts_are_the_prompts_that_fit_repeated_to_the_rows_asked(tmp_path):
    from cobalt.data.tokens import build_tiny_tokenizer

    build_tiny_tokenizer(tmp_path / "tok")
    prompts = [[{"role": "user", "content": "x " * n}] for n in (3, 5, 2000)]
    pd.DataFrame({"prompt": prompts, "idx": [0, 1, 2]}).to_parquet(tmp_path / "src.parquet")
    rows = tile_prompts(tmp_path / "src.parquet", tmp_path / "tok", 64, 7, tmp_path / "out" / "train.parquet")
    tiled = pd.read_parquet(tmp_path / "out" / "train.parquet")
    assert rows == 7 and tiled["idx"].tolist() == [0, 1, 0, 1, 0, 1, 0]
    with pytest.raises(ConfigError, match=r"no prompt fits data\.max_prompt_length=2"):
        tile_prompts(tmp_path / "src.parquet", tmp_path / "tok", 2, 7, tmp_path / "none.parquet")


def test_a_tiny_model_an_older_rehearsal_built_in_another_shape_is_rebuilt_with_its_prompts(
    tmp_path, monkeypatch
):
    """Regression: the model was built only when missing, so a user who had rehearsed before
    configs/rehearsal.yaml changed kept stepping the old, slower model."""
    from cobalt.train.profile import hydra_overrides, override_value
    from cobalt.train.tiny_policy import WarmUpOptions, built_shape, random_policy

    monkeypatch.chdir(tmp_path)
    staged = plan(load_profile("multi_turn_qwen3_8b"))
    overrides = hydra_overrides(staged.profile)
    model = Path(override_value(overrides, "actor_rollout_ref.model.path"))
    tiled = Path(override_value(overrides, "data.train_files"))
    rehearsal.prepare(staged, overrides, log=lambda line: None)  # the demo data, model and prompts
    asked = (staged.family, staged.model.hidden_size, staged.model.layers)
    assert built_shape(model) == asked and tiled.exists()
    older = WarmUpOptions(hidden_size=2 * staged.model.hidden_size, layers=staged.model.layers + 1)
    random_policy(model, older, staged.family, data=tmp_path / "data/rehearsal/demo/train.parquet")
    tiled.write_bytes(b"tiled with the older tokenizer")
    logged: list[str] = []
    rehearsal.prepare(staged, overrides, log=logged.append)
    assert built_shape(model) == asked
    assert len(pd.read_parquet(tiled)) > 0  # tiled again: the planted bytes are no parquet
    assert any("rebuilding it and the prompts tiled with its tokenizer" in line for line in logged), logged


def test_a_stale_tiny_model_never_removes_a_prompt_file_the_user_named(tmp_path, monkeypatch):
    from cobalt.train.tiny_policy import WarmUpOptions, random_policy

    monkeypatch.chdir(tmp_path)
    staged = plan(load_profile("multi_turn_qwen3_8b"))
    model = Path(staged.profile.overrides["actor_rollout_ref.model.path"])
    random_policy(model, WarmUpOptions(hidden_size=64, layers=2), staged.family)
    mine = tmp_path / "my_prompts.parquet"
    pd.DataFrame({"prompt": [[{"role": "user", "content": "hi"}]], "idx": [0]}).to_parquet(mine)
    rehearsal.drop_stale_model(model, staged, mine, log=lambda line: None)
    assert not model.exists() and mine.exists()


@pytest.mark.slow
@pytest.mark.train
def test_a_rehearsal_fails_before_any_rollout_when_verl_rejects_the_numbers(tmp_path):
    """Three ranks cannot split the profile's 128 x 16 responses evenly: veRL's config check
    refuses it, in the rehearsal as on the GPUs, before any worker or rollout starts."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts/train_grpo_multi_turn.sh"),
            "--profile",
            "multi_turn_qwen3_8b",
            "--rehearse",
            "trainer.n_gpus_per_node=3",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-3000:]
    assert "real_train_batch_size (2048) must be divisible by minimal possible batch size (3)" in output
    assert "WorkerDict" not in output and "vLLM" not in output, "a worker started before the check"
    assert not list(tmp_path.glob("checkpoints/rehearsal/*/*/global_step_*"))


def test_a_rehearsals_paths_are_absolute_for_workers_started_elsewhere(tmp_path, monkeypatch):
    """Regression: joined to a cluster whose head started in another directory (the paper chain's),
    veRL's workers read `data/rehearsal/<profile>/policy` relative to their own directory and the
    rehearsal failed with `Repo id must be in the form 'repo_name'`."""
    from pathlib import Path

    from cobalt.train.profile import load_profile
    from cobalt.train.rehearsal import PATH_KEYS

    monkeypatch.chdir(tmp_path)
    overrides = plan(load_profile("multi_turn_qwen3_8b")).profile.overrides
    for key in PATH_KEYS:
        assert Path(overrides[key]).is_absolute() and str(overrides[key]).startswith(str(tmp_path)), key


@pytest.mark.parametrize("name", ["grpo_mt_qwen3_8b", "verpo_mt_r1_distill_llama_8b"])
def test_an_online_profile_rehearses_on_its_own_rows_at_its_8_ranks_with_the_thinking_loop(name, monkeypatch):
    """The rehearsal's prompts are the demo problems as online rows (bandit prompts would reach a
    loop they are not for); its reward workers are the rehearsal's 2 (VeRPO-MT's sessions need not
    meet in one); the paper's models think, so the loop keeps each answer after </think>."""
    monkeypatch.setattr(rehearsal, "machine_memory_gib", lambda: 64.0)
    staged = plan(load_profile(name))
    assert staged.prompts.parts[-2:] == ("online", "train.parquet")
    assert ("trainer.n_gpus_per_node", "8") in staged.kept
    assert staged.profile.overrides["reward.num_workers"] == 2
    assert staged.profile.overrides["actor_rollout_ref.rollout.agent.agent_loop_config_path"].endswith(
        "code_repair_thinking.yaml"
    )


@pytest.mark.parametrize(
    "ranks, memory, fit", [(8, 64, 8), (8, 48, 8), (8, 24, 4), (8, 14, 2), (6, 24, 3), (8, 3, 1), (4, 24, 4)]
)
def test_the_step_runs_on_the_most_ranks_memory_holds_as_a_divisor_of_the_profiles(ranks, memory, fit):
    assert ranks_that_fit(ranks, memory, per_rank_gib=5) == fit


@pytest.mark.parametrize(
    "ranks, memory, cores, fit",
    [(4, 24, 2, 2), (8, 64, 2, 2), (8, 64, 1, 2), (8, 8, 1, 1), (6, 64, 4, 3), (4, 24, 16, 4), (1, 24, 2, 1)],
)
def test_the_step_runs_on_no_more_ranks_than_cores_but_on_two_where_memory_holds_them(
    ranks, memory, cores, fit
):
    assert ranks_that_fit(ranks, memory, per_rank_gib=5, cores=cores) == fit


def test_a_4_gpu_profile_on_2_cores_steps_on_2_ranks_after_verl_checks_its_numbers_at_4(monkeypatch):
    """Each rank and its rollout replica is a process of its own: on 2 cores, 4 of each only
    time-slice. The step runs on 2; veRL still judges the profile's numbers at its 4 ranks."""
    from cobalt.train.launch import hydra_overrides

    monkeypatch.setattr(rehearsal, "machine_memory_gib", lambda: 24.0)
    monkeypatch.setattr(rehearsal, "machine_cores", lambda: 2)
    staged = plan(load_profile("multi_turn_qwen3_8b"))
    assert (staged.layout, staged.ranks) == ((4, 1), 2)
    assert ("trainer.n_gpus_per_node", "4", "2") in staged.changes
    lines = []
    assert rehearsal.check_full_world(staged, hydra_overrides(staged.profile, None, []), lines.append) is None
    assert "accepts the profile's numbers at its 4 ranks; the step runs on 2" in lines[0]
    assert "2 cores, one rank per core" in lines[0]
    assert "share of the batch: data.train_batch_size 128 -> 64" in lines[1]


def responses_per_rank_per_mini_batch(overrides: dict) -> float:
    ranks = int(overrides["trainer.n_gpus_per_node"]) * int(overrides.get("trainer.nnodes", 1))
    mini = int(overrides["actor_rollout_ref.actor.ppo_mini_batch_size"])
    return mini * int(overrides["actor_rollout_ref.rollout.n"]) / ranks


def mini_batches_per_step(overrides: dict) -> int:
    return int(overrides["data.train_batch_size"]) // int(
        overrides["actor_rollout_ref.actor.ppo_mini_batch_size"]
    )


@pytest.mark.parametrize("name", ["multi_turn_qwen3_8b", "grpo_mt_qwen3_8b"])
def test_fewer_ranks_step_on_a_gpu_ranks_share_of_the_batch_in_as_many_mini_batches(name, monkeypatch):
    """A step on fewer ranks than the profile's (2 here, of 4 and of 8) cuts the batch in
    proportion, so each rank rolls out and updates on exactly what a GPU rank would, in the same
    number of mini-batches."""
    monkeypatch.setattr(rehearsal, "machine_memory_gib", lambda: 24.0)
    monkeypatch.setattr(rehearsal, "machine_cores", lambda: 2)
    profile = load_profile(name)
    staged = plan(profile)
    gpu, step = profile.overrides, staged.profile.overrides
    fewer = staged.layout[0] * staged.layout[1] // staged.ranks
    assert staged.ranks == 2 and fewer in (2, 4)
    assert responses_per_rank_per_mini_batch(step) == responses_per_rank_per_mini_batch(gpu)
    assert mini_batches_per_step(step) == mini_batches_per_step(gpu)
    for key in rehearsal.BATCH_KEYS:
        assert (key, str(gpu[key]), str(int(gpu[key]) // fewer)) in staged.changes


def test_the_full_world_check_judges_the_profiles_batch_not_the_share(monkeypatch):
    from cobalt.train.launch import hydra_overrides

    monkeypatch.setattr(rehearsal, "machine_memory_gib", lambda: 24.0)
    monkeypatch.setattr(rehearsal, "machine_cores", lambda: 2)
    judged = []
    monkeypatch.setattr(rehearsal, "verl_batch_error", lambda overrides: judged.append(overrides))
    staged = plan(load_profile("multi_turn_qwen3_8b"))
    rehearsal.check_full_world(staged, hydra_overrides(staged.profile, None, []), lambda line: None)
    last = {item.split("=", 1)[0]: item.split("=", 1)[1] for item in judged[0]}
    assert (
        last["data.train_batch_size"] == "128" and last["actor_rollout_ref.actor.ppo_mini_batch_size"] == "64"
    )
    assert last["trainer.n_gpus_per_node"] == "4"


def test_a_world_size_or_batch_the_user_gives_is_never_cut(monkeypatch):
    monkeypatch.setattr(rehearsal, "machine_memory_gib", lambda: 24.0)
    monkeypatch.setattr(rehearsal, "machine_cores", lambda: 2)
    profile = load_profile("multi_turn_qwen3_8b")
    for extra in (["trainer.n_gpus_per_node=3"], ["data.train_batch_size=256"]):
        staged = plan(profile, extra)
        assert staged.batch_share == {}
        assert staged.profile.overrides["data.train_batch_size"] == profile.overrides["data.train_batch_size"]


def test_a_batch_that_does_not_divide_among_fewer_ranks_is_kept_whole():
    batch = {"data.train_batch_size": 6, "actor_rollout_ref.actor.ppo_mini_batch_size": 3}
    assert rehearsal.ranks_share(batch, 4) == {}
    assert rehearsal.ranks_share(batch, 3) == {
        "data.train_batch_size": (6, 2),
        "actor_rollout_ref.actor.ppo_mini_batch_size": (3, 1),
    }


def test_an_8_gpu_profile_on_24_gib_rehearses_on_4_ranks_after_verl_checks_its_numbers_at_8(monkeypatch):
    """8 FSDP ranks and 8 rollout replicas were killed by Ray's memory monitor on 23 GiB: the step
    runs on 4, and veRL's validate_config still judges the profile's numbers at its 8 ranks."""
    from cobalt.train.launch import hydra_overrides
    from cobalt.train.profile import override

    monkeypatch.setattr(rehearsal, "machine_memory_gib", lambda: 24.0)
    staged = plan(load_profile("grpo_mt_qwen3_8b"))
    assert (staged.layout, staged.ranks) == ((8, 1), 4)
    assert ("trainer.n_gpus_per_node", "8", "4") in staged.changes
    overrides = hydra_overrides(staged.profile, None, [])
    lines = []
    assert rehearsal.check_full_world(staged, overrides, lines.append) is None
    assert "accepts the profile's numbers at its 8 ranks; the step runs on 4" in lines[0]
    # 3 prompts x 16 episodes cannot feed mini-batches of 64 prompts: refused at the full world
    refused = rehearsal.check_full_world(staged, [*overrides, override("data.train_batch_size", 3)])
    assert refused and "train_batch_size (3) must be >= actor.ppo_mini_batch_size (64)" in refused
