"""The main job with and without transparent huge pages for glibc's mapped buffers, in one sitting.

    .venv/bin/python bench/bench_quickstart_hugepages.py [--profile quickstart] [--repeats 1] [--out DIR]

The CPU profiles (``configs/train/cpu_smoke.yaml``, and so every profile that extends it) set
``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``. Whether that helps depends on the kernel's transparent
huge pages: with ``defrag`` on ``madvise`` a hinted mapping may compact memory when it faults in.
This bench runs ``bash scripts/quickstart.sh --profile P`` alternately from a copy of ``configs/``
without the tunable (the baseline) and from one with it, each in a new run directory and a fresh
``HOME``, and prints every stage's seconds (the run's ``stages.json``), the whole command's, and
each ratio to the baseline, with the kernel's huge-page settings.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from cobalt.common.cli import ArgumentParser

ROOT = Path(__file__).resolve().parents[1]
TUNABLE = "glibc.malloc.hugetlb=1"
VARIANTS = {"4 KiB pages (baseline)": None, "huge pages (configured)": TUNABLE}
THP = Path("/sys/kernel/mm/transparent_hugepage")


def config_copy(tunable: str | None, work: Path) -> Path:
    """configs/ with GLIBC_TUNABLES set to ``tunable`` (or removed) in every profile's env."""
    target = work / ("configs-" + ("huge" if tunable else "small"))
    shutil.copytree(ROOT / "configs", target)
    for path in target.rglob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        env = data.get("env") if isinstance(data, dict) else None
        if isinstance(env, dict) and "GLIBC_TUNABLES" in env:
            if tunable is None:
                env.pop("GLIBC_TUNABLES")
            else:
                env["GLIBC_TUNABLES"] = tunable
            path.write_text(yaml.safe_dump(data, sort_keys=False))
    return target


def run_once(profile: str, tunable: str | None, work: Path) -> dict:
    home = Path(tempfile.mkdtemp(dir=work, prefix="home-"))
    run_dir = Path(tempfile.mkdtemp(dir=work, prefix="run-"))
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    env.update(COBALT_CONFIG_DIR=str(config_copy(tunable, home)), HOME=str(home))
    start = time.monotonic()
    done = subprocess.run(
        ["bash", str(ROOT / "scripts/quickstart.sh"), "--profile", profile, "--run-dir", str(run_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(
            f"the quickstart failed ({done.returncode}); its run: {run_dir}\n{done.stderr[-3000:]}"
        )
    stages = json.loads((run_dir / "stages.json").read_text())
    return {"command_s": seconds, "stages": stages, "run_dir": str(run_dir)}


def stage_seconds(stages: dict) -> dict[str, float]:
    """Each stage's seconds, as ``stages.json`` holds them ({stage: {"seconds": s}, "commands": ...})."""
    return {name: float(value["seconds"]) for name, value in stages.items() if "seconds" in value}


def main(argv=None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="quickstart", help="configs/<name>.yaml of the main job")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each variant, alternated")
    parser.add_argument("--out", type=Path, default=None, help="where the runs go (default: a temp dir)")
    args = parser.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-quickstart-hugepages-"))
    work.mkdir(parents=True, exist_ok=True)
    settings = {
        name: (THP / name).read_text().strip() for name in ("enabled", "defrag") if (THP / name).exists()
    }
    print(f"transparent huge pages: {settings or 'unknown'}; runs under {work}", flush=True)
    results: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for repeat in range(args.repeats):
        for name, tunable in VARIANTS.items():
            result = run_once(args.profile, tunable, work)
            results[name].append(result)
            print(f"[{repeat + 1}/{args.repeats}] {name}: {result['command_s']:.0f} s", flush=True)
    base_name = next(iter(VARIANTS))
    base = [stage_seconds(r["stages"]) for r in results[base_name]]
    for name, runs in results.items():
        commands = [r["command_s"] for r in runs]
        command = sorted(commands)[len(commands) // 2]
        base_command = sorted(r["command_s"] for r in results[base_name])[len(commands) // 2]
        print(f"\n{name}: the command {command:.0f} s ({command / base_command:.2f}x the baseline)")
        for stage, seconds in stage_seconds(runs[0]["stages"]).items():
            reference = base[0].get(stage)
            ratio = f" ({seconds / reference:.2f}x)" if reference else ""
            print(f"  {stage:32s} {seconds:7.1f} s{ratio}")
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
