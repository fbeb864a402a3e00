"""Wall time and peak memory of the CPU rehearsal of each paper profile (``--rehearse``).

    .venv/bin/python bench/bench_rehearsal.py [--profiles multi_turn_qwen3_8b ...] [--workdir DIR] [--chain]

Each rehearsal runs as a user would start it (``scripts/train_grpo_*.sh --profile P --rehearse``,
its own private Ray head; with ``--chain`` the paper's whole chain, ``scripts/reproduce_paper.sh
--rehearse --profile P``, on the embedded problems written as TACO-verified and LiveCodeBench files)
in ``--workdir`` (default: a new temp dir; the demo data and tiny models
it builds are reused by the later profiles). Peak memory is the largest sum of proportional set
sizes (PSS: shared pages split among the processes sharing them, so the sum is real memory) over
the launcher and all its descendants (Ray head, raylet, FSDP workers, vLLM replicas, evaluator
replicas), sampled every second. Baseline: none -- the paper's GPU runs cannot be timed
here; the figures say what a rehearsal costs before a GPU run.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from cobalt.common.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = {
    "multi_turn_qwen3_8b": "train_grpo_multi_turn.sh",
    "multi_turn_r1_distill_llama_8b": "train_grpo_multi_turn.sh",
    "single_turn_r1_distill_llama_8b": "train_grpo_single_turn.sh",
}


def tree_pss(root: int) -> int:
    """Proportional set size in bytes of ``root`` and every descendant (by parent pid, /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _pss(pid)
        todo += children.get(pid, [])
    return total


def _pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rehearse(profile: str, workdir: Path, chain: bool = False) -> dict:
    cmd = ["bash", str(ROOT / "scripts" / SCRIPTS[profile]), "--profile", profile, "--rehearse"]
    log = workdir / f"{profile}.log"
    if chain:
        from cobalt.data.embedded import LCB_FILE, TACO_FILE, write_raw

        if not (workdir / TACO_FILE).exists():  # as the CI test: 4 TACO problems, 3 LiveCodeBench
            for path in write_raw(workdir):
                path.write_text(
                    "".join(path.read_text().splitlines(keepends=True)[: 4 if path.name == TACO_FILE else 3])
                )
        cmd = ["bash", str(ROOT / "scripts/reproduce_paper.sh"), "--rehearse", "--profile", profile,
               "--taco", TACO_FILE, "--lcb", LCB_FILE, "--run-dir", str(workdir / f"chain_{profile}")]  # fmt: skip
        log = workdir / f"chain_{profile}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    peak, started = 0, time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=env)
        done = threading.Event()

        def sample():
            nonlocal peak
            while not done.is_set():
                peak = max(peak, tree_pss(proc.pid))
                done.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        returncode = proc.wait()
        done.set()
        sampler.join()
    summary = _step_summary(workdir / f"chain_{profile}/logs/grpo.log" if chain else log)
    return {
        "profile": profile,
        "what": "the paper's chain" if chain else "one GRPO step",
        "exit": returncode,
        "wall_s": round(time.monotonic() - started, 1),
        "peak_pss_gib": round(peak / 2**30, 2),
        **summary,
        "log": str(log),
    }


def _step_summary(log: Path) -> dict:
    """world size, shard count and step time from the rehearsal's closing report."""
    text = log.read_text(errors="replace")
    start = text.rfind("rehearsal step: {")
    if start < 0:
        return {}
    report, _ = json.JSONDecoder().raw_decode(text[start + len("rehearsal step: ") :])
    return {
        "world_size": report["world_size"],
        "rollout_replicas": report["rollout_replicas"],
        "model_shards": report["model_shards"],
        "step_s": round(report["metrics"].get("timing_s/step", float("nan")), 1),
    }


def main() -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", nargs="+", default=list(SCRIPTS), choices=list(SCRIPTS))
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--chain", action="store_true", help="rehearse the paper's whole chain, not only GRPO"
    )
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cobalt-rehearsal-"))
    workdir.mkdir(parents=True, exist_ok=True)
    for profile in args.profiles:
        print(json.dumps(rehearse(profile, workdir, args.chain)), flush=True)


if __name__ == "__main__":
    main()
