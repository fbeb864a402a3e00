"""Shared fixtures. Ray: every test session starts its OWN local cluster (never attaches to or
stops anyone else's), with a private temp dir, and shuts down only that."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
APPS_SAMPLES = SHARED / "data" / "apps-samples"


@pytest.fixture(scope="session")
def ray_cluster():
    """A private single-node Ray cluster for this test session."""
    ray = pytest.importorskip("ray")
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths are limited
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(
        address="local",
        num_cpus=4,
        include_dashboard=False,
        _temp_dir=temp_dir,
        _node_ip_address="127.0.0.1",  # loopback only
        log_to_driver=False,
        runtime_env={"env_vars": {"COBALT_CONFIG_DIR": str(ROOT / "configs")}},
    )
    yield ray
    ray.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)


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
