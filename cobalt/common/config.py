"""Loading ``configs/*.yaml``: the one place settings come from (no constants buried in code).

The directory is ``$COBALT_CONFIG_DIR`` if set, else ``configs/`` at the top of the checkout.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import os
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

from cobalt.common.errors import ConfigError

T = TypeVar("T")


def config_dir() -> Path:
    return Path(os.environ.get("COBALT_CONFIG_DIR") or Path(__file__).resolve().parents[2] / "configs")


def load_config(name_or_path: str | os.PathLike, names: Path | None = None) -> dict[str, Any]:
    """Load ``configs/<name>.yaml`` (or an explicit path) as a dict.

    A file may start from another: ``extends: <name>`` names a file in its own directory, else in
    ``names`` (default ``configs/``; a path is relative to its directory); the child's keys win and
    mappings merge key by key, so a child lists only what it changes (a ``null`` value is kept:
    readers treat it as "not set")."""
    return _load_chain(config_path(name_or_path), (), names or config_dir())


def config_path(name_or_path: str | os.PathLike) -> Path:
    """``configs/<name>.yaml``, or the path itself if it names a YAML file."""
    path = Path(name_or_path)
    return path if path.suffix in (".yaml", ".yml") else config_dir() / f"{name_or_path}.yaml"


def _load_chain(path: Path, seen: tuple[Path, ...], names: Path) -> dict[str, Any]:
    if path.resolve() in seen:
        chain = " -> ".join(str(p) for p in (*seen, path.resolve()))
        raise ConfigError(f"{path}: configs extend each other in a cycle: {chain}")
    data = _read_mapping(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str) or not parent:
        raise ConfigError(f"{path}: 'extends' must name a config, got {parent!r}")
    return merge(_load_chain(parent_path(path, parent, names), (*seen, path.resolve()), names), data)


def parent_path(path: Path, parent: str, names: Path) -> Path:
    """The file ``extends: <parent>`` names: a path relative to ``path``'s directory, or a name, looked
    up there and then in ``names`` (so a config of one's own may start from ``paper``)."""
    file = parent if parent.endswith((".yaml", ".yml")) else f"{parent}.yaml"
    candidates = [path.parent / file]
    if "/" not in parent and path.parent.resolve() != names.resolve():
        candidates.append(names / file)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = " nor ".join(str(c) for c in candidates)
    raise ConfigError(f"{path}: extends: {parent!r} names no config file (not {looked})")


def nearest_configs(path: Path) -> str:
    """``; did you mean X?`` (or the names beside it) for a config file that does not exist."""
    import difflib

    names = sorted(p.stem for p in path.parent.glob("*.yaml")) if path.parent.is_dir() else []
    if not names:
        return ""
    by_case = {name.lower(): name for name in names}
    near = [by_case[path.stem.lower()]] if path.stem.lower() in by_case else []
    near = near or difflib.get_close_matches(path.stem, names, n=3, cutoff=0.6)
    if near:
        return f"; did you mean {' or '.join(near)}?"
    return f"; {path.parent} holds: {', '.join(names)}"


def _read_mapping(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"{path}: config file does not exist{nearest_configs(path)}")
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
    """Build a dataclass from a dict, rejecting unknown keys, values of the wrong type (by the
    field's annotation) and values out of range (the class's own checks) by name."""
    data = dict(data or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {unknown}; expected some of {sorted(names)}")
    hints = typing.get_type_hints(cls)
    defaults = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING}  # fmt: skip
    for key, value in list(data.items()):
        if value is None and key in defaults and not has_type(None, hints[key]):
            del data[key]  # null: "not set" (a child config unsetting its parent's value)
        elif not has_type(value, hints[key]):
            raise ConfigError(
                f"{source}: {key} must be {type_name(hints[key])}, not {value!r} ({type(value).__name__})"
            )
    try:
        return cls(**data)
    except (ValueError, TypeError) as e:  # the class's own range checks
        raise ConfigError(f"{source}: {e}") from None


def has_type(value: Any, annotation: Any) -> bool:
    """Whether a value read from YAML fits a field's annotation. An int fits a float (YAML
    writes 4 for 4.0); a bool fits neither (it is an int in Python); any sequence fits a tuple or a
    list (a YAML list, OmegaConf's ListConfig)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(has_type(value, arg) for arg in args)
    if origin is typing.Literal:
        return value in args
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (tuple, list) or annotation in (tuple, list):
        item = args[0] if args and (origin is list or args[1:] == (...,)) else Any
        sequence = isinstance(value, collections.abc.Sequence) and not isinstance(value, str | bytes)
        return sequence and all(has_type(v, item) for v in value)
    if origin is dict or annotation is dict:
        return isinstance(value, collections.abc.Mapping)  # OmegaConf's DictConfig too
    return isinstance(value, origin or annotation)


def type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return " or ".join(type_name(arg) for arg in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(repr(arg) for arg in typing.get_args(annotation))
    names = {bool: "a boolean (true/false)", int: "an integer", float: "a number", str: "a string"}
    return names.get(annotation, f"a {(typing.get_origin(annotation) or annotation).__name__}")


def check_ranges(config: Any, section: str, positive=(), at_least: dict[str, float] | None = None) -> None:
    """Raise ValueError naming ``section.key`` for a field not above zero (``positive``; None
    passes: "not set") or below its minimum (``at_least``)."""
    bounds = {name: (0, False) for name in positive} | {k: (v, True) for k, v in (at_least or {}).items()}
    for name, (bound, inclusive) in bounds.items():
        value = getattr(config, name)
        if value is not None and (value < bound if inclusive else value <= bound):
            relation = f"at least {bound}" if inclusive else f"above {bound}"
            raise ValueError(f"{section}.{name} must be {relation}, not {value!r}")
