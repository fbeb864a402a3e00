"""The quickstart's settings (``configs/quickstart*.yaml``, read by ``cobalt.common.config.from_dict``).

Its own module so that what reads a quickstart profile without running it (``cobalt.data.novelty``,
``cobalt.recipes.design.design``) does not import the quickstart's stages.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar, Literal

ARMS = ("trained", "control")  # what follows the base: COBALT's GRPO, or the control's SFT
CONTROL_KEYS = {"epochs", "lr", "batch_size"}
WARM_UP_SEED_FROM_TRAINING = "train_seed"  # warmup.seed: one fine-tuned start per training seed


@dataclasses.dataclass(frozen=True)
class QuickstartConfig:
    MAX_TOKENS: ClassVar[int] = 256  # an answer's token budget unless sampling.max_tokens says
    model: str = "smollm2"
    problems: str = "embedded"
    train_problems: int = 6
    heldout_problems: int = 4
    seed: int = 42  # shuffles non-procedural problems into train and held-out; not a training seed
    # the training seed: GRPO's data.seed and actor_rollout_ref.rollout.seed, the control arm's SFT seed;
    # None: the train profile's seeds (veRL's defaults)
    train_seed: int | None = None
    arm: Literal["trained", "control"] = "trained"  # what follows the base: GRPO, or the control's SFT
    control: dict = dataclasses.field(default_factory=dict)  # the control's SFT: epochs, lr, batch_size
    warmup: dict = dataclasses.field(default_factory=dict)
    sampling: dict = dataclasses.field(default_factory=dict)
    train_samples: int = 4
    train_turns: int = 2
    eval_samples: int = 2
    eval_turns: int = 4
    train_profile: str = "quickstart"
    grpo_steps: int = 2
    # a checkpoint every save_every GRPO steps (None: only the last), so a stopped run resumes there
    save_every: int | None = None
    eval_steps: list[int] = dataclasses.field(default_factory=list)  # earlier checkpoints evaluated too:
    # on the evaluated split only, a dose curve (the design's pilot on dev)
    train_eval_problems: int = 0  # the first N training problems, evaluated like the held-out ones
    procedural: dict = dataclasses.field(default_factory=dict)  # problems "procedural": dev, heldout_families
    offline_trajectories: dict = dataclasses.field(default_factory=dict)  # options of procedural.offline
    eval_temperature: float | None = None  # None: sampling's temperature; 0: greedy evaluation
    preregistration: dict = dataclasses.field(default_factory=dict)  # fixed before the run; in the report
    engine_config: str = "engine"
    ray_num_cpus: int = 8
    num_gpus: int | None = None  # GPUs of the private Ray head (None: detected; fake ones on CPU)
    base_run: str | None = (
        None  # a run directory whose base this run takes (cobalt/recipes/quickstart/base.py)
    )

    def __post_init__(self):
        if self.train_seed is not None and self.train_seed < 0:
            raise ValueError(f"train_seed must be 0 or more, not {self.train_seed}")
        unknown = sorted(set(self.control) - CONTROL_KEYS)
        if unknown:
            raise ValueError(f"control: unknown key(s) {unknown}; expected some of {sorted(CONTROL_KEYS)}")
        if self.save_every is not None and self.save_every < 1:
            raise ValueError(f"save_every must be 1 or more, not {self.save_every}")
        bad = [s for s in self.eval_steps if not 0 < s < self.grpo_steps]
        if bad:
            raise ValueError(f"eval_steps: {bad}; each must lie between 0 and grpo_steps ({self.grpo_steps})")
        seed = self.warmup.get("seed", 0)
        if not isinstance(seed, int) and seed != WARM_UP_SEED_FROM_TRAINING:
            raise ValueError(f"warmup.seed must be an int or {WARM_UP_SEED_FROM_TRAINING!r}, not {seed!r}")
        if "heldout_family_names" in self.procedural:
            from cobalt.data.procedural.splits import held_out

            held_out(self.procedural["heldout_family_names"])  # ValueError naming an unknown family


def save_freq(cfg: QuickstartConfig) -> int:
    """veRL's ``trainer.save_freq``: every checkpoint the run resumes from or evaluates is saved
    (veRL saves at every multiple of it and at the last step)."""
    return math.gcd(cfg.save_every or cfg.grpo_steps, cfg.grpo_steps, *cfg.eval_steps)


def warm_up_seed(cfg: QuickstartConfig) -> int:
    """The warm-up's SFT seed: ``warmup.seed`` (0 by default), so that every arm and training seed
    starts from one base; or, with ``warmup.seed: train_seed``, the training seed, so that each
    training seed starts from a fine-tuned model of its own, which all arms of that seed share."""
    seed = cfg.warmup.get("seed", 0)
    if seed != WARM_UP_SEED_FROM_TRAINING:
        return seed
    if cfg.train_seed is None:
        raise ValueError("warmup.seed is train_seed, but the run has no training seed: pass --train-seed")
    return cfg.train_seed
