"""The whole data chain on the embedded problem set, in one command (for the CPU smoke runs):

    python -m cobalt.data.demo --out data/demo        # → data/demo/train.parquet, test.parquet

raw (TACO shape) → preprocessed problems (train/dev) → synthetic trajectories on the real
evaluator → bandit prompts (train: max-variance, dev: ``--is-test``) → veRL parquet. The
single-turn parquet files are written too (``single_turn/``). Without ``--model-name`` a tiny
offline tokenizer is built for the 10,000-token limit.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import hashlib
import itertools
import json
from pathlib import Path

from cobalt.common.argtypes import fraction, positive_int
from cobalt.common.cli import ArgumentParser
from cobalt.common.jsonl import atomic_output, load_jsonl, write_jsonl
from cobalt.data import bandit, cli, taco
from cobalt.data.sources import iter_local
from cobalt.data.synthetic import SyntheticOptions, generate
from cobalt.data.tokens import build_tiny_tokenizer, load_tokenizer, prompt_token_counter
from cobalt.data.verl_rows import convert

FILES = {
    "problems_train": "problems/train.jsonl",
    "problems_dev": "problems/dev.jsonl",
    "traj_train": "trajectories/train.jsonl",
    "traj_dev": "trajectories/dev.jsonl",
    "bandit_train": "bandit/train.jsonl",
    "bandit_test": "bandit/test.jsonl",
    "train": "train.parquet",
    "test": "test.parquet",
    "single_train": "single_turn/train.parquet",
    "single_test": "single_turn/test.parquet",
}


def embedded_raw(out: Path, limit: int | None) -> tuple[Path, dict]:
    """Write the embedded problems as raw TACO rows; returns the file and id → programs."""
    from cobalt.data.embedded import load_problems, to_taco_records

    problems = load_problems()[:limit] if limit else load_problems()
    path = out / "raw" / "taco_embedded.jsonl"
    write_jsonl(path, to_taco_records(problems), overwrite=True)
    programs = {p["id"]: (p["solutions"], [w["code"] for w in p["wrong_solutions"]]) for p in problems}
    return path, programs


# The stages in order, each with the FILES it writes. A re-run skips the finished ones and redoes
# the first unfinished stage and everything after it.
STAGES = {
    "problems": ("problems_train", "problems_dev"),
    "trajectories": ("traj_train", "traj_dev"),
    "bandit": ("bandit_train", "bandit_test"),
    "parquet": ("train", "test"),
    "single_turn": ("single_train", "single_test"),
}
STATE_FILE = "build_state.json"


class BuildState:
    """``OUT/build_state.json``: the settings of the job that owns ``OUT`` and, per finished stage,
    its row counts and each output's size and sha256.

    It is what makes a re-run of the same command safe: outputs of unfinished stages were written
    by this job (the first run refused a directory holding any of them) and are redone; finished
    outputs are kept; a finished output that changed since is moved aside, never overwritten.
    """

    def __init__(self, out: Path, settings: dict, overwrite: bool):
        self.path, self.out = out / STATE_FILE, out
        self.settings = json.loads(json.dumps(settings))  # as it reads back from the file
        self.stages: dict[str, dict] = {}
        paths = [out / f for f in FILES.values()]
        if overwrite:
            return
        if not self.path.exists():
            cli.refuse_existing(paths, overwrite)  # not ours: another job's or the user's files
            return
        state = json.loads(self.path.read_text(encoding="utf-8"))
        if _with_new_defaults(state.get("settings")) != self.settings:
            raise FileExistsError(
                f"{out} holds a build with other settings ({state.get('settings')}); "
                "pass --overwrite to rebuild it, or choose another --out"
            )
        self.stages = state.get("stages", {})

    def is_done(self, stage: str) -> bool:
        record = self.stages.get(stage)
        return record is not None and all(
            _fingerprint(self.out / name) == recorded for name, recorded in record["files"].items()
        )

    def begin(self, stage: str) -> None:
        """Forget ``stage``; a finished output of it that changed since is moved aside."""
        record = self.stages.pop(stage, None) or {"files": {}}
        for name, recorded in record["files"].items():
            path = self.out / name
            if path.exists() and _fingerprint(path) != recorded:
                kept = _free_name(path)
                path.rename(kept)
                print(f"{path} changed since this build wrote it; kept as {kept}, rebuilding it")
        self._save()

    def finish(self, stage: str, counts: dict) -> None:
        files = {FILES[key]: _fingerprint(self.out / FILES[key]) for key in STAGES[stage]}
        self.stages[stage] = {"files": files, "counts": counts}
        self._save()

    def counts(self) -> dict:
        return {
            k: v for stage in STAGES if stage in self.stages for k, v in self.stages[stage]["counts"].items()
        }

    def _save(self) -> None:
        state = {"settings": self.settings, "stages": self.stages}
        with atomic_output(self.path, overwrite=True) as tmp:
            tmp.write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")


def _with_new_defaults(saved: dict | None) -> dict | None:
    """Saved settings with the synthetic options added since they were saved at their defaults
    (which leave the data unchanged): a build made before an option existed is still this one."""
    if not saved or "synthetic" not in saved:
        return saved
    defaults = json.loads(json.dumps(dataclasses.asdict(SyntheticOptions())))
    return {**saved, "synthetic": {**defaults, **saved["synthetic"]}}


def _fingerprint(path: Path) -> dict | None:
    if not path.is_file():
        return None
    return {"size": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def _free_name(path: Path) -> Path:
    candidates = (path.with_name(f"{path.name}.changed{f'.{i}' if i else ''}") for i in itertools.count())
    return next(c for c in candidates if not c.exists())


def build_demo(
    out,
    *,
    model_name=None,
    evaluator_kind: str = "local",
    limit: int | None = None,
    seed: int = 42,
    dev_ratio: float = 0.2,
    overwrite: bool = False,
    synthetic: SyntheticOptions | None = None,
) -> dict:
    """Build (or finish building) the demo data in ``out``; returns the row counts."""
    out = Path(out)
    synthetic = synthetic or SyntheticOptions(seed=seed)
    settings = {
        "model_name": str(model_name) if model_name else None,
        "limit": limit,
        "seed": seed,
        "dev_ratio": dev_ratio,
        "synthetic": dataclasses.asdict(synthetic),
    }
    state = BuildState(out, settings, overwrite)
    job = _DemoJob(out, model_name, evaluator_kind, limit, seed, dev_ratio, synthetic)
    pending = [stage for stage in STAGES if not state.is_done(stage)]
    if pending:
        pending = list(STAGES)[list(STAGES).index(pending[0]) :]  # later stages read earlier ones
    for stage in STAGES:
        if stage in pending:
            state.begin(stage)
            state.finish(stage, getattr(job, stage)())
    if not pending:
        print(f"{out} is already complete (built with these settings); nothing to do")
    elif len(pending) < len(STAGES):
        print(f"resumed the build in {out}: redid {', '.join(pending)}")
    return state.counts()


class _DemoJob:
    """The stages of :func:`build_demo`; each reads what earlier stages wrote, returns row counts."""

    def __init__(self, out: Path, model_name, evaluator_kind, limit, seed, dev_ratio, synthetic):
        self.out, self.model_name, self.limit = out, model_name, limit
        self.seed, self.dev_ratio, self.synthetic = seed, dev_ratio, synthetic
        self.evaluator_kind = evaluator_kind
        self.paths = {k: out / v for k, v in FILES.items()}

    @functools.cached_property
    def evaluator(self):
        return cli.make_evaluator(self.evaluator_kind)

    @functools.cached_property
    def raw(self) -> tuple[Path, dict]:
        return embedded_raw(self.out, self.limit)

    def problems(self) -> dict:
        raw_path, _ = self.raw
        _, train, dev, summary = taco.preprocess_taco(
            iter_local(raw_path),
            evaluator=self.evaluator,
            seed=self.seed,
            dev_ratio=self.dev_ratio,
            path=raw_path,
        )
        print("\n".join(summary.lines()))
        write_jsonl(self.paths["problems_train"], train, overwrite=True)
        write_jsonl(self.paths["problems_dev"], dev, overwrite=True)
        return {}

    def trajectories(self) -> dict:
        _, programs = self.raw
        for split in ("train", "dev"):
            problems = load_jsonl(self.paths[f"problems_{split}"])
            records = asyncio.run(generate(problems, programs, self.evaluator, self.synthetic))
            write_jsonl(self.paths[f"traj_{split}"], records, overwrite=True)
        return {}

    def bandit(self) -> dict:
        model_name = self.model_name or build_tiny_tokenizer(self.out / "tokenizer")
        count_tokens = prompt_token_counter(load_tokenizer(model_name))
        counts = {}
        for split, name, is_test in (("train", "bandit_train", False), ("dev", "bandit_test", True)):
            records = [r for _, r in bandit_records(self.paths[f"traj_{split}"])]
            opts = bandit.BanditOptions(is_test=is_test)
            prompts, c = bandit.build_bandit_prompts(records, count_tokens, opts)
            print(f"[{split}] " + "; ".join(c.lines()))
            write_jsonl(self.paths[name], prompts, overwrite=True)
            counts[name] = len(prompts)
        return counts

    def parquet(self) -> dict:
        return convert(self.paths["bandit_train"], self.paths["bandit_test"], self.out, True, overwrite=True)

    def single_turn(self) -> dict:
        problems = (self.paths["problems_train"], self.paths["problems_dev"])
        counts = convert(*problems, self.out / "single_turn", multi_turn=False, overwrite=True)
        return {f"single_{k}": v for k, v in counts.items()}


def bandit_records(path):
    from cobalt.data.trajectories import read_trajectories

    return read_trajectories(path, need_hidden=True)


def main() -> None:
    p = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--model-name",
        default=None,
        help="tokenizer (hub name or local dir) for the prompt-length limit; "
        "default: a tiny tokenizer built offline in OUT/tokenizer",
    )
    p.add_argument("--limit", type=positive_int, default=None, help="use only the first N problems")
    p.add_argument("--num-samples", type=positive_int, default=16, help="conversations per problem")
    p.add_argument("--num-turns", type=positive_int, default=2, help="feedback turns after turn 0")
    p.add_argument("--dev-ratio", type=fraction, default=0.2)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--evaluator", choices=["local", "serve"], default="local")
    cli.add_overwrite(p)
    args = p.parse_args()
    counts = build_demo(
        args.out,
        model_name=args.model_name,
        evaluator_kind=args.evaluator,
        limit=args.limit,
        seed=args.seed,
        dev_ratio=args.dev_ratio,
        overwrite=args.overwrite,
        synthetic=SyntheticOptions(num_samples=args.num_samples, num_turns=args.num_turns, seed=args.seed),
    )
    print("rows: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"veRL data: {Path(args.out) / 'train.parquet'} and {Path(args.out) / 'test.parquet'}")


if __name__ == "__main__":
    cli.run(main)
