"""Every value the project writes as a hydra override reaches veRL's config unchanged: strings that
hydra would read as a sweep (``run, v2``), refuse (``a=b``), or read as another type (``null``,
``1e-4``, ``[1]``) are quoted, inside lists and dicts too; dict keys are escaped; interpolations
(``${oc.env:HOME}``) are escaped so that OmegaConf keeps them as text; the rest stay bare. Checked by
composing veRL's own ``ppo_trainer`` config with the overrides and resolving it, as ``main_ppo``
does."""

from __future__ import annotations

from pathlib import Path

import pytest

from cobalt.train.profile import Profile, format_value, hydra_overrides, override, override_value

TRICKY = {
    "trainer.experiment_name": "run, v2",
    "trainer.project_name": "a=b",
    "trainer.default_local_dir": "null",
    "data.train_files": "1e-4",
    "data.val_files": "[1]",
    "actor_rollout_ref.model.path": "it's a \\dir\\ with 'quotes'\\",
    "trainer.logger": ["console", "1", "a,b", "null"],
    "data.train_batch_size": 128,
    "actor_rollout_ref.actor.optim.lr": 1e-6,
    "trainer.val_before_train": False,
    "+cobalt_test.strings": ["a\\", "", "x'y", "[1]", "a,b", "${oc.env:HOME}", "\\${x}", "${"],
    "+cobalt_test.nested": [["", "null"], {"k": "1e-4"}],
    "+cobalt_test.keys": {"a:b": 1, "x y": "", "[k]": ["v"], "a=b,c": {"d\\": "${oc.env:HOME}"}},
    "+cobalt_test.path": "${oc.env:HOME}/runs",
}


def resolved(overrides: list[str]):
    """veRL's config as main_ppo holds it: composed, then its interpolations resolved once."""
    from omegaconf import OmegaConf

    cfg = composed(overrides)
    OmegaConf.resolve(cfg)
    return cfg


def composed(overrides: list[str]):
    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = Path(verl.__file__).parent / "trainer/config"
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return compose(config_name="ppo_trainer", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def lookup(cfg, key: str):
    """The value veRL reads from the resolved config (``resolved``): by attribute, or instantiated."""
    from omegaconf import OmegaConf

    value = OmegaConf.select(cfg, key.lstrip("+"))
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def test_profile_values_reach_verls_config_unchanged():
    profile = Profile(name="tricky", overrides=TRICKY, env={"A_FLAG": "false", "A_NUMBER": "1"})
    overrides = hydra_overrides(profile, forward_env=True)
    cfg = resolved(overrides)
    for key, value in TRICKY.items():
        got = lookup(cfg, key)
        assert got == value and type(got) is type(value), (key, value, got)
    env = lookup(cfg, "ray_kwargs.ray_init.runtime_env.env_vars")
    assert env["A_FLAG"] == "false" and env["A_NUMBER"] == "1"  # strings, as Ray's env_vars require


def test_plain_strings_stay_bare_and_lookups_read_quoted_values_back():
    assert format_value("/runs/paper/x/train.parquet") == "/runs/paper/x/train.parquet"
    assert format_value(["console", "wandb"]) == "[console,wandb]"
    assert format_value("run, v2") == "'run, v2'" and format_value("null") == "'null'"
    overrides = [override("data.train_files", "a=b"), override("trainer.default_local_dir", "/x/y z")]
    assert override_value(overrides, "data.train_files") == "a=b"
    assert override_value(overrides, "trainer.default_local_dir") == "/x/y z"


@pytest.mark.parametrize("value", ["run, v2", "a=b", "null", "1e-4", "[1]", "true", "x'y\\"])
def test_a_single_override_is_read_back_as_the_same_string(value):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_override(override("k", value)).value()
    assert parsed == value and isinstance(parsed, str)


@pytest.mark.parametrize("key", ["null", "1", "true", "1e-4", "", "é"])
def test_a_dict_key_hydra_cannot_write_as_that_string_is_refused_naming_it(key):
    from cobalt.common.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot be written as a hydra dict key"):
        override("k", {key: 1})
    assert override("k", {1: "a"}) == "k={1:a}"  # an integer key (YAML's {1: a}) stays one
