"""Launch veRL's ``main_ppo`` with a COBALT training profile (``configs/train/<profile>.yaml``).

    python -m cobalt.train.launch --profile cpu_smoke [--address HOST:PORT] [--logger console,file]
                                  [--evaluator-config NAME] [--num-gpus N]
                                  [--dry-run] [--rehearse] [hydra overrides ...]

Steps: export the profile's ``env`` (and ``WANDB_MODE=offline`` when W&B has no key); build what
its ``prepare`` section names when missing (demo data, the warmed-up tiny policy, the SmolLM2
export); start a private Ray head on loopback with the GPUs found here (fake ones on the CPU
platform; stop at once when the profile's ranks need more), or join ``--address`` /
``$RAY_ADDRESS``; deploy the evaluator app (the profile's ``evaluator_config`` or ``--evaluator-config``); run
``python -m verl.trainer.main_ppo`` with the profile's overrides followed by the user's (later wins),
the reward's scores in flight lowered to what the evaluator runs at once (said in the log and in
``--dry-run``'s ``notes``), and ``sdpa`` attention where flash-attn does not import
(``cobalt.train.attention``; said in the log and in ``--dry-run``'s ``attention``); stop the Ray head it started (only that one). ``scripts/train_grpo_*.sh`` are thin wrappers.
"""

from __future__ import annotations

import dataclasses
import json
import netrc
import os
import signal
import subprocess
import sys
from pathlib import Path

from cobalt.common.argtypes import non_negative_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.errors import ConfigError
from cobalt.data.verl_rows import convert, online_row
from cobalt.serve.cluster import head_gpus, ray_cluster
from cobalt.train import rehearsal
from cobalt.train.attention import choose as choose_attention
from cobalt.train.profile import (
    AGENT_LOOPS_KEY,
    Profile,
    agent_loops_path,
    hydra_overrides,
    load_profile,
    override,
    override_error,
    override_value,
    with_shell_plugins,
    within_evaluator_capacity,
    world_size,
)

# --------------------------------------------------------------------------------------------------
# Preparation of demo data and small policies
# --------------------------------------------------------------------------------------------------


def prepare(profile: Profile, overrides: list[str]) -> None:
    """Build what ``profile.prepare`` names, into the paths the run will read (the final
    ``data.train_files`` and ``actor_rollout_ref.model.path``), when they are missing."""
    steps = profile.prepare
    train_file = Path(override_value(overrides, "data.train_files") or "")
    model_dir = Path(override_value(overrides, "actor_rollout_ref.model.path") or "")
    demo_file = demo_rows(train_file) if "online_rows" in steps else train_file
    if "demo_data" in steps and not demo_file.exists():
        cmd = [sys.executable, "-m", "cobalt.data.demo", "--out", str(demo_file.parent)]
        if (steps["demo_data"] or {}).get("limit"):
            cmd += ["--limit", str(steps["demo_data"]["limit"])]
        _run_step("demo data", cmd)
    if "online_rows" in steps and not train_file.exists():
        _log(f"preparing online rows: the problems of {demo_file.parent} -> {train_file.parent}")
        problems = demo_file.parent / "problems"
        convert(problems / "train.jsonl", problems / "dev.jsonl", train_file.parent, False, make=online_row)
    if "tiny_policy" in steps and not (model_dir / "config.json").exists():
        cmd = [
            sys.executable,
            "-m",
            "cobalt.train.tiny_policy",
            "warm",
            "--data",
            str(demo_file),
            "--out",
            str(model_dir),
        ]
        for key, value in (steps["tiny_policy"] or {}).items():
            cmd += [f"--{key}", str(value)]
        _run_step("tiny policy", cmd)
    if "smollm2" in steps and not (model_dir / "config.json").exists():
        _run_step(
            "SmolLM2 export",
            [sys.executable, "-m", "cobalt.train.tiny_policy", "smollm2", "--out", str(model_dir)],
        )


def demo_rows(online_file: Path) -> Path:
    """The demo's bandit rows behind a file of online rows ``<demo>/online/train.parquet``: the
    online rows are built from the demo's problems and the tiny policy is warmed up on its prompts."""
    return online_file.parent.parent / "train.parquet"


def _run_step(what: str, cmd: list[str]) -> None:
    _log(f"preparing {what}: {' '.join(cmd)}")
    subprocess.run(cmd, check=True)


# --------------------------------------------------------------------------------------------------
# The evaluator app and veRL's main_ppo on a Ray cluster (cobalt.serve.cluster)
# --------------------------------------------------------------------------------------------------


def start_evaluator(address: str, config_name: str) -> None:
    """Deploy the evaluator app on the cluster at ``address`` (it outlives this driver)."""
    code = (
        "from cobalt.serve.cluster import connect; from cobalt.serve.evaluator import start_evaluator_app; "
        f"connect({address!r}); start_evaluator_app({config_name!r})"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def evaluator_capacity(config_name: str) -> int:
    from cobalt.serve.evaluator import load_evaluator_config

    return load_evaluator_config(config_name)[1].capacity


def absolute_agent_loops(overrides: list[str]) -> list[str]:
    """``overrides`` with the agent-loop config as an absolute path (``agent_loops_path``)."""

    def absolute(item: str) -> str:
        given = override_value([item], AGENT_LOOPS_KEY)
        return override(AGENT_LOOPS_KEY, str(agent_loops_path(given))) if given else item

    return [absolute(item) for item in overrides]


def main_ppo_command(overrides: list[str]) -> list[str]:
    return [sys.executable, "-m", "verl.trainer.main_ppo", *overrides]


@dataclasses.dataclass(frozen=True)
class HeadPlan:
    """The private Ray head the launcher would start: its logical CPUs and GPUs, and why so many GPUs."""

    num_cpus: int
    num_gpus: int
    gpus_why: str


def head_plan(profile: Profile, overrides: list[str], num_gpus: int | None = None) -> HeadPlan:
    """The private head for ``overrides``' FSDP ranks. On the CPU platform (``VERL_PLATFORM=cpu``)
    its GPUs are fake, ``max(ray.num_gpus, ranks)``; on a GPU machine the GPUs detected there, and
    ConfigError (one line) at once when fewer than the ranks, instead of a run that waits for them.
    ``num_gpus`` (``--num-gpus``) overrides either."""
    ray_cfg, ranks = profile.ray, world_size(overrides)
    cpus = int(ray_cfg.get("num_cpus", os.cpu_count() or 2)) + int(ray_cfg.get("cpus_per_rank", 0)) * ranks
    cpu_platform = os.environ.get("VERL_PLATFORM") == "cpu"
    needed = max(int(ray_cfg.get("num_gpus", 0)), ranks) if cpu_platform else ranks
    gpus, why = head_gpus(num_gpus, cpu_platform, needed)
    return HeadPlan(cpus, gpus, why)


def run(
    profile: Profile,
    address: str | None,
    logger: list[str] | None,
    extra: list[str],
    dry_run: bool = False,
    rehearse: bool = False,
    num_gpus: int | None = None,
    rehearse_prompts: str | None = None,
) -> int:
    staged = None
    if rehearse:
        staged = rehearsal.plan(profile, extra, rehearse_prompts)
        rehearsal.describe(staged, _log)
        profile = staged.profile
    profile = with_shell_plugins(profile, os.environ)
    os.environ.update({k: str(v) for k, v in profile.env.items()})
    joined = bool(address)
    if staged and not dry_run:  # the step's metrics beside its checkpoint; set before the overrides
        # so that a joined cluster's workers get it too (they wrote to their own directory instead)
        metrics = rehearsal.metrics_file(hydra_overrides(profile, logger, extra))
        os.environ.setdefault("VERL_FILE_LOGGER_PATH", str(metrics))
    wandb_note = wandb_offline_note(trainer_loggers(hydra_overrides(profile, logger, extra)), os.environ)
    if wandb_note:
        os.environ["WANDB_MODE"] = "offline"  # before the overrides: forwarded to a joined cluster
    overrides = absolute_agent_loops(hydra_overrides(profile, logger, extra, forward_env=joined))
    capacity = evaluator_capacity(profile.evaluator_config)
    overrides, note = within_evaluator_capacity(overrides, capacity)
    notes = [note] if note else []
    attention = choose_attention(overrides)  # sdpa where flash-attn does not import (veRL's default needs it)
    cut = len(overrides) - len(extra)  # before the user's overrides, which win
    overrides = overrides[:cut] + attention.overrides + overrides[cut:]
    if dry_run:
        plan = {
            "env": profile.env,
            "address": address,
            "evaluator": {"config": profile.evaluator_config, "capacity": capacity},
            "ray_head": None if joined else _head_plan_or_error(profile, overrides, num_gpus),
            "wandb": wandb_note,
            "attention": attention.note,
            "command": main_ppo_command(overrides),
            "notes": notes,
        }
        print(json.dumps(plan, indent=1))
        return 0
    head = None if joined else head_plan(profile, overrides, num_gpus)  # fails before any work
    for line in [wandb_note, *notes, attention.note]:
        if line:
            _log(line)
    # SIGTERM unwinds like Ctrl-C: the running step is killed and a private head stopped
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    prepare(profile, overrides)
    if staged:
        overrides = rehearsal.prepare(staged, overrides, _log)  # the prompt length from the data
        refused = rehearsal.check_full_world(staged, overrides, _log)
        if refused:
            _log(f"veRL refuses the profile's numbers at its full world size: {refused}")
            return 2
    with ray_cluster(
        address,
        num_cpus=head.num_cpus if head else None,
        num_gpus=head.num_gpus if head else 0,
        gpus_why=head.gpus_why if head else None,
        log=_log,
    ) as address:
        start_evaluator(address, profile.evaluator_config)
        env = dict(os.environ, RAY_ADDRESS=address)
        _log(f"main_ppo on {address}: {' '.join(overrides)}")
        returncode = subprocess.run(main_ppo_command(overrides), env=env).returncode
    if staged and returncode == 0:
        rehearsal.report(overrides, Path(os.environ["VERL_FILE_LOGGER_PATH"]), _log)
    return returncode


def _head_plan_or_error(profile: Profile, overrides: list[str], num_gpus: int | None) -> dict:
    try:
        return dataclasses.asdict(head_plan(profile, overrides, num_gpus))
    except ConfigError as e:
        return {"error": str(e)}


def trainer_loggers(overrides: list[str]) -> list[str]:
    """``trainer.logger``'s names (``[console,wandb]``, ``console``, quoted or not)."""
    value = override_value(overrides, "trainer.logger") or ""
    return [name.strip(" '\"") for name in value.strip("[]").split(",") if name.strip(" '\"")]


WANDB_HOST = "api.wandb.ai"


def wandb_offline_note(loggers: list[str], environ, netrc_path: str | None = None) -> str | None:
    """When the run logs to W&B with no way to log in (no ``WANDB_API_KEY``, no ``WANDB_MODE`` of
    offline/disabled, no ``~/.netrc`` entry for api.wandb.ai), the line saying it logs offline
    instead (the launcher then sets ``WANDB_MODE=offline``); None otherwise. Without it wandb
    would stop the trainer asking for a key, after the model is loaded."""
    if "wandb" not in loggers or environ.get("WANDB_API_KEY"):
        return None
    if environ.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun"):
        return None
    if _netrc_has(netrc_path or environ.get("NETRC") or os.path.expanduser("~/.netrc"), WANDB_HOST):
        return None
    where = os.path.join(environ.get("WANDB_DIR") or os.getcwd(), "wandb")
    return f"W&B: no WANDB_API_KEY, logging offline to {where}; sync later with `wandb sync`"


def _netrc_has(path: str, host: str) -> bool:
    try:
        return netrc.netrc(path).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def _log(message: str) -> None:
    print(f"[cobalt.launch] {message}", flush=True)


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", required=True, help="configs/train/<profile>.yaml (or a path)")
    parser.add_argument(
        "--address",
        default=os.environ.get("RAY_ADDRESS"),
        help="join this Ray cluster instead of starting a private head",
    )
    parser.add_argument(
        "--logger", default=None, help="comma-separated trainer loggers: console, tensorboard, wandb, file"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command and exit")
    parser.add_argument(
        "--rehearse",
        action="store_true",
        help="one GRPO step of the profile's topology and batch arithmetic on CPU, with a tiny "
        "model of its family (configs/rehearsal.yaml; every change is printed; fewer ranks where memory "
        "is short, after veRL has checked the numbers at the profile's)",
    )
    parser.add_argument(
        "--evaluator-config",
        default=None,
        help="configs/<name>.yaml of the evaluator (default: the profile's evaluator_config; "
        "evaluator_paper for the paper's 80-replica layout)",
    )
    parser.add_argument(
        "--num-gpus",
        type=non_negative_int,
        default=None,
        help="GPUs a private Ray head offers (default: those detected; on the CPU platform, fake "
        "GPUs for the FSDP ranks)",
    )
    parser.add_argument(
        "--rehearse-prompts",
        default=None,
        help="with --rehearse: a veRL parquet whose prompts (those that fit) fill the step's batch, "
        "instead of the demo set's",
    )
    args, extra = parser.parse_known_args(argv)
    if args.rehearse_prompts and not args.rehearse:
        parser.error("--rehearse-prompts needs --rehearse")
    for item in extra:  # main_ppo would refuse it after the cluster and the evaluator are up
        if override_error(item):
            parser.error(override_error(item))
    logger = args.logger.split(",") if args.logger else None
    try:
        profile = load_profile(args.profile)
        if args.evaluator_config:
            profile = dataclasses.replace(profile, evaluator_config=args.evaluator_config)
        return run(profile, args.address, logger, extra, args.dry_run, args.rehearse, args.num_gpus,
                   args.rehearse_prompts)  # fmt: skip
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
