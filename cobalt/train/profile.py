"""Training profiles (``configs/train/<name>.yaml``) and the hydra overrides they become.

A profile is ``{description, extends, env, forward_env, ray, evaluator_config, prepare,
overrides}``; ``overrides`` are veRL hydra keys passed to ``main_ppo`` as ``key=value``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from pathlib import Path
from typing import Any

from cobalt.common.config import config_dir, load_config
from cobalt.common.errors import ConfigError

PROFILE_KEYS = {
    "description",
    "env",
    "forward_env",
    "ray",
    "evaluator_config",
    "prepare",
    "overrides",
    "single_turn",
    "method",
}

# what a profile trains: COBALT's bandit GRPO on offline trajectories, or an online multi-turn
# baseline (docs/training.md, "The online baselines"); a profile names its method (default cobalt)
METHODS = ("cobalt", "grpo_mt", "verpo_mt")
ONLINE_METHODS = ("grpo_mt", "verpo_mt")
METHOD_NAMES = {"cobalt": "COBALT", "grpo_mt": "GRPO-MT", "verpo_mt": "VeRPO-MT"}


def method_name(text: str) -> str:
    """``--method``'s value in the one spelling: ``grpo-mt`` (the flag style) is ``grpo_mt``."""
    return text.strip().lower().replace("-", "_")


@dataclasses.dataclass
class Profile:
    name: str
    description: str = ""
    env: dict = dataclasses.field(default_factory=dict)
    forward_env: list = dataclasses.field(
        default_factory=list
    )  # launching-shell variables sent to Ray workers
    ray: dict = dataclasses.field(default_factory=dict)
    evaluator_config: str = "evaluator"
    prepare: dict = dataclasses.field(default_factory=dict)
    overrides: dict = dataclasses.field(default_factory=dict)
    single_turn: bool = False  # trains on turn-0 prompts of the problems: no trajectory stages
    method: str = "cobalt"  # one of METHODS


PLUGIN_MODULES = "VERL_USE_EXTERNAL_MODULES"  # veRL imports these in every process that imports it


def with_shell_plugins(profile: Profile, environ: dict[str, str]) -> Profile:
    """The profile with the launching shell's own veRL plugin modules added after its own (e.g. a
    registered advantage estimator): the profile's ``env`` would otherwise replace them."""
    own, shell = profile.env.get(PLUGIN_MODULES, ""), environ.get(PLUGIN_MODULES, "")
    if not own or not shell:
        return profile
    modules = dict.fromkeys(m.strip() for m in f"{own},{shell}".split(",") if m.strip())
    return dataclasses.replace(profile, env={**profile.env, PLUGIN_MODULES: ",".join(modules)})


def load_profile(name: str) -> Profile:
    """``configs/train/<name>.yaml`` (or a path) with its ``extends`` chain merged (a profile of
    one's own may start from a shipped one by its name)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else config_dir() / "train" / f"{name}.yaml"
    data = load_config(path, names=config_dir() / "train")
    unknown = sorted(set(data) - PROFILE_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; expected some of {sorted(PROFILE_KEYS)}")
    data["prepare"] = {k: v for k, v in (data.get("prepare") or {}).items() if v is not None}
    if data.get("method", "cobalt") not in METHODS:
        raise ConfigError(f"{path}: method {data['method']!r}; expected one of {', '.join(METHODS)}")
    return Profile(name=path.stem, **data)


def format_value(value: Any, element: bool = False) -> str:
    """A YAML value as hydra's override grammar, then OmegaConf, read it back unchanged: a string is
    written bare where hydra would read the bare text as that same string, and quoted otherwise
    (``run, v2`` would be a sweep, ``a=b`` a parse error, ``null``, ``1e-4`` and ``[1]`` another
    type); inside a list or dict (``element``) by the rules of an element there; an interpolation
    (``${...}``) is escaped, as OmegaConf would resolve it (``escape_interpolations``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(v, element=True) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ",".join(f"{dict_key(k)}:{format_value(v, element=True)}" for k, v in value.items()) + "}"
        )
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    text = escape_interpolations(str(value))
    return text if _reads_back(text, element) else quote(text)


def escape_interpolations(text: str) -> str:
    """``text`` with each ``${`` escaped for OmegaConf twice: main_ppo resolves the composed config
    (``OmegaConf.resolve``), which stores an escaped ``${`` unescaped, and reading it resolves again.
    OmegaConf takes backslashes as escapes only before ``${``: n of them become 4n + 3."""
    return re.sub(r"(\\*)\$\{", lambda m: m.group(1) * 4 + "\\" * 3 + "${", text)


DICT_KEY_ESCAPES = "\\()[]{}:=, \t"  # characters hydra's dict keys take after a backslash


def dict_key(key: Any) -> str:
    """A dict key as hydra reads it back (keys cannot be quoted: special characters are escaped);
    ConfigError for a key hydra would read as another value (``null``, ``1``, ``true``) or cannot read."""
    text = str(key).lower() if isinstance(key, bool) else str(key)
    if isinstance(key, str):
        text = "".join("\\" + c if c in DICT_KEY_ESCAPES else c for c in key)
    try:
        (parsed,) = _override_parser().parse_override(f"k={{{text}:0}}").value()
        read = f"reads it as {parsed!r}"
    except Exception:  # outside the grammar (an empty key, a non-ASCII letter)
        parsed, read = None, "refuses it"
    if parsed != key or type(parsed) is not type(key):
        raise ConfigError(f"dict key {key!r} cannot be written as a hydra dict key (hydra {read}): rename it")
    return text


@functools.lru_cache(maxsize=1)
def _override_parser():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create()


def _reads_back(text: str, element: bool = False) -> bool:
    """Whether hydra reads ``key=<text>`` (``key=[<text>]``: an ``element``) as the string ``text``."""
    try:
        parsed = _override_parser().parse_override(f"k=[{text}]" if element else f"k={text}").value()
    except Exception:  # hydra's grammar refuses it (e.g. a second "=")
        return False
    if element:
        return (
            isinstance(parsed, list) and len(parsed) == 1 and isinstance(parsed[0], str) and parsed[0] == text
        )
    return isinstance(parsed, str) and parsed == text


def quote(text: str) -> str:
    """A hydra string literal (so "false" or "1" stay strings, as Ray's env_vars require). In hydra's
    quoted strings only backslashes before a quote (or the closing quote) are escapes: those runs
    are doubled, and each quote is escaped."""
    text = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, text)
    return "'" + text.replace("'", "\\'") + "'"


def override(key: str, value: Any) -> str:
    """One ``key=value`` override, the value as hydra reads it back unchanged (``format_value``)."""
    return f"{key}={format_value(value)}"


def hydra_overrides(
    profile: Profile, logger: list[str] | None = None, extra: list[str] = (), forward_env: bool = False
) -> list[str]:
    """``key=value`` overrides: the profile's, the logger choice, the env forwarded to Ray
    workers through ``runtime_env`` (when joining a cluster the launcher did not start: the
    profile's ``env`` and the ``forward_env`` variables set in this shell), then the user's."""
    overrides = [override(key, value) for key, value in profile.overrides.items()]
    if logger:
        overrides.append(override("trainer.logger", logger))
    if forward_env:
        env = {**{k: os.environ[k] for k in profile.forward_env if k in os.environ}, **profile.env}
        overrides += [
            f"+ray_kwargs.ray_init.runtime_env.env_vars.{k}={quote(str(v))}" for k, v in env.items()
        ]
    return overrides + list(extra)


def override_value(overrides: list[str], key: str) -> str | None:
    """The last value given to ``key`` (with or without a leading ``+``), a quoted string unquoted."""
    value = None
    for item in overrides:
        name, _, rest = item.partition("=")
        if name.lstrip("+") == key:
            value = rest
    if value and value[0] in "'\"":
        value = str(_override_parser().parse_override(f"k={value}").value())
    return value


def gpu_layout(overrides: list[str]) -> tuple[int, int]:
    """``(GPUs per node, nodes)`` the run trains on: the last ``trainer.n_gpus_per_node`` and
    ``trainer.nnodes`` given (a null leaves the one before), 1 when none is."""

    def last(key: str) -> int:
        given = [override_value([item], key) for item in overrides]
        values = [v for v in given if v not in (None, "", "null")]
        return int(values[-1]) if values else 1

    return last("trainer.n_gpus_per_node"), last("trainer.nnodes")


def world_size(overrides: list[str]) -> int:
    """FSDP ranks the run asks for: ``trainer.nnodes`` x ``trainer.n_gpus_per_node``."""
    per_node, nodes = gpu_layout(overrides)
    return per_node * nodes


REWARD_IN_FLIGHT = "reward.reward_kwargs.cobalt.max_in_flight"


def within_evaluator_capacity(overrides: list[str], capacity: int) -> tuple[list[str], str | None]:
    """The overrides with the reward manager's ``max_in_flight`` lowered to ``capacity`` (requests
    the evaluator runs at once), and a note saying so, or None when it already fits.

    The reward's evaluator call times out after ``call_timeout_s`` (270 s, above the evaluator's wall backstop), counted
    from the call; a call the evaluator cannot start yet waits on that clock, so under load a right
    program scored as a timeout (a failing test). Waiting for the manager's slot is not on it."""
    value = override_value(overrides, REWARD_IN_FLIGHT)
    if value is None or int(value) <= capacity:
        return overrides, None
    lowered = [
        f"{name}={capacity}" if name.lstrip("+") == REWARD_IN_FLIGHT else item
        for item in overrides
        for name in [item.partition("=")[0]]
    ]
    note = (
        f"reward scores in flight: {capacity}, not {value}: the evaluator runs {capacity} requests at "
        "once, and a call waiting in it would count against the reward's call timeout"
    )
    return lowered, note


def split_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """A command line's own arguments, and the hydra overrides after its first ``--``."""
    argv = list(argv)
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


# veRL keys the project's estimates and veRL's dataloader divide by or count with: a whole number
# of at least 1 (veRL's defaults are numbers, but its YAML does not type them, so hydra takes "two")
COUNT_KEYS = (
    "data.train_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_epochs",
    "trainer.total_epochs",
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
)


def override_error(item: str) -> str | None:
    """Why hydra would refuse ``item`` as an override, or why it would break the run (a count
    that is not a whole number of at least 1): one line, or None when it reads it."""
    if "=" not in item and not item.startswith("~"):
        return f"{item!r} is not a hydra override: expected key=value (e.g. +{ATTENTION_KEY}=sdpa)"
    try:
        parsed = _override_parser().parse_override(item)
    except Exception as e:
        reason = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        return f"{item!r} is not a hydra override: {reason} (quote a value with ',' or '=' as 'value')"
    key, _, value = item.partition("=")
    if key.lstrip("+") in COUNT_KEYS and not (value.strip().isdigit() and int(value) >= 1):
        return f"{item!r}: {key.lstrip('+')} is a count: a whole number of at least 1 (got {value!r})"
    if parsed.is_sweep_override():  # main_ppo composes in run mode: "Ambiguous value"
        key, _, value = item.partition("=")
        as_list = f", or as a list: {key}=[{value}]" if "," in value and "(" not in value else ""
        return (
            f"{item!r} is a sweep for hydra, which GRPO's main_ppo refuses ('Ambiguous value'): "
            f'pass one string quoted, "{key}={quote(value)}"{as_list}'
        )
    return None


def verl_config_error(overrides: list[str]) -> str | None:
    """Why veRL's ``main_ppo`` would refuse ``overrides`` when it composes its ``ppo_trainer``
    config with them (hydra's message, one line), or None; veRL itself is not imported."""
    import importlib.util

    if importlib.util.find_spec("verl") is None:
        return "veRL is not installed (bash scripts/setup.sh installs it)"
    try:
        verl_config(overrides)
    except Exception as e:
        unknown = re.search(r"Could not override '([^']+)'", str(e))
        if unknown:  # not hydra's advice to append it with "+": a new key would do nothing
            return unknown_key_error(unknown.group(1))
        return "; ".join(line.strip() for line in str(e).splitlines() if line.strip()) or type(e).__name__
    return None


def unknown_key_error(key: str) -> str:
    """One line for an override of a key veRL's config lacks, naming the nearest key it has."""
    import difflib

    # the leaf's name among its siblings (a shared "trainer." would make every key look near)
    parent, _, leaf = key.rpartition(".")
    siblings = {k.rpartition(".")[2]: k for k in verl_config_keys() if k.rpartition(".")[0] == parent}
    nearest = [siblings[name] for name in difflib.get_close_matches(leaf, siblings, n=1, cutoff=0.75)]
    nearest = nearest or difflib.get_close_matches(key, verl_config_keys(), n=1, cutoff=0.9)
    hint = (
        f"did you mean {nearest[0]}?"
        if nearest
        else f"check its spelling (a key veRL does not define is added as +{key}=VALUE)"
    )
    return f"{key}: veRL's config has no such key; {hint}"


@functools.cache
def verl_config_keys() -> tuple[str, ...]:
    """Every leaf key of veRL's ``ppo_trainer`` config, dotted."""
    from omegaconf import DictConfig

    def walk(node, prefix: str):
        for name in node:
            value = node._get_node(name)
            if isinstance(value, DictConfig):
                yield from walk(value, f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}"

    return tuple(walk(verl_config([]), ""))


def verl_config(overrides: list[str]):
    """veRL's ``ppo_trainer`` config composed with ``overrides`` as main_ppo composes it (hydra's
    exception where it refuses them); veRL itself is not imported."""
    import importlib.util

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = Path(importlib.util.find_spec("verl").submodule_search_locations[0]) / "trainer/config"
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return compose(config_name="ppo_trainer", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


AGENT_LOOPS_KEY = "actor_rollout_ref.rollout.agent.agent_loop_config_path"


def agent_loops_path(given: str) -> Path:
    """The agent-loop config a profile names, as an absolute path: veRL's workers look for it from
    their own directory, which on a joined cluster is the head's. A relative path is the caller's
    file where it exists, else the checkout's (``configs/train/agent_loops/``)."""
    path = Path(given)
    if not path.is_absolute() and not path.exists():
        path = config_dir().parent / given
    return path.resolve()


ATTENTION_KEY = "actor_rollout_ref.model.override_config.attn_implementation"


def single_turn(profile: str) -> bool:
    """Whether training profile ``profile`` trains on turn-0 prompts (no trajectory stages)."""
    return load_profile(profile).single_turn


def profiles_of(method: str) -> list[str]:
    """The shipped training profiles (``configs/train/*.yaml``) of ``method``."""
    names = sorted(path.stem for path in (config_dir() / "train").glob("*.yaml"))
    return [name for name in names if name != "common" and load_profile(name).method == method]


def check_method(method: str, profile: str) -> str:
    """``method`` when training profile ``profile`` trains it; ConfigError naming the profiles that do."""
    if method not in METHODS:
        raise ConfigError(f"--method {method!r}: expected one of {', '.join(METHODS)}")
    own = load_profile(profile).method
    if own != method:
        raise ConfigError(
            f"training profile {profile} trains method {own}, not {method}: pass a {method} profile "
            f"({', '.join(profiles_of(method))}) or --method {own}"
        )
    return method


def profile_model(profile: str) -> str:
    """The base model training profile ``profile`` names."""
    return str(load_profile(profile).overrides["actor_rollout_ref.model.path"])
