"""The policy's vLLM engine as a Ray Serve LLM application with an OpenAI-compatible route.

    serve run cobalt.serve.engine:app model=DIR [config=engine_paper]
    start_engine_app("/models/qwen3-8b")        # from Python, on the connected cluster

Ray Serve LLM (``LLMConfig`` + ``build_openai_app``) runs vLLM's async engine, so one replica
batches many requests continuously, and Serve routes and autoscales across replicas. Replicas,
tensor parallelism, context length and the rest come from ``configs/engine.yaml`` (CPU) or
``configs/engine_paper.yaml`` (GPU); ``$COBALT_ENGINE_CONFIG`` picks another file. Clients speak
OpenAI chat to ``http://<http_host>:<port>/v1`` through :class:`cobalt.infer.llm.ChatModel`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

# The base of LLMConfig.callback_config's classes (a public LLMConfig field; the base class itself
# has no public import path in Ray 2.60)
from ray.llm._internal.common.callbacks.base import CallbackBase

from cobalt.common.config import from_dict, load_config
from cobalt.common.errors import ConfigError
from cobalt.common.stale import warn_if_stale

log = logging.getLogger("cobalt.serve.engine")


class LocalModelDir(CallbackBase):
    """For a model already in a local directory: skip Ray Serve LLM's node initialisation, a task
    per node (in a fresh worker: ~28 s of imports on 2 cores) whose model download returns the
    local path unchanged. It would also create torch's kernel cache dir; done here instead."""

    async def on_before_node_init(self) -> None:
        import torch

        os.makedirs(os.path.join(torch.hub._get_torch_home(), "kernels"), exist_ok=True)
        self.ctx.run_init_node = False


@dataclasses.dataclass(frozen=True)
class EngineConfig:
    app_name: str = "engine"
    model_id: str = ""  # "" = the model directory's name
    http_host: str = "127.0.0.1"
    http_port: int = 0
    deploy_timeout_s: float = 900
    llm: dict = dataclasses.field(default_factory=dict)  # ray.serve.llm.LLMConfig fields


def load_engine_config(name: str | None = None) -> EngineConfig:
    name = name or os.environ.get("COBALT_ENGINE_CONFIG", "engine")
    return from_dict(EngineConfig, load_config(name), source=f"configs/{name}")


def served_model_id(model: str, cfg: EngineConfig) -> str:
    return cfg.model_id or Path(model.rstrip("/")).name


def _without_nulls(value):
    """A YAML ``null`` means "not set" (so a config that extends another can unset a key)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def _resolve_auto_threads(fields: dict) -> None:
    """``OMP_NUM_THREADS: auto`` in the replica's env becomes this machine's usable cores. Ray sets
    ``OMP_NUM_THREADS=1`` in every worker it starts unless told otherwise, and vLLM's CPU worker
    inherits it, leaving all but one core idle during the forward pass."""
    env = fields.get("runtime_env", {}).get("env_vars", {})
    if env.get("OMP_NUM_THREADS") == "auto":
        env["OMP_NUM_THREADS"] = str(len(os.sched_getaffinity(0)))


def cpu_computes_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX). Without it, torch emulates
    bfloat16 and a matrix product runs ~35x slower than in float32."""
    import torch

    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def _resolve_cpu_dtype(fields: dict) -> None:
    """``dtype: cpu_auto`` becomes bfloat16 where this CPU computes it natively, float32 elsewhere
    (SmolLM2 on 2 AMX cores, offline vLLM, 64 sequences: 350 tokens/s in bfloat16, 214 in float32).
    Resolved on the deploying machine, like ``OMP_NUM_THREADS: auto``: a CPU cluster's nodes are
    assumed alike."""
    engine = fields.get("engine_kwargs", {})
    if "dtype" in engine:
        engine["dtype"] = resolve_dtype(engine["dtype"])


def resolve_dtype(dtype: str) -> str:
    """``cpu_auto`` as this machine computes it best; any other dtype unchanged."""
    if dtype != "cpu_auto":
        return dtype
    return "bfloat16" if cpu_computes_bfloat16() else "float32"


def llm_config(model: str, cfg: EngineConfig):
    from ray.serve.llm import LLMConfig

    fields = _without_nulls(cfg.llm)
    _resolve_auto_threads(fields)
    _resolve_cpu_dtype(fields)
    if "model_loading_config" in fields:
        raise ConfigError("engine config: set the model with --model, not llm.model_loading_config")
    local = Path(model).is_dir()
    source = str(Path(model).resolve()) if local else model  # a local dir or a hub id
    if local and "callback_config" not in fields:
        warn_if_stale("cobalt.serve.engine.LocalModelDir", {"ray": "2.60.0"}, tests="tests/test_config.py")
        fields["callback_config"] = {"callback_class": f"{__name__}:{LocalModelDir.__name__}"}
    return LLMConfig(
        model_loading_config={"model_id": served_model_id(model, cfg), "model_source": source}, **fields
    )


def build_engine_app(model: str, cfg: EngineConfig | None = None):
    from ray.serve.llm import build_openai_app

    cfg = cfg or load_engine_config()
    return build_openai_app({"llm_configs": [llm_config(model, cfg)]})


def served_models(api_base: str, timeout_s: float = 5.0) -> list[str]:
    """Model ids the OpenAI route at ``api_base`` lists (``[]`` if it does not answer)."""
    try:
        with urllib.request.urlopen(f"{api_base}/models", timeout=timeout_s) as response:
            return [m["id"] for m in json.load(response).get("data", [])]
    except (OSError, ValueError, urllib.error.URLError):
        return []


def _listening(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=3):
            return True
    except OSError:
        return False


def http_port() -> int | None:
    """The port of the connected cluster's Serve HTTP proxy (None if Serve is not running)."""
    from ray import serve

    try:
        return serve.context._get_global_client().http_config.port
    except Exception:
        return None


def start_engine_app(model: str, cfg: EngineConfig | None = None, port: int | None = None) -> str:
    """Deploy the engine on the connected cluster (or reuse one already serving ``model``) and
    return the OpenAI base URL. Serve's HTTP proxy starts on ``port`` if Serve is not running."""
    from ray import serve

    cfg = cfg or load_engine_config()
    model_id = served_model_id(model, cfg)
    running = http_port()
    if running is None:
        serve.start(http_options={"host": cfg.http_host, "port": port or cfg.http_port or 8000})
        running = http_port()
    api_base = f"http://{cfg.http_host}:{running}/v1"
    if not _listening(cfg.http_host, running):
        raise ConfigError(
            f"Ray Serve on this cluster has no HTTP proxy at {cfg.http_host}:{running} (it was started "
            "with proxies disabled), so the engine's OpenAI route cannot be reached; restart Serve with "
            "HTTP on, or serve the model elsewhere and use --engine litellm --api-base URL"
        )
    status = serve.status().applications.get(cfg.app_name)
    if status is not None and str(status.status).endswith("RUNNING"):
        models = served_models(api_base)
        if model_id in models:
            log.info("reusing the %r app already serving %r at %s", cfg.app_name, model_id, api_base)
            return api_base
        raise ConfigError(
            f"Serve app {cfg.app_name!r} is already running with models {models}; "
            f"use another app_name in the engine config or stop it (serve delete {cfg.app_name})"
        )
    log.info("deploying %r (%s) as Serve app %r; loading can take minutes", model_id, model, cfg.app_name)
    started = time.monotonic()
    app = build_engine_app(model, cfg)
    deploy(app, cfg.app_name, max(cfg.deploy_timeout_s - (time.monotonic() - started), 1.0))
    left = max(cfg.deploy_timeout_s - (time.monotonic() - started), 10.0)  # for the route to list it
    wait_until_served(api_base, model_id, left, cfg.app_name)
    log.info("engine up at %s after %.0f s", api_base, time.monotonic() - started)
    return api_base


def deploy(
    app, name: str, timeout_s: float, report_every_s: float = 60, route_prefix: str | None = "/"
) -> None:
    """Deploy the Serve application ``app`` as ``name`` and wait, at most ``timeout_s``, until it runs.

    ``serve.run`` cannot bound that wait: in Ray 2.60 it waits with no time limit for the app to be
    RUNNING (``blocking`` only decides whether to wait for Ctrl-C afterwards), so a replica that
    can never be scheduled (too few GPUs, the wrong ``accelerator_type``) would hang it silently.
    So the app is submitted without Serve's waits (``serve.run_many``, both waits off), then polled
    here: Serve's notes on its deployments are logged every ``report_every_s`` (Serve notes a
    replica that waits for resources after 30 s, naming the resources it needs). When the app
    fails to deploy or the time is up, it is deleted (its pending replicas would take the
    resources later) and the error names what Serve said."""
    from ray import serve

    target = serve.RunTarget(target=app, name=name, route_prefix=route_prefix)
    serve.run_many([target], wait_for_ingress_deployment_creation=False, wait_for_applications_running=False)
    started = time.monotonic()
    next_report = started + report_every_s
    notes = ""
    while True:
        status = serve.status().applications.get(name)
        state = str(status.status) if status is not None else "NOT_STARTED"
        if state.endswith("RUNNING"):
            return
        notes = deployment_notes(status) or notes
        waited = time.monotonic() - started
        said = f"; Serve says: {notes}" if notes else ""
        if state.endswith("DEPLOY_FAILED"):
            serve.delete(name, _blocking=False)
            raise RuntimeError(f"Serve app {name!r} failed to deploy: {status.message}{said}")
        if waited >= timeout_s:
            serve.delete(name, _blocking=False)
            raise TimeoutError(
                f"Serve app {name!r} was not running after {timeout_s:.0f} s (deploy_timeout_s){said}"
            )
        if notes and time.monotonic() >= next_report:
            log.info("still deploying %r after %.0f s: %s", name, waited, notes)
            next_report = time.monotonic() + report_every_s
        time.sleep(1)


def deployment_notes(app_status) -> str:
    """What Serve says about the app's deployments, e.g. a replica that waits for resources the
    cluster lacks ("taken more than 30s to be scheduled ... Resources required ...")."""
    if app_status is None:
        return ""
    notes = [f"{name}: {d.message}" for name, d in app_status.deployments.items() if d.message]
    return "; ".join(notes)


def wait_until_served(
    api_base: str, model_id: str, timeout_s: float, app_name: str, report_every_s: float = 60
) -> None:
    """Wait until the OpenAI route lists ``model_id``; log Serve's notes on the app while it waits
    (every ``report_every_s``), and name them in the error if it never does."""
    from ray import serve

    deadline = time.monotonic() + timeout_s
    next_report = time.monotonic() + report_every_s
    notes = ""
    while time.monotonic() < deadline:
        if model_id in served_models(api_base):
            return
        status = serve.status().applications.get(app_name)
        if status is not None and str(status.status).endswith("DEPLOY_FAILED"):
            raise RuntimeError(f"engine app {app_name!r} failed to deploy: {status.message}")
        notes = deployment_notes(status)
        if notes and time.monotonic() >= next_report:
            log.info("still deploying %r: %s", app_name, notes)
            next_report = time.monotonic() + report_every_s
        time.sleep(2)
    raise TimeoutError(
        f"engine app {app_name!r} did not serve {model_id!r} within {timeout_s:.0f} s"
        + (f"; Serve says: {notes}" if notes else "")
    )


def app(args: dict):
    """Application builder for ``serve run cobalt.serve.engine:app model=DIR [config=engine_paper]``."""
    if "model" not in args:
        raise ConfigError("serve run cobalt.serve.engine:app needs model=<directory or hub id>")
    return build_engine_app(args["model"], load_engine_config(args.get("config")))
