"""Time per training example, side by side: COBALT, GRPO-MT and VeRPO-MT (issue 47).

    .venv/bin/python bench/bench_methods.py --out DIR [--problems 2] [--samples 4] [--steps 2]
                                            [--methods cobalt,grpo_mt,verpo_mt] [--model tiny|smollm2]

One sitting: the three methods train one after the other through ``cobalt.train.launch`` (each on
its own private Ray head), from the same model, on the same problems, with the same samples per
prompt, steps, engine, evaluator and concurrency. The problems are the first ``--problems`` of the
demo set (``cobalt.data.demo``) that have bandit prompts. COBALT trains on the bandit prompts of
those problems' offline trajectories, the online methods on one row per problem
(``cobalt.data.verl_rows.online_row``); every step takes ``--problems`` training examples, a bandit
prompt for COBALT and a problem for an online method (the paper's definitions). The model:
``tiny``, the learning check's warmed-up tiny policy (it writes right and wrong programs, so the
evaluator and GRPO have work), or ``smollm2`` (SmolLM2-135M-Instruct). The profiles are the
learning check's (``learning_check``, ``learning_check_grpo_mt``) or the SmolLM2 ones
(``cpu_smollm2``, ``grpo_mt_cpu``); the engine's settings (:data:`SHARED`) are the online profile's
for every method.

It prints, per method, the means over the steps of veRL's step metrics (``trainer.logger`` file):
seconds per step and per training example, split into generation, evaluation and update; tokens
generated; evaluator requests; generation throughput; and the evaluator wait of an episode; then
each figure's ratio to COBALT's. How each figure is derived: :func:`summarize`. Baseline: COBALT.
Nothing else is timed: the offline trajectories COBALT's prompts come from are not counted here.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cobalt.common.cli import ArgumentParser  # noqa: E402
from cobalt.train.learning_check import read_metrics  # noqa: E402

METHODS = ("cobalt", "grpo_mt", "verpo_mt")
MODELS = {  # model -> (COBALT's profile, the online methods' profile)
    "tiny": ("learning_check", "learning_check_grpo_mt"),
    "smollm2": ("cpu_smollm2", "grpo_mt_cpu"),
}
# the engine and batch settings every method gets, the online profile's values
SHARED = (
    "data.max_prompt_length",
    "actor_rollout_ref.rollout.max_model_len",
    "actor_rollout_ref.rollout.max_num_seqs",
    "actor_rollout_ref.rollout.max_num_batched_tokens",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
)
MICRO = tuple(key for key in SHARED if key.endswith("micro_batch_size_per_gpu"))
VERPO = ("reward.reward_manager.name=VerpoRewardManager", "algorithm.adv_estimator=verpo")


# ---- the figures ---------------------------------------------------------------------------------


def evaluator_requests(method: str, episodes: float, turns: float) -> float:
    """Programs sent to the evaluator in a step: COBALT one per response (its reward); GRPO-MT one
    per turn (public tests) and one per episode (hidden tests); VeRPO-MT two per turn (public
    tests, and every turn on the hidden tests)."""
    per_episode = {"cobalt": 1.0, "grpo_mt": turns + 1.0, "verpo_mt": 2.0 * turns}[method]
    return episodes * per_episode


def step_figures(method: str, data: dict) -> dict[str, float]:
    """One step's figures from its metrics (``timing_s/*`` from veRL, ``rollout/*`` and
    ``reward/*`` from the cobalt_sync trainer). veRL's ``gen`` phase holds the rollout and the
    reward (scored as each episode ends); it is split by the share of an episode's time spent
    waiting for the evaluator (public tests and reward) against generating. Update: the rest of
    the step (old and reference log-probs, advantages, the actor's update, the weight sync)."""
    step, gen = data["timing_s/step"], data["timing_s/gen"]
    generating, waiting = data["rollout/generate_s/mean"], data["rollout/evaluator_wait_s/mean"]
    share = waiting / (generating + waiting) if generating + waiting > 0 else 0.0
    generation = gen * (1 - share)
    tokens, episodes = data["rollout/generated_tokens"], data["rollout/episodes"]
    return {
        "step_s": step,
        "generation_s": generation,
        "evaluation_s": gen * share,
        "update_s": step - gen,
        "tokens": tokens,
        "episodes": episodes,
        "turns": data.get("reward/turns/mean", 1.0),
        "requests": evaluator_requests(method, episodes, data.get("reward/turns/mean", 1.0)),
        "tokens_per_s": tokens / generation if generation > 0 else 0.0,
        "evaluator_wait_s": waiting,
        "reward": data.get("critic/score/mean", float("nan")),
    }


def summarize(method: str, steps: dict[int, dict], examples: int, prompts_per_problem: float) -> dict:
    """Means over the training steps (step 0, validation, is not one), per step and per example:
    ``example_s`` by the paper's definition (a bandit prompt for COBALT, a problem for an online
    method), ``problem_s`` per problem (for COBALT, one pass over all of a problem's bandit
    prompts: ``prompts_per_problem`` examples)."""
    rows = [step_figures(method, data) for step, data in sorted(steps.items()) if step > 0]
    if not rows:
        raise ValueError(f"{method}: no training step in the metrics")
    mean = {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}
    mean["steps"] = len(rows)
    mean["example_s"] = mean["step_s"] / examples
    mean["problem_s"] = mean["example_s"] * (prompts_per_problem if method == "cobalt" else 1.0)
    return mean


RATIOS = ("example_s", "problem_s", "generation_s", "evaluation_s", "update_s", "tokens", "requests")


def ratios(summaries: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Each method's figures over COBALT's (only when COBALT ran)."""
    base = summaries.get("cobalt")
    if not base:
        return {}
    return {
        method: {key: s[key] / base[key] if base[key] else float("nan") for key in RATIOS}
        for method, s in summaries.items()
    }


def table(summaries: dict[str, dict]) -> str:
    """The side-by-side table printed at the end."""
    rows = [
        ("steps", "steps", "{:.0f}"),
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
        ("evaluator wait per episode (s)", "evaluator_wait_s", "{:.2f}"),
        ("reward mean", "reward", "{:+.3f}"),
    ]
    methods = list(summaries)
    lines = [f"{'':32}" + "".join(f"{m:>12}" for m in methods)]
    for label, key, fmt in rows:
        lines.append(f"{label:32}" + "".join(f"{fmt.format(summaries[m][key]):>12}" for m in methods))
    for method, values in ratios(summaries).items():
        lines.append(f"{method} / cobalt: " + ", ".join(f"{k} {v:.2f}x" for k, v in values.items()))
    return "\n".join(lines)


# ---- the runs ------------------------------------------------------------------------------------


def prepare_inputs(out: Path, model: str, problems: int) -> dict:
    """The demo set, the model and the rows of the chosen problems, under ``out``: their bandit prompts
    that fit in the prompt budget, and one online row each."""
    import pandas as pd

    from cobalt.common.jsonl import load_jsonl
    from cobalt.data.verl_rows import online_row, write_parquet
    from cobalt.train.launch import prepare
    from cobalt.train.profile import load_profile

    demo, policy = out / "demo", out / "model"
    paths = [f"data.train_files={demo / 'train.parquet'}", f"actor_rollout_ref.model.path={policy}"]
    prepare(load_profile(MODELS[model][0]), paths)
    bandit = pd.read_parquet(demo / "train.parquet")
    owner = bandit["extra_info"].map(lambda info: info["index"])
    chosen = [p for p in load_jsonl(demo / "problems/train.jsonl") if (owner == p["id"]).any()][:problems]
    if len(chosen) < problems:
        raise SystemExit(
            f"the demo set has {len(chosen)} training problems with bandit prompts, not {problems}"
        )
    ids = [p["id"] for p in chosen]
    rows = out / "rows"
    limit = load_profile(MODELS[model][1]).overrides["data.max_prompt_length"]
    cobalt_rows = fitting(bandit[owner.isin(ids)].to_dict("records"), policy, limit)
    if len(cobalt_rows) < problems:
        raise SystemExit(
            f"{len(cobalt_rows)} bandit prompts of {ids} fit in {limit} tokens, fewer than {problems}"
        )
    write_parquet(cobalt_rows, rows / "cobalt.parquet", overwrite=True)
    write_parquet([online_row(p, "train") for p in chosen], rows / "online.parquet", overwrite=True)
    return {"problems": ids, "bandit_prompts": len(cobalt_rows), "model": str(policy), "rows": str(rows)}


def fitting(rows: list[dict], model: Path, limit: int) -> list[dict]:
    """The rows whose prompt fits in ``limit`` tokens of the model (veRL would drop the others)."""
    from transformers import AutoTokenizer

    from cobalt.train.sft import prompt_ids

    tokenizer = AutoTokenizer.from_pretrained(model)
    return [row for row in rows if len(prompt_ids(tokenizer, row["prompt"])) <= limit]


def method_command(method: str, model: str, inputs: dict, args, run_dir: Path) -> list[str]:
    """``cobalt.train.launch`` for one method: its profile, then what every method shares."""
    from cobalt.train.profile import format_value, load_profile

    cobalt_profile, online_profile = MODELS[model]
    online = load_profile(online_profile)
    profile = cobalt_profile if method == "cobalt" else online_profile
    rows = Path(inputs["rows"]) / ("cobalt.parquet" if method == "cobalt" else "online.parquet")
    overrides = [f"{key}={format_value(online.overrides[key])}" for key in SHARED if key not in MICRO]
    # a micro-batch must divide the step's rows (prompts x samples)
    overrides += [f"{key}={math.gcd(online.overrides[key], args.problems * args.samples)}" for key in MICRO]
    overrides += [
        f"data.train_files={rows}",
        f"data.val_files={rows}",
        f"actor_rollout_ref.model.path={inputs['model']}",
        f"data.train_batch_size={args.problems}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={args.problems}",
        f"actor_rollout_ref.rollout.n={args.samples}",
        f"trainer.total_training_steps={args.steps}",
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        "trainer.resume_mode=disable",
        "trainer.logger=[console,file]",
        f"trainer.default_local_dir={run_dir / 'checkpoints'}",
        f"trainer.experiment_name=bench_{method}",
    ]
    if method != "cobalt":
        loops = ROOT / "configs/train/agent_loops/code_repair.yaml"
        overrides.append(f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}")
    if method == "verpo_mt":
        overrides += VERPO
    evaluator = load_profile(cobalt_profile).evaluator_config
    launch = [sys.executable, "-m", "cobalt.train.launch", "--profile", profile]
    return [*launch, "--evaluator-config", evaluator, *overrides]


def run_method(method: str, cmd: list[str], run_dir: Path) -> float:
    """Train one method into ``run_dir`` (metrics.jsonl, train.log); the command's wall time."""
    run_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH_TOKEN"))}
    env["VERL_FILE_LOGGER_PATH"] = str(run_dir / "metrics.jsonl")
    print(f"[bench] {method}: {' '.join(cmd)}", flush=True)
    started = time.monotonic()
    with open(run_dir / "train.log", "w") as log:
        code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - started
    print(f"[bench] {method}: exit {code} after {wall:.0f} s (log: {run_dir / 'train.log'})", flush=True)
    return wall


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="working directory (new or empty)")
    parser.add_argument("--problems", type=int, default=2, help="problems, and training examples per step")
    parser.add_argument("--samples", type=int, default=4, help="responses or episodes per example")
    parser.add_argument("--steps", type=int, default=2, help="training steps per method")
    parser.add_argument(
        "--methods", default=",".join(METHODS), help="comma-separated, of " + ", ".join(METHODS)
    )
    parser.add_argument(
        "--model", choices=sorted(MODELS), default="tiny", help="the policy all methods train"
    )
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or set(methods) - set(METHODS):
        parser.error(f"--methods: expected some of {', '.join(METHODS)}, got {args.methods!r}")
    out = Path(args.out).resolve()
    if out.exists() and any(out.iterdir()):
        parser.error(f"--out {out} is not empty")
    inputs = prepare_inputs(out, args.model, args.problems)
    per_problem = inputs["bandit_prompts"] / args.problems
    print(f"[bench] problems {inputs['problems']}: {inputs['bandit_prompts']} bandit prompts fit", flush=True)
    summaries, walls = {}, {}
    for method in methods:
        run_dir = out / method
        walls[method] = run_method(method, method_command(method, args.model, inputs, args, run_dir), run_dir)
        try:
            steps = read_metrics(run_dir / "metrics.jsonl")
            summaries[method] = summarize(method, steps, args.problems, per_problem)
        except (ValueError, KeyError) as error:
            print(f"[bench] {method}: no figures ({type(error).__name__}: {error})", flush=True)
    result = {"inputs": inputs, "args": vars(args), "walls_s": walls, "summaries": summaries}
    result["ratios"] = ratios(summaries)
    (out / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
    print(table(summaries) if summaries else "[bench] no method produced figures")
    print(f"[bench] command wall times (Ray, evaluator, model loads included): {walls}")
    return 0 if len(summaries) == len(methods) else 1


if __name__ == "__main__":
    sys.exit(main())
