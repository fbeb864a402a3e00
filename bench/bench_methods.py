"""Cost per training example, side by side: COBALT, GRPO-MT and VeRPO-MT, in one sitting (issue 58).

    .venv/bin/python bench/bench_methods.py --out DIR [--rounds 3] [--steps 6] [--problems 2]
                                            [--methods cobalt,grpo_mt,verpo_mt] [--profile quickstart]

What every method shares is the main job's (``configs/quickstart.yaml``): SmolLM2-135M-Instruct
after its SFT warm-up, the same training problems, one private Ray head with one evaluator app,
and GRPO profiles that differ only in what they train (``quickstart``, ``grpo_mt_quickstart``,
``verpo_mt_quickstart``: the same per-turn answer budget, engine, batch arithmetic and
concurrency). The bench makes that base once through the quickstart's own stages, then COBALT's
offline data: the base model's trajectories on the training problems (timed: COBALT's offline
cost), their bandit prompts, and one online row per problem. No prompt is filtered for length:
every method's prompt slot holds the longest bandit prompt, so an online episode's context may
grow as long as any COBALT prompt.

Then ``--rounds`` rounds, each training every method for ``--steps`` steps from the same model
(``cobalt.train.launch`` on the bench's head, no checkpoints, no validation), the order rotated
each round. Per run, its steps after the first (start-up: compilation, caches) are averaged; per
method, the figures are the median of its rounds with their range. A training example is the
paper's: a bandit prompt with its n responses for COBALT, a problem with its n episodes for an
online method; per problem, COBALT's covers all of a problem's bandit prompts. Evaluator
requests are counted as they are sent (``reward/evaluator_requests/count``), not computed.
COBALT's offline cost is printed whole and amortized over the bandit prompts it produced.

Re-running with the same ``--out`` resumes: finished stages and runs are kept, an unfinished run
is moved aside (``<run>.incomplete-N``) and run again. Baseline: COBALT (each ratio is over its).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cobalt.common.argtypes import positive_int  # noqa: E402
from cobalt.common.cli import ArgumentParser  # noqa: E402
from cobalt.common.cli import run as run_cli  # noqa: E402
from cobalt.common.errors import ConfigError  # noqa: E402
from cobalt.train.learning_check import read_metrics  # noqa: E402

METHODS = ("cobalt", "grpo_mt", "verpo_mt")
REQUESTS = "reward/evaluator_requests/count"
TRAJECTORY_STAGES = ("trajectories: single-turn", "trajectories: multi-turn", "trajectories: hidden tests")


# ---- the figures ---------------------------------------------------------------------------------


def step_figures(data: dict) -> dict[str, float]:
    """One step's figures from its metrics (``timing_s/*`` from veRL, ``rollout/*`` and
    ``reward/*`` from the cobalt_sync trainer). veRL's ``gen`` phase holds the rollout and the
    reward (scored as each episode ends); it is split by the share of an episode's time spent
    waiting for the evaluator (public tests and reward) against generating. Update: the rest of
    the step (old and reference log-probs, advantages, the actor's update, the weight sync)."""
    if REQUESTS not in data:
        raise KeyError(f"{REQUESTS} (the evaluator requests the step sent) is not in the metrics")
    step, gen = data["timing_s/step"], data["timing_s/gen"]
    generating, waiting = data["rollout/generate_s/mean"], data["rollout/evaluator_wait_s/mean"]
    share = waiting / (generating + waiting) if generating + waiting > 0 else 0.0
    generation = gen * (1 - share)
    tokens = data["rollout/generated_tokens"]
    return {
        "step_s": step,
        "generation_s": generation,
        "evaluation_s": gen * share,
        "update_s": step - gen,
        "tokens": tokens,
        "episodes": data["rollout/episodes"],
        "turns": data.get("reward/turns/mean", 1.0),
        "requests": data[REQUESTS],
        "tokens_per_s": tokens / generation if generation > 0 else 0.0,
        "evaluator_wait_s": waiting,
    }


def run_figures(method: str, steps: dict[int, dict], examples: int, prompts_per_problem: float) -> dict:
    """One run's means over its training steps after the first (step 0 is validation, never a
    step). ``example_s`` by the paper's definition (``examples`` per step: bandit prompts for
    COBALT, problems for an online method); ``problem_s`` covers a problem once (for COBALT all
    of its bandit prompts: ``prompts_per_problem`` examples)."""
    measured = sorted(step for step in steps if step > 0)[1:]
    if not measured:
        raise ValueError(f"{method}: no training step after the first in the metrics")
    rows = [step_figures(steps[step]) for step in measured]
    mean = {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}
    mean["steps"] = len(rows)
    mean["example_s"] = mean["step_s"] / examples
    mean["requests_per_example"] = mean["requests"] / examples
    mean["problem_s"] = mean["example_s"] * (prompts_per_problem if method == "cobalt" else 1.0)
    return mean


def across_rounds(runs: list[dict]) -> dict[str, dict[str, float]]:
    """Each figure's median over the rounds, with its range."""
    return {
        key: {
            "median": statistics.median(run[key] for run in runs),
            "min": min(run[key] for run in runs),
            "max": max(run[key] for run in runs),
        }
        for key in runs[0]
    }


def offline_cost(stages: dict, problems: int, bandit_prompts: int) -> dict[str, float]:
    """COBALT's offline data, whole and amortized, from the base run's ``stages.json``: the
    trajectories' stages (generation, the feedback turns, the hidden tests), per problem and per
    bandit prompt they yielded."""
    missing = [name for name in TRAJECTORY_STAGES if "seconds" not in stages.get(name, {})]
    if missing:
        raise KeyError(f"no time recorded for {missing}")
    whole = sum(stages[name]["seconds"] for name in TRAJECTORY_STAGES)
    return {
        "whole_s": whole,
        "problems": problems,
        "bandit_prompts": bandit_prompts,
        "per_problem_s": whole / problems,
        "per_example_s": whole / bandit_prompts,
    }


RATIOS = ("example_s", "problem_s", "generation_s", "evaluation_s", "update_s", "tokens", "requests")


def ratios(summaries: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Each method's median figures over COBALT's (only when COBALT ran)."""
    base = summaries.get("cobalt")
    if not base:
        return {}
    return {
        method: {
            key: s[key]["median"] / base[key]["median"] if base[key]["median"] else float("nan")
            for key in RATIOS
        }
        for method, s in summaries.items()
    }


ROWS = (
    ("s per step", "step_s", "{:.1f}"),
    ("  generation", "generation_s", "{:.1f}"),
    ("  evaluation", "evaluation_s", "{:.1f}"),
    ("  update", "update_s", "{:.1f}"),
    ("s per example (paper)", "example_s", "{:.2f}"),
    ("s per problem", "problem_s", "{:.2f}"),
    ("episodes per step", "episodes", "{:.0f}"),
    ("turns per episode", "turns", "{:.2f}"),
    ("tokens generated per step", "tokens", "{:.0f}"),
    ("generation tokens/s", "tokens_per_s", "{:.1f}"),
    ("evaluator requests per step", "requests", "{:.1f}"),
    ("evaluator requests per example", "requests_per_example", "{:.1f}"),
    ("evaluator wait per episode (s)", "evaluator_wait_s", "{:.2f}"),
)


def table(summaries: dict[str, dict], offline: dict | None = None, width: int = 25) -> str:
    """The side-by-side table: each cell the median over rounds and [its range]."""

    def cell(figure: dict, fmt: str) -> str:
        return f"{fmt.format(figure['median'])} [{fmt.format(figure['min'])}-{fmt.format(figure['max'])}]"

    methods = list(summaries)
    lines = [f"{'median [range] over rounds':34}" + "".join(f"{m:>{width}}" for m in methods)]
    for label, key, fmt in ROWS:
        lines.append(f"{label:34}" + "".join(f"{cell(summaries[m][key], fmt):>{width}}" for m in methods))
    for method, values in ratios(summaries).items():
        lines.append(f"{method} / cobalt: " + ", ".join(f"{k} {v:.2f}x" for k, v in values.items()))
    if offline and "cobalt" in summaries:
        example = summaries["cobalt"]["example_s"]["median"]
        lines.append(
            f"COBALT's offline trajectories: {offline['whole_s']:.0f} s whole for {offline['problems']} "
            f"problems ({offline['per_problem_s']:.1f} s a problem), {offline['per_example_s']:.2f} s per "
            f"bandit prompt of {offline['bandit_prompts']}; a training example with its share of them: "
            f"{example + offline['per_example_s']:.2f} s"
        )
    return "\n".join(lines)


# ---- the runs ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What every run trains from: the warmed-up model, each kind of row, and the shared lengths."""

    model: Path
    cobalt_rows: Path  # the bandit prompts' parquet directory
    online_rows: Path  # one row per training problem
    problems: int
    bandit_prompts: int
    prompt_length: int  # every method's prompt slot: the longest bandit prompt, rounded up


def profile_of(method: str, quickstart_profile: str) -> str:
    """The method's GRPO profile in the main job (what ``quickstart.sh --method`` trains)."""
    return quickstart_profile if method == "cobalt" else f"{method}_{quickstart_profile}"


def train_command(method: str, inputs: Inputs, run, run_dir: Path, args) -> list[str]:
    """``cobalt.train.launch`` for one run on the bench's head: the method's profile, then what
    every method shares (the model, the batch, the lengths, no checkpoints, no validation)."""
    from cobalt.train.profile import load_profile

    profile = profile_of(method, run.cfg.train_profile)
    response = int(load_profile(profile).overrides["data.max_response_length"])
    rows = inputs.cobalt_rows if method == "cobalt" else inputs.online_rows
    return [
        sys.executable,
        "-m",
        "cobalt.train.launch",
        "--profile",
        profile,
        "--address",
        run.address,
        "--logger",
        "console,file",
        f"data.train_files={rows / 'train.parquet'}",
        f"data.val_files={rows / 'test.parquet'}",
        f"actor_rollout_ref.model.path={inputs.model}",
        f"data.train_batch_size={args.problems}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={args.problems}",
        f"data.max_prompt_length={inputs.prompt_length}",
        f"actor_rollout_ref.rollout.max_model_len={inputs.prompt_length + response}",
        f"trainer.total_training_steps={args.steps}",
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        "trainer.resume_mode=disable",
        f"trainer.default_local_dir={run_dir / 'checkpoints'}",
        f"trainer.experiment_name=bench_{run_dir.name}",
    ]


def finished(run_dir: Path, steps: int) -> bool:
    metrics = run_dir / "metrics.jsonl"
    return metrics.exists() and max(read_metrics(metrics), default=0) >= steps


def set_aside(run_dir: Path) -> None:
    """An unfinished run's directory, kept as ``<run>.incomplete-N`` for its logs."""
    n = 1
    while run_dir.with_name(f"{run_dir.name}.incomplete-{n}").exists():
        n += 1
    run_dir.rename(run_dir.with_name(f"{run_dir.name}.incomplete-{n}"))


def train(method: str, inputs: Inputs, run, run_dir: Path, args) -> float | None:
    """Train one run into ``run_dir`` (metrics.jsonl, train.log); its wall time, None if kept."""
    if finished(run_dir, args.steps):
        run.log(f"{run_dir.name}: done already, kept")
        return None
    if run_dir.exists():
        set_aside(run_dir)
    run_dir.mkdir(parents=True)
    cmd = train_command(method, inputs, run, run_dir, args)
    env = {**os.environ, "VERL_FILE_LOGGER_PATH": str(run_dir / "metrics.jsonl")}
    run.log(f"{run_dir.name}: {' '.join(cmd)}")
    started = time.monotonic()
    with open(run_dir / "train.log", "w") as log:
        code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - started
    if code != 0 or not finished(run_dir, args.steps):
        tail = "".join((run_dir / "train.log").read_text(errors="replace").splitlines(True)[-20:])
        raise RuntimeError(
            f"{run_dir.name}: exit {code} after {wall:.0f} s; {run_dir / 'train.log'}:\n{tail}"
        )
    run.log(f"{run_dir.name}: {args.steps} steps in {wall:.0f} s")
    return wall


def rotated(methods: list[str], round_index: int) -> list[str]:
    """The methods in round ``round_index``'s order: each takes every place once in as many rounds."""
    k = round_index % len(methods)
    return methods[k:] + methods[:k]


def prepare(run) -> Inputs:
    """The base through the quickstart's stages (export, problems, warm-up), then, on the bench's
    head, the base model's trajectories, their bandit prompts and the online rows."""
    from cobalt.common import rundir
    from cobalt.common.jsonl import load_jsonl
    from cobalt.pipeline.stages import Chain, longest_prompt, self_debug_side_by_side, stop_engine
    from cobalt.recipes.quickstart.run import bandit_data, make_base, online_data

    base = make_base(run)
    chain = Chain(base.train, run.cfg.train_samples, run.cfg.train_turns)
    trajectories = self_debug_side_by_side(run, "base model", base.model, {"trajectories": chain})
    cobalt_rows = bandit_data(run, trajectories["trajectories"], base.model)
    online_rows = online_data(run, base.train)
    stop_engine(run)
    longest = max(longest_prompt(rows / "train.parquet", base.model) for rows in (cobalt_rows, online_rows))
    prompts = len(load_jsonl(run.root / rundir.bandit_prompts("train")))
    return Inputs(
        model=base.model,
        cobalt_rows=cobalt_rows,
        online_rows=online_rows,
        problems=len(load_jsonl(base.train)),
        bandit_prompts=prompts,
        prompt_length=-(-longest // 64) * 64,
    )


def summarize(out: Path, inputs: Inputs, run, methods: list[str], args) -> dict:
    per_problem = inputs.bandit_prompts / inputs.problems
    runs = {
        method: [
            run_figures(method, read_metrics(out / "runs" / f"r{r}_{method}/metrics.jsonl"), args.problems,
                        per_problem)
            for r in range(1, args.rounds + 1)
        ]
        for method in methods
    }  # fmt: skip
    summaries = {method: across_rounds(figures) for method, figures in runs.items()}
    offline = offline_cost(run.state, inputs.problems, inputs.bandit_prompts)
    return {
        "settings": vars(args) | {"out": str(out)},
        "inputs": {k: str(v) for k, v in dataclasses.asdict(inputs).items()},
        "rounds": runs,
        "summaries": summaries,
        "ratios": ratios(summaries),
        "offline": offline,
    }


def check_resumable(out: Path, settings: dict) -> None:
    """``--out`` is new, empty, or this bench's with the same settings (it resumes)."""
    recorded = out / "bench.json"
    if recorded.exists():
        before = json.loads(recorded.read_text())
        changed = {k: (before.get(k), v) for k, v in settings.items() if before.get(k) != v}
        if changed:
            raise ConfigError(f"{recorded}: made with other settings (was, now): {changed}; use a new --out")
    elif out.exists() and any(out.iterdir()):
        raise ConfigError(
            f"--out {out} is not empty and holds no bench.json: not this bench's; use a new --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    recorded.write_text(json.dumps(settings, indent=1) + "\n")


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", required=True, help="working directory: new, empty, or this bench's (resumes)"
    )
    parser.add_argument("--rounds", type=positive_int, default=3, help="times every method trains")
    parser.add_argument(
        "--steps", type=positive_int, default=6, help="steps per run (the first is not measured)"
    )
    parser.add_argument(
        "--problems",
        type=positive_int,
        default=2,
        help="training examples per step (data.train_batch_size; the main job's 2)",
    )
    parser.add_argument(
        "--methods", default=",".join(METHODS), help="comma-separated, of " + ", ".join(METHODS)
    )
    parser.add_argument(
        "--profile",
        default="quickstart",
        help="configs/<name>.yaml of the main job whose base and GRPO profiles are used",
    )
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or set(methods) - set(METHODS):
        parser.error(f"--methods: expected some of {', '.join(METHODS)}, got {args.methods!r}")
    if args.steps < 2:
        parser.error("--steps: at least 2 (the first step is start-up and is not measured)")
    from cobalt.common.config import from_dict, load_config
    from cobalt.pipeline.stages import Run, interrupt_on_sigterm
    from cobalt.recipes.quickstart.config import QuickstartConfig
    from cobalt.recipes.quickstart.run import private_cluster

    cfg = from_dict(QuickstartConfig, load_config(args.profile), source=args.profile)
    out = Path(args.out).resolve()
    check_resumable(out, {"profile": args.profile, "problems": args.problems, "steps": args.steps})
    run = Run(out / "base", cfg, args.profile, name="bench")
    interrupt_on_sigterm()  # a SIGTERM stops the run in flight and the bench's Ray head too
    with private_cluster(run):
        inputs = prepare(run)
        run.log(
            f"{inputs.problems} problems, {inputs.bandit_prompts} bandit prompts, prompt slot {inputs.prompt_length}"
        )
        for r in range(1, args.rounds + 1):
            for method in rotated(methods, r - 1):
                train(method, inputs, run, out / "runs" / f"r{r}_{method}", args)
    result = summarize(out, inputs, run, methods, args)
    (out / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
    print(table(result["summaries"], result["offline"]))
    print(f"[bench] {out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
