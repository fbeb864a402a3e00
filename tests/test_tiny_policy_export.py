"""The SmolLM2 export is kept in the cache for the next run: the GGUF is parsed once per wheel
version, later exports copy it; an unwritable cache still exports; a complete output stays as is.
(The real export runs in the quickstart and the paper chain's rehearsal.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobalt.train import tiny_policy


@pytest.fixture
def saves(monkeypatch, tmp_path):
    """Stand-in for the GGUF export: a tiny directory's files; the directories it filled."""
    filled: list[Path] = []

    def save(dest: Path) -> None:
        filled.append(dest)
        (dest / "config.json").write_text(json.dumps({"model_type": "llama"}))
        (dest / "model.safetensors").write_bytes(b"weights")

    monkeypatch.setattr(tiny_policy, "_save_smollm2", save)
    monkeypatch.setenv(tiny_policy.CACHE_VARIABLE, str(tmp_path / "cache"))
    return filled


def files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def test_the_second_export_copies_the_cached_one(saves, tmp_path):
    first = tiny_policy.export_smollm2(tmp_path / "run1/smollm2")
    second = tiny_policy.export_smollm2(tmp_path / "run2/smollm2")
    assert len(saves) == 1  # parsed once
    (cached,) = (tmp_path / "cache").glob("smollm2-*")
    assert files(first) == files(second) == files(cached) and "model.safetensors" in files(cached)
    assert not list((tmp_path / "run2").glob(".*tmp"))  # no temporaries left


def test_a_cache_that_cannot_be_written_still_exports(saves, tmp_path, monkeypatch, capsys):
    (tmp_path / "not_a_dir").write_text("")
    monkeypatch.setenv(tiny_policy.CACHE_VARIABLE, str(tmp_path / "not_a_dir"))
    out = tiny_policy.export_smollm2(tmp_path / "run/smollm2")
    assert tiny_policy.is_complete_export(out) and saves == [saves[0]]
    assert "cannot keep it in" in capsys.readouterr().out


def test_a_complete_output_is_kept_as_it_is(saves, tmp_path):
    out = tmp_path / "run/smollm2"
    out.mkdir(parents=True)
    (out / "config.json").write_text("{}")
    (out / "model.safetensors").write_bytes(b"mine")
    assert tiny_policy.export_smollm2(out) == out and not saves
    assert (out / "model.safetensors").read_bytes() == b"mine"


def test_the_cache_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv(tiny_policy.CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tiny_policy.cache_dir() == tmp_path / "cobalt"
