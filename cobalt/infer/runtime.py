"""Where an inference job runs: a Ray cluster, the evaluator app and the model.

Without ``address`` a job starts a private loopback Ray head with the evaluator app (and, for
``--engine serve``, the vLLM engine app) and stops exactly what it started; with ``address`` it
joins that cluster and reuses apps already deployed there. ``--engine litellm`` talks to any
endpoint LiteLLM supports instead of a local engine; ``--evaluator local`` runs the sandbox in
this process (no Ray at all when the engine is not on Serve either).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

from cobalt.common.errors import ConfigError
from cobalt.infer.llm import ChatModel

log = logging.getLogger("cobalt.infer")


@dataclass(frozen=True)
class EngineSpec:
    kind: str  # "serve": vLLM on Ray Serve; "litellm": any LiteLLM endpoint
    model: str  # a model directory / hub id (serve) or a LiteLLM model name (litellm)
    api_base: str | None = None
    api_key: str | None = None
    config: str = "engine"  # configs/<name>.yaml for the Serve engine
    enable_thinking: bool | None = None  # None: leave the chat template's default


@dataclass
class Runtime:
    evaluator: object  # cobalt.serve.client.Evaluator
    model: ChatModel | None = None
    address: str | None = None


def _chat_template_kwargs(spec: EngineSpec) -> dict:
    """vLLM reads ``chat_template_kwargs`` (Qwen3's ``enable_thinking``) from the request body."""
    if spec.enable_thinking is None:
        return {}
    return {"chat_template_kwargs": {"enable_thinking": spec.enable_thinking}}


def serve_model(spec: EngineSpec) -> ChatModel:
    """Deploy (or reuse) the engine app serving ``spec.model`` on the connected cluster."""
    from cobalt.serve.cluster import free_port
    from cobalt.serve.engine import load_engine_config, served_model_id, start_engine_app

    cfg = load_engine_config(spec.config)
    api_base = start_engine_app(spec.model, cfg, port=free_port())
    return ChatModel(
        f"openai/{served_model_id(spec.model, cfg)}", api_base, extra_body=_chat_template_kwargs(spec)
    )


def _litellm_model(spec: EngineSpec) -> ChatModel:
    return ChatModel(spec.model, spec.api_base, spec.api_key, extra_body=_chat_template_kwargs(spec))


def serve_evaluator(config_name: str | None):
    """Deploy (or reuse) the evaluator app on the connected cluster; return its client."""
    from ray import serve

    from cobalt.serve.client import get_evaluator
    from cobalt.serve.evaluator import load_evaluator_config, start_evaluator_app

    _, opts = load_evaluator_config(config_name)
    if opts.app_name in serve.status().applications:
        log.info("reusing the evaluator app %r already on the cluster", opts.app_name)
    else:
        log.info("deploying the evaluator app %r", opts.app_name)
        start_evaluator_app(config_name)
    return get_evaluator("serve", deployment_name=opts.deployment_name, app_name=opts.app_name)


def _disconnect() -> None:
    import ray

    ray.shutdown()


def private_head_gpus(address: str | None, override: int | None) -> tuple[int, str | None]:
    """GPUs of the private head a job would start, and why; ``(0, None)`` when it joins a cluster
    (``address`` or ``$RAY_ADDRESS``) and starts no head."""
    if address or os.environ.get("RAY_ADDRESS"):
        return 0, None
    from cobalt.serve.cluster import head_gpus

    return head_gpus(override, cpu_platform=False)


@contextlib.contextmanager
def open_runtime(
    *,
    engine: EngineSpec | None,
    evaluator: str = "serve",
    evaluator_config: str | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    num_gpus: int | None = None,
) -> Iterator[Runtime]:
    """The evaluator (and model) a job uses; everything it started is stopped on exit. A private
    head offers ``num_gpus`` GPUs (``--num-gpus``), by default the GPUs detected on this machine,
    so ``--engine-config engine_paper`` can place its vLLM replicas."""
    if evaluator not in ("serve", "local"):
        raise ConfigError(f"unknown evaluator {evaluator!r}: expected 'serve' or 'local'")
    if engine is not None and engine.kind not in ("serve", "litellm"):
        raise ConfigError(f"unknown engine {engine.kind!r}: expected 'serve' or 'litellm'")
    needs_ray = evaluator == "serve" or (engine is not None and engine.kind == "serve")
    with contextlib.ExitStack() as stack:
        if needs_ray:
            from cobalt.serve.cluster import connect, ray_cluster

            gpus, why = private_head_gpus(address, num_gpus)
            address = stack.enter_context(
                ray_cluster(address, num_cpus=num_cpus, num_gpus=gpus, gpus_why=why, log=log.info)
            )
            connect(address)
            stack.callback(_disconnect)
        model = None
        if engine is not None:  # the engine first: it starts Serve's HTTP proxy on loopback
            model = serve_model(engine) if engine.kind == "serve" else _litellm_model(engine)
        if evaluator == "serve":
            evaluator_client = serve_evaluator(evaluator_config)
        else:
            from cobalt.serve.client import get_evaluator

            evaluator_client = get_evaluator("local")
        yield Runtime(evaluator=evaluator_client, model=model, address=address)
