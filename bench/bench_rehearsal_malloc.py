"""A rehearsal step under three settings of glibc's allocator for the FSDP ranks.

    .venv/bin/python bench/bench_rehearsal_malloc.py [--profile P] [--rehearse-prompts PARQUET]
        [--variants NAME ...]

The rehearsal once mapped every buffer above 128 KiB afresh (``MALLOC_MMAP_THRESHOLD_``, against
heap growth in the FSDP ranks) and so faulted in every page of every logits and activation buffer;
``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (glibc >= 2.35) asks for transparent huge pages instead of
4 KiB ones. ``configs/rehearsal.yaml`` now keeps glibc's own threshold (which rises to the size of
the buffers freed, so repeated buffers come from the heap) with huge pages. This bench runs the
same rehearsal step under each setting, one after the other, each from a copy of ``configs/``
(``COBALT_CONFIG_DIR``) that differs only in those variables, and prints the step's phases, the
ranks' user and kernel CPU seconds, their page faults, the machine's peak memory in use, and each
figure's ratio to the first setting run (by default the fixed threshold on 4 KiB pages).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from bench_ci_load import memory_used_gib

from cobalt.common.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("gen", "old_log_prob", "ref", "update_actor", "step")
HUGE_PAGES = "glibc.malloc.hugetlb=1"
# name -> the rehearsal env's allocator variables (absent: unset)
VARIANTS = {
    "4k-pages": {"MALLOC_MMAP_THRESHOLD_": "131072"},  # the baseline: the rehearsal before the tunable
    "huge-pages": {"MALLOC_MMAP_THRESHOLD_": "131072", "GLIBC_TUNABLES": HUGE_PAGES},
    "glibc-threshold": {"GLIBC_TUNABLES": HUGE_PAGES},  # huge pages, glibc's own mmap threshold
}
ALLOCATOR_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")


class RankSampler(threading.Thread):
    """CPU seconds (user, kernel) and minor page faults of veRL's FSDP workers, sampled every 2 s
    (a worker's last sample stands once it has exited), and the machine's peak memory in use."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: dict[str, tuple[float, float, int]] = {}
        self.peak_used_gib = 0.0
        self.done = threading.Event()

    def run(self):
        tick = os.sysconf("SC_CLK_TCK")
        while not self.done.wait(2):
            self.peak_used_gib = max(self.peak_used_gib, memory_used_gib())
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::WorkerDict"):
                        continue
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                self.seen[pid] = (int(fields[11]) / tick, int(fields[12]) / tick, int(fields[7]))

    def totals(self) -> dict[str, float]:
        return {
            "ranks_user_s": sum(v[0] for v in self.seen.values()),
            "ranks_kernel_s": sum(v[1] for v in self.seen.values()),
            "ranks_page_faults_M": sum(v[2] for v in self.seen.values()) / 1e6,
            "peak_used_gib": self.peak_used_gib,
        }


def config_copy(allocator: dict[str, str], into: Path) -> Path:
    configs = into / "configs"
    shutil.copytree(ROOT / "configs", configs)
    path = configs / "rehearsal.yaml"
    spec = yaml.safe_load(path.read_text())
    for name in ALLOCATOR_VARIABLES:
        spec["env"].pop(name, None)
    spec["env"].update(allocator)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return configs


def step_metrics(log: str) -> dict:
    """The step's metrics: the last line of veRL's metrics file, beside the checkpoint that the
    launcher's ``rehearsal step: {...}`` names (that summary keeps only the step's total time)."""
    summary = json.JSONDecoder().raw_decode(log.rsplit("rehearsal step: ", 1)[-1])[0]
    metrics = Path(summary["checkpoint"]).parents[1] / "metrics.jsonl"
    return json.loads(metrics.read_text().splitlines()[-1])["data"]


def rehearse(profile: str, prompts: str | None, allocator: dict[str, str], work: Path) -> dict:
    env = dict(os.environ, COBALT_CONFIG_DIR=str(config_copy(allocator, work)), HOME=str(work / "home"))
    for name in ALLOCATOR_VARIABLES:  # none taken from the shell either
        env.pop(name, None)
    (work / "home").mkdir()
    command = [sys.executable, "-m", "cobalt.train.launch", "--profile", profile, "--rehearse"]
    command += ["--rehearse-prompts", prompts] if prompts else []
    sampler = RankSampler()
    sampler.start()
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    sampler.done.set()
    sampler.join()
    (work / "launch.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"the rehearsal failed ({proc.returncode}); its log: {work / 'launch.log'}")
    metrics = step_metrics(proc.stdout + proc.stderr)
    return {"wall_s": wall, **{p: metrics[f"timing_s/{p}"] for p in PHASES}, **sampler.totals()}


def main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="multi_turn_qwen3_8b", help="the GPU profile rehearsed")
    parser.add_argument(
        "--rehearse-prompts",
        help="bandit prompts (parquet) to rehearse on, as the paper chain passes its own",
    )
    parser.add_argument(
        "--workdir", help="where each run's configs, HOME and log go (default: a new temp dir)"
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        metavar="NAME",
        help=f"the settings to run, the first the baseline (default: all: {' '.join(VARIANTS)})",
    )
    args = parser.parse_args(argv)
    top = Path(args.workdir or tempfile.mkdtemp(prefix="bench-rehearsal-malloc-"))
    results = {}
    for i, name in enumerate(args.variants):
        work = top / f"run{i}"
        work.mkdir(parents=True)
        print(f"{name}: rehearsing {args.profile} ({work})", flush=True)
        results[name] = rehearse(args.profile, args.rehearse_prompts, VARIANTS[name], work)
    baseline = results[args.variants[0]]
    print(f"\n{'':28}" + "".join(f"{key:>22}" for key in baseline))
    for name, row in results.items():
        cells = "".join(f"{row[k]:>14.1f} ({row[k] / baseline[k]:4.2f}x)" for k in row)
        print(f"{name:28}{cells}")
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
