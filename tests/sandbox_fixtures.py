"""Helpers for tests that run real sandboxes: a backend's config (skipping where it cannot run)
and the processes left by sandbox uids."""

from __future__ import annotations

import dataclasses

import pytest
from proc_helpers import live_processes

from cobalt.sandbox import SandboxConfig, default_config
from cobalt.sandbox.runner import WARM_POOL, get_backend


def backend_config(backend: str, **settings) -> SandboxConfig:
    """The default config on ``backend`` with ``settings``; skips the test where it cannot run."""
    config = dataclasses.replace(default_config(), backend=backend, **settings)
    try:
        get_backend(config)
    except Exception as e:
        pytest.skip(f"backend {backend} unavailable here: {e}")
    return config


def processes_of(uids) -> list[int]:
    """Live processes of the given uids, but for this process's idle warm sandboxes (bwrap and
    its init: all that one is between requests)."""
    own = WARM_POOL.own_processes()
    return [pid for pid in live_processes(lambda entry: entry.stat().st_uid in uids) if pid not in own]


# A program whose 16 forked children spin forever while it sleeps: each child alone is within its
# rlimits, together they are not.
FORKED_SPINNERS = """
import ctypes, time
libc = ctypes.CDLL(None)
for _ in range(16):
    if libc.fork() == 0:
        while True:
            pass
print("spinning", flush=True)
time.sleep(60)
"""
