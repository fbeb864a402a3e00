"""Shared fixtures. Ray: every test session starts its OWN local cluster (never attaches to or
stops anyone else's), with a private temp dir, and shuts down only that."""

from __future__ import annotations

import os

os.environ.setdefault("RAY_AUTH_MODE", "token")  # before anything imports ray (see cobalt/__init__.py)
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
APPS_SAMPLES = SHARED / "data" / "apps-samples"


@pytest.fixture(scope="session")
def ray_cluster():
    """A private single-node Ray cluster for this test session, with its own auth token (nothing
    is read from or written to ~/.ray); only it is stopped afterwards."""
    ray = pytest.importorskip("ray")
    from cobalt.serve.cluster import connect
    from cobalt.serve.cluster import ray_cluster as private_cluster

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with private_cluster(None, num_cpus=8, log=lambda message: None) as address:
        connect(address)
        from ray import serve

        from cobalt.serve.cluster import free_port

        # Serve with its HTTP proxy on loopback, so engine apps' OpenAI routes are reachable
        serve.start(http_options={"host": "127.0.0.1", "port": free_port()})
        yield ray
        ray.shutdown()


@pytest.fixture(scope="session")
def evaluator_app(ray_cluster):
    """The real evaluator app on the private cluster; yields its deployment handle."""
    from ray import serve

    from cobalt.serve.evaluator import start_evaluator_app

    handle = start_evaluator_app("evaluator")
    yield handle
    serve.shutdown()


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory):
    """A small byte-level BPE tokenizer with a ChatML template, built offline."""
    from cobalt.data.tokens import build_tiny_tokenizer

    return build_tiny_tokenizer(tmp_path_factory.mktemp("tiny_tokenizer"))
