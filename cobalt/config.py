"""Loading ``configs/*.yaml``: the one place settings come from (no constants buried in code).

The directory is ``$COBALT_CONFIG_DIR`` if set, else ``configs/`` at the top of the checkout.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, TypeVar

import yaml

from cobalt.errors import ConfigError

T = TypeVar("T")


def config_dir() -> Path:
    return Path(os.environ.get("COBALT_CONFIG_DIR") or Path(__file__).resolve().parents[1] / "configs")


def load_config(name_or_path: str | os.PathLike) -> dict[str, Any]:
    """Load ``configs/<name>.yaml`` (or an explicit path) as a dict.

    A file may start from another: ``extends: <name>`` names a file in its own directory (or a
    path relative to it); the child's keys win and mappings merge key by key, so a child lists
    only what it changes (a ``null`` value is kept: readers treat it as "not set")."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = config_dir() / f"{name_or_path}.yaml"
    return _load_chain(path, ())


def _load_chain(path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    if path.resolve() in seen:
        chain = " -> ".join(str(p) for p in (*seen, path.resolve()))
        raise ConfigError(f"{path}: configs extend each other in a cycle: {chain}")
    data = _read_mapping(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str) or not parent:
        raise ConfigError(f"{path}: 'extends' must name a config, got {parent!r}")
    parent_path = path.parent / (parent if parent.endswith((".yaml", ".yml")) else f"{parent}.yaml")
    return merge(_load_chain(parent_path, (*seen, path.resolve())), data)


def _read_mapping(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"{path}: config file does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def merge(base: dict, top: dict) -> dict:
    """``base`` updated by ``top``; nested mappings merge key by key (``top`` wins)."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def from_dict(cls: type[T], data: dict[str, Any] | None, source: str = "config") -> T:
    """Build a dataclass from a dict, rejecting unknown keys by name."""
    data = dict(data or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; expected some of {sorted(names)}")
    return cls(**data)
