"""What the real-trainer tests share: their environment, a logged subprocess run, and the demo
bandit data with the warmed-up tiny policy that ``cpu_smoke`` trains."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "WANDB_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "token",
}


def run(cmd: list[str], log: Path, timeout: int, env: dict[str, str] | None = None) -> float:
    """``cmd`` in ``log``'s directory with its output in ``log``; must exit 0; its seconds."""
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.run(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=log.parent,
            timeout=timeout,
            env={**os.environ, **ENV, **(env or {})},
        )
    assert proc.returncode == 0, (
        f"{cmd[:4]} failed ({proc.returncode}); end of {log}:\n" + log.read_text()[-4000:]
    )
    return time.monotonic() - started


def demo_data_and_policy(work: Path) -> dict[str, float]:
    """``work/demo`` (12 embedded problems) and ``work/policy``; the seconds of each step."""
    demo = [sys.executable, "-m", "cobalt.data.demo", "--out", str(work / "demo"), "--limit", "12"]
    warm = [
        sys.executable,
        "-m",
        "cobalt.train.tiny_policy",
        "warm",
        "--data",
        str(work / "demo/train.parquet"),
    ]
    warm += ["--out", str(work / "policy"), "--max_prompt_tokens", "320"]
    return {
        "demo_data": run(demo, work / "demo.log", timeout=300),
        "warm_up": run(warm, work / "warm.log", timeout=300),
    }
