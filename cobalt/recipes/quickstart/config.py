"""The quickstart's settings (``configs/quickstart*.yaml``, read by ``cobalt.common.config.from_dict``).

Its own module so that what reads a quickstart profile without running it (``cobalt.data.novelty``,
``cobalt.recipes.design.design``) does not import the quickstart's stages.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

ARMS = ("trained", "control")  # what follows the base: COBALT's GRPO, or the control's SFT
CONTROL_KEYS = {"epochs", "lr", "batch_size"}


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
        if "seed" in self.warmup and not isinstance(self.warmup["seed"], int):
            raise ValueError(f"warmup.seed must be an int, not {self.warmup['seed']!r}")
