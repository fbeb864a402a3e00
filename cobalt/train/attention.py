"""The actor's attention backend: veRL's default ``flash_attention_2`` where flash-attn imports,
else ``sdpa`` (torch's own kernels), chosen before GRPO starts rather than failing when the model
loads, hours into a paper run.

What depends on flash-attn in veRL 0.9.1's FSDP GRPO (read in ``.venv``):

- ``actor_rollout_ref.model.override_config.attn_implementation`` (``workers/config/model.py``):
  default ``flash_attention_2``; transformers refuses to load the model with it when flash-attn is
  missing. The reference model reads the same model config.
- remove-padding (``actor_rollout_ref.model.use_remove_padding``): its unpad/pad helpers fall back
  to pure torch without flash-attn (``verl/utils/attention_utils.py``), but with ``sdpa`` the packed
  micro-batch is attended through one dense mask of (tokens in the micro-batch)^2: 16 sequences of
  16,384 tokens (the paper profiles' log-prob micro-batch) would need a 68 GB mask, where padded
  rows need 16 masks of 16,384^2 (4.3 GB). So the fallback turns remove-padding off.
- Ulysses sequence parallelism (``ulysses_sequence_parallel_size`` > 1) patches flash-attn's
  forward; the profiles do not use it.

The check runs where the launcher runs: a cluster joined with ``--address`` is assumed to have the
same environment on its nodes.
"""

from __future__ import annotations

import dataclasses

from cobalt.train.profile import ATTENTION_KEY, override, override_value

PADDING_KEY = "actor_rollout_ref.model.use_remove_padding"
VERL_DEFAULT = "flash_attention_2"


def flash_attn_importable() -> bool:
    try:
        import flash_attn  # noqa: F401
    except Exception:  # missing, or built against another torch / CUDA
        return False
    return True


@dataclasses.dataclass(frozen=True)
class Attention:
    backend: str  # what the actor and reference models will use
    overrides: list[str]  # to add after all others
    note: str  # one line: the backend and why
    loads: bool = True  # False: the backend cannot load the model here (flash-attn set but not importable)


def choose(overrides: list[str], flash_attn: bool | None = None) -> Attention:
    """The backend for a run with ``overrides`` (the profile's and the user's): the one they set,
    else flash_attention_2 where flash-attn imports, else sdpa with remove-padding off."""
    flash = flash_attn_importable() if flash_attn is None else flash_attn
    chosen = override_value(overrides, ATTENTION_KEY)
    if chosen:
        note = f"attention: {chosen} (set by the profile or an override)"
        if chosen == VERL_DEFAULT and not flash:
            note += (
                f"; flash-attn does not import here, so the model will not load: set +{ATTENTION_KEY}=sdpa"
                " or build it (COBALT_FLASH_ATTN=1 COBALT_PROFILE=gpu bash scripts/setup.sh)"
            )
        return Attention(chosen, [], note, loads=chosen != VERL_DEFAULT or flash)
    if flash:
        return Attention(VERL_DEFAULT, [], f"attention: {VERL_DEFAULT} (veRL's default; flash-attn imports)")
    return Attention(
        "sdpa",
        [override(f"+{ATTENTION_KEY}", "sdpa"), override(PADDING_KEY, False)],
        "attention: sdpa, as flash-attn does not import here (veRL's default is flash_attention_2), with "
        "remove-padding off (sdpa would mask a packed micro-batch densely); COBALT_FLASH_ATTN=1 "
        "COBALT_PROFILE=gpu bash scripts/setup.sh builds flash-attn",
    )
