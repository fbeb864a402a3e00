"""The learning check's verdict: did a GRPO run make the policy better? Reads veRL's metrics file.

    python -m cobalt.train.learning_check runs/learning_check/<id>/metrics.jsonl
           [--rollouts runs/learning_check/<id>/rollouts] [--method cobalt|grpo_mt] [--window 4] [--val-margin 0.1]
           [--margin M] [--reward-key critic/score/mean]

``scripts/learning_check.sh`` trains (``configs/train/learning_check.yaml``) and then runs this.
The metrics file is what veRL's ``file`` logger writes (``trainer.logger`` with ``file``,
``VERL_FILE_LOGGER_PATH``): one JSON object per line, ``{"step": N, "data": {metric: value}}``;
validation before training is logged at step 0, and lines of the same step are merged.

The run learned when, on one seeded run, the sampled reward on the validation prompts
(``val-core/<source>/acc/mean@<n>``, averaged over data sources) at the last validation exceeds the
first (step 0, before any update) by at least ``val_margin``. The learning check validates on its
*training* prompts at temperature 0.6 (``configs/train/learning_check.yaml``), so this is a
lower-noise reading of the reward on the prompts it trains on, not a held-out score: the report
says so (``VAL_NAME``).

Each method has its own criteria (``CRITERIA``, ``--method``): GRPO-MT's check also passes when the
paired training reward below rose by its margin and the validation did not fall by more than its
floor.

The report also gives the training reward's gain: the mean over the last ``window`` steps minus
that over the first ``window`` -- window means, not one step. It is judged only when ``margin`` is
set: on 8 steps of 8 prompts it is too noisy to gate on (a learning run in CI gained -0.020 while
its validation rose +0.188; one of five runs without learning gained +0.032). With ``--rollouts`` (veRL's ``trainer.rollout_data_dir`` dump, one ``<step>.jsonl`` per step)
  the comparison is paired by prompt: each prompt's mean reward in the last window minus its mean
  in the first, averaged over the prompts seen in both, so the luck of which prompts the data
  order puts in each window cancels (with seed 1 the first batch holds the hardest prompts, which
  made a run without learning gain +0.105 unpaired). Without it, the window means of the per-step
  metric (``critic/score/mean``).

Exit status 0 when the judged gains reach their margins, 1 when not, 2 when the file cannot be judged (missing, too few
steps, no validation). The thresholds below were chosen from measured runs; see
``tests/test_learning_check.py`` and docs/training.md ("The learning check") for the numbers.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from pathlib import Path

from cobalt.common.cli import ArgumentParser
from cobalt.common.errors import DataError
from cobalt.common.jsonl import read_numbered_jsonl

REWARD_KEY = "critic/score/mean"
FAILURES_KEY = "reward/evaluator_failure/count"  # responses scored as failing for want of the evaluator
VAL_KEY = r"^val-core/.+/acc/mean@\d+$"
# what the verdict measures in the learning check (its validation files are its training files)
VAL_NAME = "reward on the training prompts at temperature 0.6"


@dataclasses.dataclass(frozen=True)
class Criteria:
    # Margins: between the gains of runs that cannot learn (lr = 0) and of runs that do, five seeds
    # each of the 8-step check (bench/calibrate_learning_check.py; the runs and the false-pass and
    # false-fail rates they give: docs/benchmarks.md, "The learning check").
    window: int = 4  # steps averaged at each end
    margin: float | None = None  # training reward gain (paired by prompt) required; None: reported only
    val_margin: float = 0.10  # last validation score minus the first, at least
    reward_key: str = REWARD_KEY
    val_key: str = VAL_KEY  # a regular expression; matching keys of one step are averaged
    # with a margin: the training reward's gain passes a run on its own, unless the validation fell
    # by more than ``val_floor`` (else both gains must reach their margins)
    either: bool = False
    val_floor: float = 0.0

    def passes(self, gain: float, val_gain: float) -> bool:
        reward_ok = self.margin is None or gain >= self.margin
        val_ok = val_gain >= self.val_margin
        if self.reward_may_pass_alone:
            return val_ok or (reward_ok and not self.collapsed(val_gain))
        return reward_ok and val_ok

    @property
    def reward_may_pass_alone(self) -> bool:
        return self.either and self.margin is not None

    def collapsed(self, val_gain: float) -> bool:
        """The validation fell past the floor: the training reward alone cannot pass the run."""
        return self.reward_may_pass_alone and val_gain < -self.val_floor


# Each method's criteria (docs/benchmarks.md, "The learning check"). COBALT's: the reward on the
# training prompts, from five null and five learning runs. GRPO-MT's null runs spread twice as wide
# there (0.16), and where its policy starts high the gain lands near that margin, so its check
# also passes on the paired training reward, whose null runs never reached -0.003 and whose
# learning runs never fell below +0.024, unless the training prompts' reward fell by more than 0.10:
# a run at lr 1e-3 collapsed there, -0.25, with its training reward +0.015, while runs that learn
# (paired +0.10) and runs at lr 0 land anywhere from -0.03 to +0.11 (docs/benchmarks.md).
CRITERIA = {
    "cobalt": Criteria(),
    "grpo_mt": Criteria(margin=0.01, val_margin=0.16, either=True, val_floor=0.10),
}


@dataclasses.dataclass
class Verdict:
    passed: bool
    rewards: dict[int, float]  # training step -> reward mean
    first_mean: float
    last_mean: float
    gain: float
    paired_prompts: int  # prompts behind a paired gain (0: unpaired window means of the metric)
    validation: dict[int, float]  # step -> validation score
    val_gain: float
    criteria: Criteria
    reasons: list[str]  # why it failed (empty when it passed)
    # step -> responses scored as failing for want of the evaluator (reported beside the rewards: a
    # step full of them is the evaluator's trouble, not the policy's)
    evaluator_failures: dict[int, float] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "criteria": dataclasses.asdict(self.criteria)}


class Unjudgeable(ValueError):
    """The metrics cannot answer the question (no file, too few steps, no validation)."""


def read_metrics(path: str | Path) -> dict[int, dict]:
    """``{step: metrics}`` from veRL's file logger; lines of the same step are merged."""
    path = Path(path)
    if not path.is_file():
        raise Unjudgeable(f"{path}: no metrics file (was trainer.logger given 'file'?)")
    steps: dict[int, dict] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            step, data = int(entry["step"]), dict(entry["data"])
        except (ValueError, KeyError, TypeError) as error:
            raise Unjudgeable(f"{path}:{number}: not a veRL metrics line ({error})") from None
        steps.setdefault(step, {}).update(data)
    return steps


def read_rollouts(directory: str | Path) -> dict[int, list[tuple[str, float]]]:
    """``{step: [(prompt, reward), ...]}`` from veRL's rollout dump (``trainer.rollout_data_dir``):
    one ``<step>.jsonl`` per training step, a line per response with its ``input`` and ``score``."""
    directory = Path(directory)
    files = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    steps = {int(f.stem): f for f in files if f.stem.isdigit()}
    if not steps:
        raise Unjudgeable(f"{directory}: no rollout dump (<step>.jsonl; was trainer.rollout_data_dir set?)")
    rollouts = {}
    for step, path in sorted(steps.items()):
        rows = []
        try:
            for number, row in read_numbered_jsonl(path, required=("input", "score")):
                score = _number(row["score"])
                if score is None:
                    raise Unjudgeable(f"{path}:{number}: field score is {row['score']!r}, not a number")
                rows.append((str(row["input"]), score))
        except DataError as error:
            where = f"{error.path}:{error.line}"
            raise Unjudgeable(f"{where}: not a rollout line with input and score ({error.problem})") from None
        rollouts[step] = rows
    return rollouts


def paired_gain(rollouts: dict[int, list[tuple[str, float]]], window: int) -> tuple[float, float, float, int]:
    """Per prompt, the mean reward over the last ``window`` steps minus that over the first; the
    mean of those differences over the prompts seen in both windows. Returns (first, last, gain,
    prompts), first and last being the two windows' means over the same prompts."""
    steps = sorted(rollouts)

    def per_prompt(window_steps) -> dict[str, float]:
        scores: dict[str, list[float]] = {}
        for step in window_steps:
            for prompt, score in rollouts[step]:
                scores.setdefault(prompt, []).append(score)
        return {prompt: sum(values) / len(values) for prompt, values in scores.items()}

    first, last = per_prompt(steps[:window]), per_prompt(steps[-window:])
    both = sorted(first.keys() & last.keys())
    if not both:
        raise Unjudgeable(
            f"no prompt appears both in the first {window} and the last {window} steps' rollouts"
        )
    first_mean = sum(first[p] for p in both) / len(both)
    last_mean = sum(last[p] for p in both) / len(both)
    return first_mean, last_mean, last_mean - first_mean, len(both)


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def series(metrics: dict[int, dict], key: str) -> dict[int, float]:
    """``{step: value}`` of one metric, steps in order (non-numbers dropped)."""
    values = {step: _number(data.get(key)) for step, data in sorted(metrics.items())}
    return {step: value for step, value in values.items() if value is not None}


def validation_series(metrics: dict[int, dict], pattern: str) -> dict[int, float]:
    """``{step: mean of the metrics whose key matches pattern}`` for the steps that have any."""
    regex = re.compile(pattern)
    out = {}
    for step, data in sorted(metrics.items()):
        values = [v for k, v in data.items() if regex.search(k) and _number(v) is not None]
        if values:
            out[step] = sum(map(float, values)) / len(values)
    return out


def judge(
    metrics: dict[int, dict],
    criteria: Criteria = Criteria(),
    rollouts: dict[int, list[tuple[str, float]]] | None = None,
) -> Verdict:
    """The verdict on a run's metrics (see the module doc), the reward gain paired by prompt when
    the run's ``rollouts`` (``read_rollouts``) are given; Unjudgeable when it cannot tell."""
    rewards = {step: value for step, value in series(metrics, criteria.reward_key).items() if step > 0}
    if criteria.window < 1:
        raise Unjudgeable(f"window must be at least 1, got {criteria.window}")
    if len(rewards) < 2 * criteria.window:
        raise Unjudgeable(
            f"{len(rewards)} training steps with {criteria.reward_key}; the check compares the first "
            f"{criteria.window} with the last {criteria.window}, so it needs at least {2 * criteria.window}"
        )
    if rollouts is None:
        values = list(rewards.values())
        first_mean = sum(values[: criteria.window]) / criteria.window
        last_mean = sum(values[-criteria.window :]) / criteria.window
        gain, paired_prompts = last_mean - first_mean, 0
    elif len(rollouts) < 2 * criteria.window:
        raise Unjudgeable(
            f"rollouts of {len(rollouts)} steps; a paired comparison of the first {criteria.window} "
            f"with the last {criteria.window} needs at least {2 * criteria.window}"
        )
    else:
        first_mean, last_mean, gain, paired_prompts = paired_gain(rollouts, criteria.window)
    validation = validation_series(metrics, criteria.val_key)
    if len(validation) < 2:
        raise Unjudgeable(
            f"validation scores ({criteria.val_key}) at {len(validation)} step(s); the check needs one "
            "before training (trainer.val_before_train=true) and one after"
        )
    val_steps = sorted(validation)
    val_gain = validation[val_steps[-1]] - validation[val_steps[0]]
    reasons = []
    passed = criteria.passes(gain, val_gain)
    if criteria.margin is not None and not gain >= criteria.margin:
        reasons.append(
            f"reward gain {gain:+.3f} (last {criteria.window} steps {last_mean:.3f} - first "
            f"{criteria.window} {first_mean:.3f}{_paired(paired_prompts)}) is below the margin {criteria.margin}"
        )
    if not val_gain >= criteria.val_margin:
        reasons.append(
            f"{VAL_NAME}: gain {val_gain:+.3f} (step {val_steps[-1]}: {validation[val_steps[-1]]:.3f}, "
            f"step {val_steps[0]}: {validation[val_steps[0]]:.3f}) is below the margin {criteria.val_margin}"
        )
    if criteria.collapsed(val_gain):
        reasons.append(
            f"{VAL_NAME} fell {val_gain:+.3f}, past the floor -{criteria.val_floor}: the training reward "
            "alone does not pass a run whose policy collapsed"
        )
    return Verdict(
        passed=passed,
        rewards=rewards,
        first_mean=first_mean,
        last_mean=last_mean,
        gain=gain,
        paired_prompts=paired_prompts,
        validation=validation,
        val_gain=val_gain,
        criteria=criteria,
        reasons=[] if passed else reasons,
        evaluator_failures={step: n for step, n in series(metrics, FAILURES_KEY).items() if step in rewards},
    )


def _paired(prompts: int) -> str:
    return f", paired over {prompts} prompts" if prompts else ""


def _failures(count: float) -> str:
    return f"  ({count:g} scored as failing for want of the evaluator)" if count else ""


def report(verdict: Verdict) -> str:
    c = verdict.criteria
    lines = [f"reward per step ({c.reward_key}):"]
    lines += [
        f"  step {step:3d}  {value:+.4f}{_failures(verdict.evaluator_failures.get(step, 0))}"
        for step, value in verdict.rewards.items()
    ]
    lines.append(
        f"first {c.window} steps {verdict.first_mean:+.4f}, last {c.window} steps {verdict.last_mean:+.4f}"
        f"{_paired(verdict.paired_prompts)}: gain {verdict.gain:+.4f} "
        + ("(not judged: too noisy on so few steps)" if c.margin is None else f"(margin {c.margin})")
    )
    val = ", ".join(f"step {step} {value:.4f}" for step, value in verdict.validation.items())
    lines.append(
        f"{VAL_NAME} (veRL's validation, {c.val_key}): {val}: gain {verdict.val_gain:+.4f} "
        f"(margin {c.val_margin})"
    )
    if verdict.passed:
        judged = f"the {VAL_NAME}"
        if c.margin is not None:
            judged = f"the training reward {'or' if c.either else 'and'} {judged}"
        lines.append(f"LEARNED: {judged} rose by at least the margin")
    else:
        lines += ["NOT LEARNED:"] + [f"  {reason}" for reason in verdict.reasons]
    return "\n".join(lines)


def _margins(criteria: Criteria) -> str:
    val = f"{VAL_NAME} +{criteria.val_margin}"
    if criteria.margin is None:
        return val
    if not criteria.either:
        return f"{val} and paired training reward +{criteria.margin}"
    return f"{val} or paired training reward +{criteria.margin} (if the first fell by no more than {criteria.val_floor})"


def main(argv=None) -> int:
    defaults = Criteria()
    parser = ArgumentParser(
        description="Verdict of the learning check on veRL's metrics JSONL (trainer.logger 'file'): "
        "exit 0 when the validation reward (in the learning check: on its training prompts) rose by "
        "the margin, or as the method's criteria say (--method, --margin); 1 when not; 2 when the file cannot be judged."
    )
    parser.add_argument("metrics", help="veRL's file-logger JSONL (VERL_FILE_LOGGER_PATH)")
    parser.add_argument(
        "--rollouts",
        metavar="DIR",
        help="veRL's rollout dump (trainer.rollout_data_dir): the reward gain is then paired by prompt",
    )
    parser.add_argument("--window", type=int, default=defaults.window, help="steps averaged at each end")
    parser.add_argument(
        "--method",
        choices=sorted(CRITERIA),
        default="cobalt",
        help="the check's method: its calibrated margins (default %(default)s): "
        + "; ".join(f"{m}: {_margins(c)}" for m, c in CRITERIA.items()),
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=None,
        help="the training reward gain required (default: the method's; cobalt's is reported, not judged)",
    )
    parser.add_argument(
        "--val-margin",
        type=float,
        default=None,
        help=f"required gain of the {VAL_NAME} (veRL's validation; default: the method's)",
    )
    parser.add_argument("--reward-key", default=defaults.reward_key, help="per-step training reward metric")
    parser.add_argument("--val-key", default=defaults.val_key, help="regex of the validation metric(s)")
    parser.add_argument("--json", metavar="FILE", help="also write the verdict as JSON here")
    args = parser.parse_args(argv)
    method = CRITERIA[args.method]
    criteria = dataclasses.replace(
        method,
        window=args.window,
        margin=method.margin if args.margin is None else args.margin,
        val_margin=method.val_margin if args.val_margin is None else args.val_margin,
        reward_key=args.reward_key,
        val_key=args.val_key,
    )
    try:
        rollouts = read_rollouts(args.rollouts) if args.rollouts else None
        verdict = judge(read_metrics(args.metrics), criteria, rollouts)
    except Unjudgeable as error:
        print(f"learning check: cannot judge: {error}", file=sys.stderr)
        return 2
    print(report(verdict), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(verdict.as_dict(), indent=1) + "\n")
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
