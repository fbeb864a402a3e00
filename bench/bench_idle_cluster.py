"""What a deployed but idle cluster costs: the CPU busy fraction of the machine while nothing is
asked of it, as the test session's fixtures build it up (tests/conftest.py):

    .venv/bin/python bench/bench_idle_cluster.py [--seconds 60] [--settle 20]

1. a private Ray head with Serve started (its HTTP proxy on loopback);
2. plus the evaluator app (configs/evaluator.yaml);
3. plus a tiny random policy served by the engine app (configs/engine.yaml, vLLM on CPU).

Each stage settles for ``--settle`` seconds, then ``/proc/stat`` is read over ``--seconds``. The
baseline is the machine with none of it, measured first the same way. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cobalt.common.cli import ArgumentParser

os.environ.setdefault("RAY_AUTH_MODE", "token")  # before anything imports ray


def busy_percent(seconds: float) -> float:
    """Busy share of all cores over ``seconds``, from /proc/stat."""

    def read() -> tuple[int, int]:
        fields = list(map(int, Path("/proc/stat").read_text().splitlines()[0].split()[1:9]))
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    total0, idle0 = read()
    time.sleep(seconds)
    total1, idle1 = read()
    return 100 * (1 - (idle1 - idle0) / (total1 - total0))


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60, help="measuring window per stage")
    parser.add_argument("--settle", type=float, default=20, help="wait after each start-up")
    args = parser.parse_args(argv)

    import yaml

    from cobalt.common.config import load_config
    from cobalt.serve.cluster import PrivateRayHead, connect, free_port
    from cobalt.serve.engine import load_engine_config, start_engine_app
    from cobalt.serve.evaluator import start_evaluator_app
    from cobalt.train.tiny_policy import random_policy

    def report(stage: str, baseline: float | None = None) -> float:
        time.sleep(args.settle)
        busy = busy_percent(args.seconds)
        extra = "" if baseline is None else f" (+{busy - baseline:.1f} points over the idle machine)"
        print(f"{stage:<38} busy {busy:5.1f} % of {os.cpu_count()} cores{extra}", flush=True)
        return busy

    baseline = report("idle machine")
    head = PrivateRayHead(num_cpus=8)
    try:
        head.wait_ready()
        with head.exported(), tempfile.TemporaryDirectory() as work:
            connect(head.address)
            from ray import serve

            serve.start(http_options={"host": "127.0.0.1", "port": free_port()})
            report("Ray head + Serve", baseline)
            start_evaluator_app("evaluator")
            report("+ evaluator app", baseline)
            config = {**load_config("engine"), "app_name": "engine_idle"}
            config["llm"]["runtime_env"]["env_vars"]["VLLM_CPU_KVCACHE_SPACE"] = "1"
            config_path = Path(work, "engine.yaml")
            config_path.write_text(yaml.safe_dump(config))
            start_engine_app(str(random_policy(Path(work, "random"))), load_engine_config(str(config_path)))
            report("+ engine app (tiny vLLM replica)", baseline)
            serve.shutdown()
            import ray

            ray.shutdown()
    finally:
        head.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
