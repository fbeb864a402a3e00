"""Shared fixtures. Ray: every test session starts its OWN private head (never attaches to or
stops anyone else's), with its own temp dir and auth token, and stops only that."""

from __future__ import annotations

import os

os.environ.setdefault("RAY_AUTH_MODE", "token")  # before anything imports ray (see cobalt/__init__.py)
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# data shared beside the checkout (not in git); a git worktree elsewhere names it explicitly
SHARED = Path(os.environ.get("COBALT_SHARED_DIR") or ROOT.parent / "shared")
APPS_SAMPLES = SHARED / "data" / "apps-samples"
# Caches under ~/.cache and ~/.config (Hugging Face datasets, matplotlib's font list, vLLM's, the
# SmolLM2 export's). One for the run, not one per test HOME: vLLM inspects a model class in a
# subprocess that imports vLLM and torch (14 s here) unless its cache has the class, so each engine
# of a fresh HOME paid that on the way up; the export parses the GGUF (30 s) unless cached
PRIVATE_CACHES = ("HF_DATASETS_CACHE", "MPLCONFIGDIR", "VLLM_CACHE_ROOT", "COBALT_CACHE_DIR")
_CACHE_DIR = "_cobalt_private_caches"


def pytest_configure(config):
    """Library caches go to a temp dir of this run (set before any test module imports the
    libraries): tests neither read a user's ~/.cache nor leave copies in it."""
    top = tempfile.mkdtemp(prefix="cobalt-test-caches-")
    setattr(config, _CACHE_DIR, (top, [name for name in PRIVATE_CACHES if name not in os.environ]))
    for name in getattr(config, _CACHE_DIR)[1]:
        os.environ[name] = os.path.join(top, name)


def pytest_unconfigure(config):
    if hasattr(config, _CACHE_DIR):
        top, names = getattr(config, _CACHE_DIR)
        for name in names:
            os.environ.pop(name, None)
        shutil.rmtree(top, ignore_errors=True)


pytest_plugins = ["run_alone", "time_budget"]  # the workers and the order; the time budgets


def pytest_collection_modifyitems(config, items):
    """The learning check's deliberately broken twins (a whole training run each, 15-20 min on 2
    cores) run only when asked for: COBALT_LEARNING_CHECK=1 bash scripts/test.sh
    tests/test_learning_check.py. The passing check itself runs in CI. (The order of the tests is
    run_alone.py's.)"""
    if os.environ.get("COBALT_LEARNING_CHECK") == "1":
        return
    skip = pytest.mark.skip(reason="a learning-check training run: set COBALT_LEARNING_CHECK=1 to run it")
    for item in items:
        if "learning" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def ray_cluster():
    """A private single-node Ray head for this test session (its own token, no ~/.ray; never
    $RAY_ADDRESS), joined by this process; its variables are exported while the session lasts."""
    ray = pytest.importorskip("ray")
    from cobalt.serve.cluster import PrivateRayHead, connect, exported, free_port

    with exported({"RAY_USAGE_STATS_ENABLED": "0"}):
        head = PrivateRayHead(num_cpus=8)  # inherits the variable above, and so do its workers
        try:
            head.wait_ready()
            with head.exported():
                connect(head.address)
                from ray import serve

                # Serve with its HTTP proxy on loopback, so engine apps' OpenAI routes are reachable
                serve.start(http_options={"host": "127.0.0.1", "port": free_port()})
                yield ray
                ray.shutdown()
        finally:
            head.stop()
            shutil.rmtree(head.temp_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def evaluator_app(ray_cluster):
    """The real evaluator app on the private cluster; yields its deployment handle."""
    from ray import serve

    from cobalt.serve.evaluator import start_evaluator_app

    handle = start_evaluator_app("evaluator")
    yield handle
    serve.shutdown()


@pytest.fixture(scope="session")
def tiny_engine(ray_cluster, evaluator_app, tmp_path_factory):
    """A tiny random policy served by the engine app (its own app name) on the session's cluster:
    a real vLLM on Ray Serve with an OpenAI route, shared by the inference and judge tests (one
    vLLM start-up per session instead of one per module)."""
    import yaml

    from cobalt.common.config import load_config
    from cobalt.serve.engine import load_engine_config, start_engine_app
    from cobalt.train.tiny_policy import random_policy

    work = tmp_path_factory.mktemp("engine")
    model = random_policy(work / "random")
    config = {**load_config("engine"), "app_name": "engine_tiny"}
    config["llm"]["engine_kwargs"]["max_model_len"] = 4096  # 3 feedback turns of the random model
    # it lives through the whole session, the learning check's training included: 1 GiB of KV
    # cache (not 3) holds ample tokens of a model this small
    config["llm"]["runtime_env"]["env_vars"]["VLLM_CPU_KVCACHE_SPACE"] = "1"
    config_path = work / "engine_tiny.yaml"
    config_path.write_text(yaml.safe_dump(config))
    api_base = start_engine_app(str(model), load_engine_config(str(config_path)))
    return {
        "model": model,
        "model_id": model.name,  # the OpenAI model name: the directory's name
        "api_base": api_base,
        "config": str(config_path),
        "address": os.environ["RAY_ADDRESS"],
    }


@pytest.fixture(scope="module")
def executor_factory():
    """Executors on the real sandbox (a local evaluator of 2 workers) for the inference tests."""
    from cobalt.data.execute import Executor
    from cobalt.serve.client import LocalEvaluator

    evaluator = LocalEvaluator(max_workers=2)
    return lambda: Executor(evaluator, concurrency=4, timeout_s=60)


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory):
    """A small byte-level BPE tokenizer with a ChatML template, built offline."""
    from cobalt.data.tokens import build_tiny_tokenizer

    return build_tiny_tokenizer(tmp_path_factory.mktemp("tiny_tokenizer"))
