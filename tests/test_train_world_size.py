"""Issue 19, item 4: the first GRPO policy update gives the same numbers with 1 and with 2 ranks.

One fixed batch (prompts, responses, old and reference log-probs, GRPO advantages: given, nothing
sampled) goes through veRL 0.9.1's own actor update -- ``ActorRolloutRefWorker.update_actor``,
i.e. ``TrainingWorker.train_mini_batch`` → ``FSDPEngineWithLMHead.train_batch`` (FSDP2
``fully_shard``, ``ppo_loss`` with the profile's clip ratios and KL loss, backward, grad-norm clip,
AdamW step) -- once on one rank and once split over two ranks of a ``gloo`` process group on
loopback. The actor configuration is veRL's ``ppo_trainer`` composed with the ``cpu_smoke``
profile's overrides, and every rank runs with the profile's environment (``VERL_PLATFORM=cpu``:
the CPU platform plugin and its patches, exactly as a CPU training run uses them).

The loss veRL reports (averaged over ranks), the gradient norm and the gradient of every parameter
must agree within float32 tolerance. The gradients are read from AdamW's first moment after the step,
``exp_avg = (1 - beta1) * g`` with ``g`` the clipped gradient: the parameters themselves move by
about ``lr * sign(g)`` on a first Adam step, blind to the gradient's magnitude. (veRL 0.9.1 has no
``DataParallelPPOActor`` any more; its trainer updates the actor through the engine worker used
here.)

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


def step_gradients(engine) -> dict:
    """The clipped gradient each parameter was stepped with, from AdamW's first moment after its
    first step, gathered whole (a collective: all ranks call it)."""
    from torch.distributed.tensor import DTensor

    beta1 = engine.optimizer.defaults["betas"][0]
    out = {}
    for name, param in engine.module.named_parameters():
        moment = engine.optimizer.state[param]["exp_avg"]
        moment = moment.full_tensor() if isinstance(moment, DTensor) else moment
        out[name] = moment.detach() / (1 - beta1)
    return out


FAULTS = ("none", "local_reduce_scatter", "same_rows", "scaled_after_norm")


def break_on_purpose(fault: str, engine) -> None:
    """A deliberate fault, to show the comparison catches it (never used by a real run)."""
    import torch.distributed as dist

    if fault == "local_reduce_scatter":  # FSDP2's gradient reduce-scatter without communication:
        # each rank keeps its own chunk of its own gradient, as if it were alone

        def local_only(output, input, op=None, group=None, async_op=False):
            rank = dist.get_rank(group)
            output.copy_(input.view(-1)[rank * output.numel() : (rank + 1) * output.numel()])

        dist.reduce_scatter_single = local_only  # what FSDP2's reduce-scatter calls (torch 2.13)
    elif fault == "scaled_after_norm":  # gradients 2 % too large where the grad norm cannot see it,
        # nor the parameters: Adam's first step moves each by about lr * sign(g)
        step = engine.optimizer.step

        def scaled_step(*args, **kwargs):
            for param in engine.module.parameters():
                if param.grad is not None:
                    param.grad.mul_(1.02)
            return step(*args, **kwargs)

        engine.optimizer.step = scaled_step


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
    break_on_purpose(fault, engine)

    td = update_input(config, fixed_batch())
    # the split veRL's dispatcher makes (a locked view here; a Ray worker receives a copy)
    shards = BatchData(td).chunk(chunks=world_size)
    shard = shards[0 if fault == "same_rows" else rank].unlock_()
    started = time.monotonic()
    output = worker.update_actor(shard)
    seconds = time.monotonic() - started
    gradients = step_gradients(engine)
    if rank == 0:
        torch.save(
            {
                "world_size": dist.get_world_size(),
                "backend": dist.get_backend(),
                "fsdp": [type(m).__name__ for m in engine.module.modules() if "FSDP" in type(m).__name__],
                "rows": int(shard.batch_size[0]),
                "metrics": json.loads(json.dumps(output["metrics"], default=float)),
                "gradients": gradients,
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
# A gradient entry is such a sum too, but its rounding is relative to the size of its terms, not
# to the entry: one that nearly cancels to 0 has no relative precision at all. So each parameter's
# gradient is compared relative to its largest entry: measured 4e-7 at most; GRAD_RTOL = 1e-5,
# while the faults below change gradients by 2 % to 100 %.
GRAD_RTOL = 1.0e-5


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
    """Loss as veRL reports it, grad norm, and each parameter's largest gradient difference
    relative to its largest gradient entry (the worst of them)."""
    diffs = {}
    for name, grad in one["gradients"].items():
        scale = grad.abs().max().item()
        diffs[name] = (two["gradients"][name] - grad).abs().max().item() / scale if scale else float("inf")
    return {
        "loss": (one["metrics"]["loss"], two["metrics"]["loss"]),
        "grad_norm": (one["metrics"]["grad_norm"], two["metrics"]["grad_norm"]),
        "pg_loss": (one["metrics"]["actor/pg_loss"], two["metrics"]["actor/pg_loss"]),
        "max_grad_diff": max(diffs.values()),
        "worst_param": max(diffs, key=diffs.get),
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
    assert found["max_grad_diff"] <= GRAD_RTOL, found["worst_param"]


@pytest.mark.parametrize("fault", FAULTS[1:])
def test_the_gradients_show_a_wrong_reduction_split_or_magnitude(one_rank, tmp_path, fault):
    model_dir, one = one_rank
    two = run_world(model_dir, 2, tmp_path / f"{fault}.pt", fault=fault)
    found = compare(one, two)
    print(fault, json.dumps(found))
    assert found["max_grad_diff"] > 100 * GRAD_RTOL


if __name__ == "__main__":
    run_rank(Path(sys.argv[1]), Path(sys.argv[2]), *sys.argv[3:])
