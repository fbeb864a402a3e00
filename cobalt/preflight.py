"""Checks of a paper run's needs, in seconds, before its first stage (and in ``--dry-run``)."""

from __future__ import annotations


def attention(profile_name: str, rehearse: bool, extra: list[str]):
    """The GRPO stage's attention backend (``cobalt.train.attention.choose``), as its launcher will
    choose it: from the profile's overrides (the rehearsal's when rehearsing) and the user's."""
    from cobalt.train import rehearsal
    from cobalt.train.attention import choose
    from cobalt.train.profile import hydra_overrides, load_profile

    profile = load_profile(profile_name)
    if rehearse:
        profile = rehearsal.plan(profile).profile
    return choose(hydra_overrides(profile) + list(extra))
