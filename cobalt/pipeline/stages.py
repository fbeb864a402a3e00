"""The machinery of a resumable chain of stages: the quickstart (:mod:`cobalt.recipes.quickstart.run`) and the
paper's chain (:mod:`cobalt.recipes.paper.reproduce`) are both built from it.

A :class:`Run` owns a run directory, records each stage's time and exact command in
``stages.json``, and skips a stage whose output is already complete, so re-running a chain resumes
it. A *self-debugging chain* (single-turn → multi-turn with feedback → hidden-test evaluation) is
three of the project's command lines; :func:`self_debug_side_by_side` runs several of them for one
model on one deployed engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cobalt.common import rundir
from cobalt.serve.cluster import die_with_this_thread

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def line_count(path: Path) -> int:
    return sum(1 for line in path.open(encoding="utf-8") if line.strip()) if path.exists() else 0


def stop_gracefully(proc: subprocess.Popen, grace_s: float = 60.0) -> None:
    """Ask a command to stop (SIGTERM) and give it ``grace_s`` before killing it: killed at once,
    the launcher cannot stop its veRL trainer, which went on, orphaned, after an interrupt."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def machine_cpu_seconds() -> float | None:
    """CPU-seconds the whole machine has been busy since boot (``/proc/stat``: every state but idle
    and iowait, summed over cores); None where there is no ``/proc/stat``. A stage's difference is its
    CPU time when the machine runs nothing else (a design's cost per training example)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


class Run:
    """The run directory, the stage bookkeeping (times, skips) and the commands.

    ``cfg`` needs ``sampling`` (temperature, top_p, max_tokens, enable_thinking), ``MAX_TOKENS``
    (the recipe's answer budget) and ``engine_config``; ``evaluator_config`` when it has one."""

    def __init__(self, root: Path, cfg, profile: str, name: str = "quickstart"):
        self.root, self.cfg, self.profile, self.name = root, cfg, profile, name
        self.state_path = root / rundir.STAGES
        self.state = json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        self.address: str | None = None
        self._lock = threading.Lock()  # stages of the self-debugging chains run in threads
        self._running: set[subprocess.Popen] = set()  # commands in flight

    def log(self, message: str) -> None:
        print(f"[{self.name} {datetime.now():%H:%M:%S}] {message}", flush=True)

    def stop_commands(self) -> None:
        """Stop every command in flight (those of other threads: only the main one sees signals)."""
        for proc in list(self._running):
            stop_gracefully(proc)

    def path(self, relative: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def stage(self, name: str, done, action, concurrent: bool = False) -> None:
        """Run ``action`` unless ``done()`` says its output is complete; record its time."""
        if done():
            self.log(f"{name}: done already, skipped")
            with self._lock:
                self.state.setdefault(name, {}).setdefault("seconds", 0.0)
            return
        self.timed(name, action, concurrent)
        if not done():
            raise RuntimeError(f"stage {name!r} finished without its output")

    def timed(self, name: str, action, concurrent: bool = False):
        """Run ``action`` and record its time; a ``concurrent`` stage ran beside another one (its
        time is inside the enclosing block's and is not added to the total). A stage interrupted
        and resumed is timed over every invocation: what the earlier ones spent is kept (marked
        ``unfinished`` until the stage ends), or a resumed stage would read as cheap as its last part."""
        self.log(f"{name}: running")
        with self._lock:  # keeps the report's order: a block before the stages that ran inside it
            earlier = self.state.get(name, {})
            earlier = earlier if earlier.get("unfinished") else {}
            self.state.setdefault(name, {"seconds": 0.0})
        started, cpu = time.monotonic(), machine_cpu_seconds()

        def record(finished: bool) -> dict:
            measured = {"seconds": round(earlier.get("seconds", 0.0) + time.monotonic() - started, 1)}
            if cpu is not None:
                measured["machine_cpu_s"] = round(
                    earlier.get("machine_cpu_s", 0.0) + machine_cpu_seconds() - cpu, 1
                )
            with self._lock:
                self.state[name] = {
                    **measured,
                    **({"concurrent": True} if concurrent else {}),
                    **({} if finished else {"unfinished": True}),
                    **({"invocations": earlier.get("invocations", 1) + 1} if earlier else {}),
                }
                self.save_state()
            return measured

        try:
            result = action()
        except BaseException:
            record(finished=False)
            raise
        seconds = record(finished=True)["seconds"]
        self.log(f"{name}: done in {seconds:.0f} s")
        return result

    def save_state(self) -> None:
        rundir.write_atomically(self.state_path, json.dumps(self.state, indent=1))

    def command(self, name: str, args: list, env: dict | None = None) -> None:
        """Run one of the project's command lines, its output in ``logs/<name>.log``."""
        log_path = self.path(rundir.log(name))
        printable = " ".join(str(a) for a in args)
        with self._lock:
            self.state.setdefault("commands", {})[name] = printable
        self.log(f"  $ {printable}")
        with open(log_path, "a") as out:
            proc = subprocess.Popen(
                [*die_with_this_thread(), *(str(a) for a in args)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=ROOT,
            )
        self._running.add(proc)
        try:
            returncode = proc.wait()
        except BaseException:  # interrupted: the command stops too, cleanly
            stop_gracefully(proc)
            raise
        finally:
            self._running.discard(proc)
        if returncode != 0:
            tail = "".join(log_path.read_text(errors="replace").splitlines(keepends=True)[-30:])
            raise RuntimeError(f"{name} failed (exit {returncode}); last lines of {log_path}:\n{tail}")

    def inference_args(self, temperature: float | None = None) -> list:
        engine = ["--address", self.address, "--engine-config", self.cfg.engine_config]
        return engine + sampling_flags(self.cfg, temperature)


def sampling(cfg) -> dict:
    """A recipe's sampling settings (``cfg.sampling``) over the defaults, whose answer budget is
    the recipe's own (``cfg.MAX_TOKENS``)."""
    defaults = {"temperature": 0.6, "top_p": 0.95, "max_tokens": cfg.MAX_TOKENS, "enable_thinking": False}
    return defaults | cfg.sampling


def sampling_flags(cfg, temperature: float | None = None) -> list:
    """The inference commands' sampling flags; ``temperature`` (e.g. 0: greedy) over the recipe's."""
    s = sampling(cfg)
    temperature = s["temperature"] if temperature is None else temperature
    flags = ["--temperature", temperature, "--top_p", s["top_p"], "--max_tokens", s["max_tokens"]]
    return flags + (["--enable-thinking"] if s["enable_thinking"] else [])


@dataclass(frozen=True)
class Chain:
    """One self-debugging chain: its problems, samples per problem, feedback turns, and the tests
    whose feedback the model sees (the perturbed ones for the hacking-resistance data)."""

    problems: Path
    samples: int
    turns: int
    public_field: str = "public_test_cases"
    temperature: float | None = None  # None: the run's sampling temperature; 0: greedy


CHAIN_NAMES = {  # tag: what a self-debugging chain is, in stage names
    "trajectories": "trajectories",
    "trajectories_perturbed": "trajectories on perturbed tests",
    "eval_base": "base evaluation",
    "eval_base_train": "base on training problems",
    "eval_base_dev": "base on TACO-dev (perturbed)",
    "eval_base_families": "base on held-out families",
    "eval_trained": "trained evaluation",
    "eval_trained_train": "trained on training problems",
    "eval_trained_dev": "trained on TACO-dev (perturbed)",
    "eval_trained_families": "trained on held-out families",
    "eval_control": "control evaluation",
    "eval_control_train": "control on training problems",
    "eval_control_families": "control on held-out families",
}


def evaluated(run: Run, tag: str) -> Path:
    return run.root / rundir.evaluated(tag)


def self_debug(run: Run, tag: str, model: Path, chain: Chain, concurrent: bool = False) -> Path:
    """single-turn → multi-turn → hidden-test evaluation; returns the evaluated trajectories."""
    single, multi, out = (
        run.root / f"{tag}/single.jsonl",
        run.root / f"{tag}/multi.jsonl",
        evaluated(run, tag),
    )
    n = line_count(chain.problems)
    common = ["--model", model, *run.inference_args(chain.temperature)]
    single_cmd = [
        SCRIPTS / "run_single_turn.py",
        "-i",
        chain.problems,
        "-o",
        run.path(f"{tag}/single.jsonl"),
        "-n",
        chain.samples,
        *common,
    ]
    multi_cmd = [
        SCRIPTS / "run_multi_turn.py",
        "-i",
        single,
        "-o",
        multi,
        "--turns",
        chain.turns,
        "--public_field",
        chain.public_field,
        *common,
    ]
    eval_cmd = [
        SCRIPTS / "eval_multi_turn.py",
        "-i",
        multi,
        "-o",
        out,
        "--address",
        run.address,
        "--label",
        tag,
    ]
    run.stage(
        f"{tag}: single-turn",
        lambda: line_count(single) == n,
        lambda: run.command(f"{tag}_single", single_cmd),
        concurrent,
    )
    run.stage(
        f"{tag}: multi-turn",
        lambda: line_count(multi) == n,
        lambda: run.command(f"{tag}_multi", multi_cmd),
        concurrent,
    )
    run.stage(
        f"{tag}: hidden tests",
        lambda: line_count(out) == n,
        lambda: run.command(f"{tag}_eval", eval_cmd),
        concurrent,
    )
    return out


def needs_generation(run: Run, tag: str, problems: Path) -> bool:
    """Whether a self-debugging chain still has a stage that talks to the engine."""
    n = line_count(problems)
    return any(line_count(run.root / f"{tag}/{name}.jsonl") != n for name in ("single", "multi"))


def deploy(run: Run, label: str, model: Path) -> None:
    """Deploy the engine serving ``model`` and the evaluator before the stages that use them
    (each command would deploy what is missing, but two deploying at once would race)."""
    from cobalt.infer.runtime import EngineSpec, serve_evaluator, serve_model

    def action():
        serve_model(EngineSpec(kind="serve", model=str(model), config=run.cfg.engine_config))
        serve_evaluator(getattr(run.cfg, "evaluator_config", None))

    run.timed(f"{label}: deploy engine and evaluator", action)


def self_debug_side_by_side(run: Run, label: str, model: Path, chains: dict[str, Chain]) -> dict[str, Path]:
    """Self-debugging chains (``{tag: Chain}``) of one model side by side on one engine, so that
    a chain's few conversations share the engine's decode steps with the others' instead of
    running alone afterwards (measured on 2 cores: deploy + trajectories and base evaluation
    875 s, one after the other 1,056 s). Returns each chain's evaluated file."""
    if any(needs_generation(run, tag, chain.problems) for tag, chain in chains.items()):
        deploy(run, label, model)
    if len(chains) == 1:
        ((tag, chain),) = chains.items()
        return {tag: self_debug(run, tag, model, chain)}

    def together():
        with ThreadPoolExecutor(len(chains)) as pool:
            futures = [
                pool.submit(self_debug, run, tag, model, chain, concurrent=True)
                for tag, chain in chains.items()
            ]
            try:
                for future in futures:
                    future.result()
            except BaseException:
                run.stop_commands()
                raise

    def done():
        return all(
            line_count(evaluated(run, tag)) == line_count(chain.problems) for tag, chain in chains.items()
        )

    run.stage("self-debugging: " + " ∥ ".join(CHAIN_NAMES.get(tag, tag) for tag in chains), done, together)
    return {tag: evaluated(run, tag) for tag in chains}


def stop_engine(run: Run) -> None:
    """Free the engine app's CPUs and memory (the next model or the trainer needs them)."""
    from ray import serve

    from cobalt.serve.engine import load_engine_config

    app = load_engine_config(run.cfg.engine_config).app_name
    if app in serve.status().applications:
        run.log(f"stopping the engine app {app!r}")
        serve.delete(app)


def longest_prompt(parquet: Path, tokenizer_dir: Path) -> int:
    """Tokens of the longest prompt of a veRL parquet, as veRL renders it (chat template, generation prompt)."""
    import pandas as pd
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    return max(
        len(
            tokenizer.apply_chat_template(
                [dict(m) for m in messages], add_generation_prompt=True, return_dict=False
            )
        )
        for messages in pd.read_parquet(parquet, columns=["prompt"])["prompt"]
    )


def fitted_lengths(profile_name: str, parquet: Path, tokenizer_dir: Path, multiple: int = 64) -> list[str]:
    """Overrides that shrink the prompt length to the longest prompt of ``parquet`` (rounded up).

    On CPU every row is padded to prompt + response length (no remove-padding kernels), so a
    profile's 1024-token prompt slot around 250-token prompts triples the cost of each step; the
    profile's value stays the upper bound (longer prompts are still filtered out by veRL)."""
    from cobalt.train.profile import load_profile

    overrides = load_profile(profile_name).overrides
    limit, response = int(overrides["data.max_prompt_length"]), int(overrides["data.max_response_length"])
    fitted = min(limit, -(-longest_prompt(parquet, tokenizer_dir) // multiple) * multiple)
    return [
        f"data.max_prompt_length={fitted}",
        f"actor_rollout_ref.rollout.max_model_len={fitted + response}",
    ]


def add_run_dir_arguments(parser, where: str) -> None:
    """``--run-dir`` and ``--new``, which :func:`pick_run_dir` reads; ``where`` says where runs resume."""
    parser.add_argument(
        "--run-dir", default=None, help=f"run directory (default: resume the newest unfinished run {where})"
    )
    parser.add_argument("--new", action="store_true", help="start a new run even if an unfinished one exists")


def pick_run_dir(runs: Path, explicit: str | None, new: bool) -> Path:
    """``--run-dir``, else the newest unfinished run (to resume), else a new timestamped one."""
    if explicit:
        return Path(explicit)
    if not new and runs.exists():
        unfinished = sorted(p for p in runs.iterdir() if p.is_dir() and not rundir.is_done(p))
        if unfinished:
            return unfinished[-1]
    return runs / datetime.now().strftime("%Y%m%d-%H%M%S")


def interrupt_on_sigterm() -> None:
    """SIGTERM ends a chain as Ctrl-C does: its commands are stopped cleanly, the run resumable."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def run_to_report(run: Run, chain) -> int:
    """Run ``chain(run)`` (which returns its report's path) as a command line does: SIGTERM or
    Ctrl-C stop it cleanly and resumably (exit 130), a stage's failure is one ``error:`` line
    (exit 1)."""
    run.log(f"run directory {run.root} (profile {run.profile}); re-run the same command to resume")
    interrupt_on_sigterm()
    try:
        report = chain(run)
    except KeyboardInterrupt:
        run.log("interrupted; re-run the same command to resume")
        return 130
    except (RuntimeError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    run.log(f"report: {report}")
    return 0
