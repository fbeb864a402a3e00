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
    """Load ``configs/<name>.yaml`` (or an explicit path) as a dict."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = config_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: config file does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def from_dict(cls: type[T], data: dict[str, Any] | None, source: str = "config") -> T:
    """Build a dataclass from a dict, rejecting unknown keys by name."""
    data = dict(data or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; expected some of {sorted(names)}")
    return cls(**data)
