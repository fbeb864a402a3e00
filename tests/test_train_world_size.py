"""Issue 19, item 4: the first GRPO policy update gives the same numbers with 1 and with 2 ranks.

One fixed batch (prompts, responses, old and reference log-probs, GRPO advantages: given, nothing
sampled) goes through veRL 0.9.1's own actor update -- ``ActorRolloutRefWorker.update_actor``,
i.e. ``TrainingWorker.train_mini_batch`` → ``FSDPEngineWithLMHead.train_batch`` (FSDP2
``fully_shard``, ``ppo_loss`` with the profile's clip ratios and KL loss, backward, grad-norm clip,
AdamW step) -- once on one rank and once split over two ranks of a ``gloo`` process group on
loopback. The actor configuration is veRL's ``ppo_trainer`` composed with the ``cpu_smoke``
profile's overrides, and every rank runs with the profile's environment (``VERL_PLATFORM=cpu``:
the CPU platform plugin and its patches, exactly as a CPU training run uses them).

The loss veRL reports (averaged over ranks), the gradient norm and every updated parameter must
agree within float32 tolerance. (veRL 0.9.1 has no ``DataParallelPPOActor`` any more; its trainer
updates the actor through the engine worker used here.)

Each rank is a fresh interpreter running this file (veRL picks its platform once per process).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("verl")
pytestmark = pytest.mark.train

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "cpu_smoke"
PROMPTS, N = 2, 4  # GRPO groups x responses per prompt: a global batch of 8 sequences
PROMPT_LEN, RESPONSE_LEN = 12, 10


# --------------------------------------------------------------------------------------------------
# One rank (run as a script)
# --------------------------------------------------------------------------------------------------


def build_tiny_model(out: Path) -> None:
    """A random tiny Qwen3 (the family of the paper's multi_turn_qwen3_8b profile) and a small
    offline tokenizer, saved as a Hugging Face directory."""
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from cobalt.data.tokens import build_tiny_tokenizer

    build_tiny_tokenizer(out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    config = Qwen3Config(
        vocab_size=(len(tokenizer) + 63) // 64 * 64,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=512,
        tie_word_embeddings=False,  # as Qwen3-8B
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(out, safe_serialization=True)


def actor_config(model_dir: Path, world_size: int):
    """veRL's ppo_trainer config with the profile's overrides, then this test's sizes."""
    from hydra import compose, initialize_config_dir
    from verl.trainer import main_ppo

    from cobalt.train.profile import hydra_overrides, load_profile

    overrides = hydra_overrides(load_profile(PROFILE)) + [
        f"actor_rollout_ref.model.path={model_dir}",
        f"trainer.n_gpus_per_node={world_size}",
        f"actor_rollout_ref.rollout.n={N}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={PROMPTS}",  # one mini-batch: one optimizer step
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",  # gradient accumulation on each rank
        "actor_rollout_ref.actor.ppo_epochs=1",
        "actor_rollout_ref.actor.shuffle=false",
        "actor_rollout_ref.actor.optim.total_training_steps=1",
    ]
    config_dir = Path(main_ppo.__file__).parent / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides).actor_rollout_ref


def fixed_batch():
    """The global batch as veRL's trainer hands it to update_actor: left-padded prompts,
    right-padded responses, old/ref log-probs and GRPO advantages from fixed scores."""
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    g = torch.Generator().manual_seed(1234)
    batch = PROMPTS * N
    prompt_lens = torch.randint(4, PROMPT_LEN + 1, (PROMPTS,), generator=g).repeat_interleave(N)
    response_lens = torch.randint(3, RESPONSE_LEN + 1, (batch,), generator=g)
    prompt_ids = torch.randint(10, 300, (PROMPTS, PROMPT_LEN), generator=g).repeat_interleave(N, dim=0)
    responses = torch.randint(10, 300, (batch, RESPONSE_LEN), generator=g)
    prompt_mask = (torch.arange(PROMPT_LEN) >= PROMPT_LEN - prompt_lens[:, None]).long()  # left padding
    response_mask = (torch.arange(RESPONSE_LEN) < response_lens[:, None]).long()  # right padding
    prompt_ids = prompt_ids * prompt_mask
    responses = responses * response_mask
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)
    position_ids = (attention_mask.cumsum(dim=1) - 1).clamp(min=0) * attention_mask
    # log-probs of a sampler that was not exactly this policy: PPO ratios off 1, some clipped
    old_log_probs = (-5.5 + 0.5 * torch.randn(batch, RESPONSE_LEN, generator=g)) * response_mask
    ref_log_prob = (-5.5 + 0.5 * torch.randn(batch, RESPONSE_LEN, generator=g)) * response_mask
    scores = torch.tensor([1.0, -1.0, 0.3, -0.2, -1.0, 0.8, -0.6, 0.1])
    token_level_rewards = torch.zeros(batch, RESPONSE_LEN)
    token_level_rewards[torch.arange(batch), response_lens - 1] = scores
    uid = np.repeat(np.array([f"prompt{i}" for i in range(PROMPTS)], dtype=object), N)
    advantages, _ = compute_grpo_outcome_advantage(token_level_rewards, response_mask.float(), uid)
    data = DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": responses,
            "input_ids": torch.cat([prompt_ids, responses], dim=1),
            "attention_mask": attention_mask,
            "position_ids": position_ids,
            "response_mask": response_mask,
            "old_log_probs": old_log_probs,
            "ref_log_prob": ref_log_prob,
            "advantages": advantages,
        },
        meta_info={"temperature": 1.0},
    )
    return data


def update_input(config, data):
    """What veRL's trainer does before update_actor (verl.trainer.ppo.ray_trainer._update_actor)."""
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.padding import left_right_2_no_padding

    td = left_right_2_no_padding(data.to_tensordict())
    mini_batch = config.actor.ppo_mini_batch_size * config.rollout.n
    tu.assign_non_tensor(
        td,
        calculate_entropy=config.actor.calculate_entropy or config.actor.entropy_coeff != 0.0,
        distillation_use_topk=False,
        distillation_only=False,
        global_batch_size=mini_batch,
        mini_batch_size=mini_batch,
        epochs=config.actor.ppo_epochs,
        seed=config.actor.data_loader_seed,
        dataloader_kwargs={"shuffle": config.actor.shuffle},
        compute_loss=True,
    )
    return td


def full_parameters(module) -> dict:
    """Every parameter gathered whole (a collective: all ranks call it)."""
    from torch.distributed.tensor import DTensor

    out = {}
    for name, param in module.named_parameters():
        tensor = param.data.full_tensor() if isinstance(param.data, DTensor) else param.data
        out[name] = tensor.detach().clone()
    return out


FAULTS = ("none", "dp_size_ignored", "same_rows")


def break_on_purpose(fault: str, worker) -> None:
    """A deliberate fault, to show the comparison catches it (never used by a real run)."""
    if fault == "dp_size_ignored":  # each rank's loss normalised as if it were alone: FSDP's
        # averaging over ranks then halves the gradient of the global token-mean loss
        from verl.utils import tensordict_utils as tu

        loss_fn = worker.actor.loss_fn

        def unscaled(model_output, data, dp_group=None):
            tu.assign_non_tensor(data, dp_size=1)
            return loss_fn(model_output=model_output, data=data, dp_group=dp_group)

        worker.actor.set_loss_fn(unscaled)


def run_rank(model_dir: Path, out: Path, fault: str = "none") -> None:
    import torch
    import torch.distributed as dist
    from verl.protocol import BatchData
    from verl.workers.engine_workers import ActorRolloutRefWorker

    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    config = actor_config(model_dir, world_size)
    worker = ActorRolloutRefWorker(config, role="actor")
    worker.init_model()  # joins the gloo process group, builds the FSDP2 actor and its optimizer
    engine = worker.actor.engine
    break_on_purpose(fault, worker)
    before = full_parameters(engine.module)

    td = update_input(config, fixed_batch())
    # the split veRL's dispatcher makes (a locked view here; a Ray worker receives a copy)
    shards = BatchData(td).chunk(chunks=world_size)
    shard = shards[0 if fault == "same_rows" else rank].unlock_()
    started = time.monotonic()
    output = worker.update_actor(shard)
    seconds = time.monotonic() - started
    after = full_parameters(engine.module)
    if rank == 0:
        torch.save(
            {
                "world_size": dist.get_world_size(),
                "backend": dist.get_backend(),
                "fsdp": [type(m).__name__ for m in engine.module.modules() if "FSDP" in type(m).__name__],
                "rows": int(shard.batch_size[0]),
                "metrics": json.loads(json.dumps(output["metrics"], default=float)),
                "before": before,
                "after": after,
                "update_seconds": seconds,
            },
            out,
        )
    dist.barrier()
    dist.destroy_process_group()


# --------------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------------

# float32 tolerances. With 1 rank and with 2 the same float32 sums are taken in another order
# (micro-batches of other rows, a gloo all-reduce of two partial sums, FSDP's reduce-scatter and
# averaging, the grad norm from two shards), so results differ by rounding: relative 1e-7 per
# operation (float32 eps 1.2e-7), growing slowly with the length of the sums (a few hundred terms
# here). RTOL = 1e-5 leaves ~100x room over that and is still far below what a real fault does (a
# wrong reduction or split changes them by tens of percent: the second test).
RTOL = 1.0e-5
# Parameters: AdamW's first step moves each weight by lr * g / (|g| + eps), about lr = 1e-4 (the
# profile's) wherever the gradient is not tiny. Where |g| is near eps (1e-8) rounding in g is
# amplified by up to lr / eps = 1e4 (rounding of ~1e-12 in such a gradient: ~1e-8 in the weight),
# while every moved weight moves by ~1e-4. PARAM_ATOL = 1e-6 is 1 % of a step.
PARAM_ATOL = 1.0e-6


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(model_dir: Path, world_size: int, out: Path, fault: str = "none", timeout: int = 300) -> dict:
    """Every rank as its own process, with the profile's environment; rank 0's results."""
    import torch

    from cobalt.train.profile import load_profile

    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_") and k != "RAY_ADDRESS"}
    env.update({k: str(v) for k, v in load_profile(PROFILE).env.items()})  # VERL_PLATFORM=cpu, ...
    env.update(
        HF_HUB_OFFLINE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 2) // world_size)),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(model_dir), str(out), fault],
            env=dict(env, RANK=str(rank), LOCAL_RANK="0"),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(world_size)
    ]
    logs = []
    try:
        for proc in procs:
            logs.append(proc.communicate(timeout=timeout)[0])
    finally:
        for proc in procs:  # a rank that hangs in a collective is ended, never left behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for rank, (proc, log) in enumerate(zip(procs, logs)):
        assert proc.returncode == 0, f"rank {rank} of {world_size}:\n{log[-4000:]}"
    return torch.load(out, weights_only=True)


def compare(one: dict, two: dict) -> dict:
    """Loss as veRL reports it, grad norm, and the largest parameter difference after the step."""
    diffs = {k: (one["after"][k] - two["after"][k]).abs().max().item() for k in one["after"]}
    moved = [(one["after"][k] - one["before"][k]).abs().max().item() for k in one["after"]]
    return {
        "loss": (one["metrics"]["loss"], two["metrics"]["loss"]),
        "grad_norm": (one["metrics"]["grad_norm"], two["metrics"]["grad_norm"]),
        "pg_loss": (one["metrics"]["actor/pg_loss"], two["metrics"]["actor/pg_loss"]),
        "max_param_diff": max(diffs.values()),
        "worst_param": max(diffs, key=diffs.get),
        "max_param_step": max(moved),
        "update_seconds": (one["update_seconds"], two["update_seconds"]),
    }


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("tiny_qwen3")
    build_tiny_model(model_dir)
    return model_dir, run_world(model_dir, 1, model_dir.parent / "one_rank.pt")


def test_first_update_is_the_same_on_one_and_two_ranks(one_rank, tmp_path):
    model_dir, one = one_rank
    two = run_world(model_dir, 2, tmp_path / "two_ranks.pt")
    found = compare(one, two)
    print(json.dumps(found))

    assert (one["world_size"], one["rows"]) == (1, 8) and (two["world_size"], two["rows"]) == (2, 4)
    assert two["backend"] == "gloo" and "FSDPQwen3ForCausalLM" in two["fsdp"]  # FSDP2 fully_shard
    (loss_1,), (loss_2,) = found["loss"]  # one mini-batch: one optimizer step
    (norm_1,), (norm_2,) = found["grad_norm"]
    assert loss_1 != 0 and norm_1 > 0  # a real signal, not an all-zero advantage batch
    assert loss_2 == pytest.approx(loss_1, rel=RTOL)
    assert norm_2 == pytest.approx(norm_1, rel=RTOL)
    assert found["pg_loss"][1] == pytest.approx(found["pg_loss"][0], rel=RTOL)
    assert found["max_param_step"] > 100 * PARAM_ATOL  # the step moved the weights
    assert found["max_param_diff"] <= PARAM_ATOL, found["worst_param"]


@pytest.mark.parametrize("fault", ["dp_size_ignored", "same_rows"])
def test_the_comparison_catches_a_wrong_reduction_or_split(one_rank, tmp_path, fault):
    model_dir, one = one_rank
    two = run_world(model_dir, 2, tmp_path / f"{fault}.pt", fault=fault)
    found = compare(one, two)
    print(fault, json.dumps(found))
    (loss_1,), (loss_2,) = found["loss"]
    (norm_1,), (norm_2,) = found["grad_norm"]
    agrees = (
        loss_2 == pytest.approx(loss_1, rel=RTOL)
        and norm_2 == pytest.approx(norm_1, rel=RTOL)
        and found["max_param_diff"] <= PARAM_ATOL
    )
    assert not agrees
    if fault == "dp_size_ignored":  # loss and gradient half of what they should be
        assert loss_2 == pytest.approx(0.5 * loss_1, rel=1e-3) and norm_2 == pytest.approx(
            0.5 * norm_1, rel=1e-3
        )


if __name__ == "__main__":
    run_rank(Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:])
