"""Is an evaluation instance's program new to training?

Two programs are the *same program* when their normalized forms are equal
(:mod:`cobalt.data.program_form`).

:func:`program_novelty` labels evaluation instances *by form*: ``unseen`` (no training program has
the instance's normalized reference program), ``seen_sft`` (an SFT warm-up program has it) and
``seen_grpo`` (only a program of the GRPO training instances has it). *By behaviour*
(:func:`strict_novelty`), an instance unseen by form becomes ``seen_training`` when a program of
any arm's training input (SFT targets, the trajectories' attempts and fixes) equals it or passes
all of its tests in the sandbox (:mod:`cobalt.data.exposure`).

    python -m cobalt.data.novelty RUN_DIR   # a quickstart run of problems: procedural
    python -m cobalt.data.novelty --config generalize_prereg   # rebuilt from the seeds, no model
"""

from __future__ import annotations

import collections
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from cobalt.common import rundir
from cobalt.common.cli import ArgumentParser, run
from cobalt.data.program_form import normalized_or_text

UNSEEN, SEEN_SFT, SEEN_GRPO = "unseen", "seen_sft", "seen_grpo"
KINDS = (UNSEEN, SEEN_SFT, SEEN_GRPO)


def program_novelty(evaluated: Mapping[str, str], sft: Iterable[str], grpo: Iterable[str]) -> dict[str, str]:
    """``{instance id: unseen | seen_sft | seen_grpo}`` for ``evaluated`` (id → reference program),
    against the SFT warm-up's programs and the GRPO training instances' programs."""
    sft_keys = {normalized_or_text(p) for p in sft}
    grpo_keys = {normalized_or_text(p) for p in grpo}
    out = {}
    for pid, source in evaluated.items():
        key = normalized_or_text(source)
        out[pid] = SEEN_SFT if key in sft_keys else SEEN_GRPO if key in grpo_keys else UNSEEN
    return out


def counts(novelty: Mapping[str, str]) -> dict[str, int]:
    c = collections.Counter(novelty.values())
    return {kind: c.get(kind, 0) for kind in KINDS}


# ------------------------------------------------------------------------- procedural runs
def _solutions(rows: Iterable[dict]) -> dict[str, list[str]]:
    return {str(r["id"]): list(r["solutions"]) for r in rows}


def procedural_novelty(
    train: list[dict], heldout: list[dict], solutions: Mapping[str, list[str]], warmup_problems: int | None
) -> dict[str, str]:
    """The novelty of each ``heldout`` record: the warm-up answers the first ``warmup_problems``
    training records (all when None or 0, as the quickstart's warm-up), GRPO trains on all of them."""
    sft_ids = [str(r["id"]) for r in (train[:warmup_problems] if warmup_problems else train)]
    grpo_ids = [str(r["id"]) for r in train]
    return program_novelty(
        {str(r["id"]): solutions[str(r["id"])][0] for r in heldout},
        (p for i in sft_ids for p in solutions[i]),
        (p for i in grpo_ids for p in solutions[i]),
    )


def run_novelty(run_dir: str | Path) -> dict[str, dict[str, str]]:
    """``{split: {id: novelty}}`` for the evaluated splits of a quickstart run of procedural
    problems, from the files it wrote (data/procedural/, the warm-up subset)."""
    return _form(_run_inputs(run_dir))


def _run_inputs(run_dir: str | Path) -> dict:
    from cobalt.common.jsonl import load_jsonl

    root = Path(run_dir)
    proc = root / rundir.PROCEDURAL
    subset = root / rundir.WARM_UP_SUBSET
    splits = {"train": load_jsonl(proc / "train.jsonl")}
    for split in ("heldout", "dev", "heldout_families"):
        path = proc / f"{split}.jsonl"
        if path.exists() and path.stat().st_size:
            splits[split] = load_jsonl(path)
    return {
        "splits": splits,
        "solutions": _solutions(load_jsonl(proc / "solutions.jsonl")),
        "warmup_problems": len(load_jsonl(subset)) if subset.exists() else None,
        "run_dir": root,
    }


def config_novelty(config: str | Path) -> dict[str, dict[str, str]]:
    """As :func:`run_novelty`, for the splits a quickstart profile would write (rebuilt from its
    seeds, nothing run)."""
    return _form(_config_inputs(config))


def _config_inputs(config: str | Path) -> dict:
    from cobalt.common.config import load_config
    from cobalt.data.procedural.generate import reference_solution
    from cobalt.data.procedural.splits import build_splits

    cfg = load_config(config)
    p = setting(cfg, "procedural", config)
    sizes = {
        "train": setting(cfg, "train_problems", config),
        "dev": p.get("dev", 0),
        "heldout": setting(cfg, "heldout_problems", config),
        "heldout_families": p.get("heldout_families", 0),
    }
    built = build_splits(sizes, p.get("seed", 0), heldout_names=p.get("heldout_family_names"))
    splits = {name: records for name, records in built.items() if records}
    solutions = {str(r["id"]): [reference_solution(r["id"])] for rs in splits.values() for r in rs}
    return {
        "splits": splits,
        "solutions": solutions,
        "warmup_problems": cfg.get("warmup", {}).get("problems"),
        "offline": cfg.get("offline_trajectories", {}),
        "own_trajectories": setting(cfg, "train_samples", config),
    }


def setting(cfg: dict, key: str, config):
    """A quickstart profile's setting, read as the profile states it (with what it extends)."""
    from cobalt.common.errors import ConfigError

    if key not in cfg:
        raise ConfigError(f"{config}: no {key!r}; a quickstart profile of procedural problems sets it")
    return cfg[key]


def _form(inputs: dict) -> dict[str, dict[str, str]]:
    splits, solutions = inputs["splits"], inputs["solutions"]
    return {
        split: procedural_novelty(splits["train"], records, solutions, inputs["warmup_problems"])
        for split, records in splits.items()
        if split != "train"
    }


# ------------------------------------------------------------------------- by behaviour
# --with-mutants: the offline generator's mutants (off by one, wrong operator, output format, input
# reading) of every training reference, as many as it makes, standing in for a model's wrong attempts
STAND_IN_MUTANTS = {"per_problem": 4, "num_samples": 16, "num_turns": 2}
SEEN_TRAINING = "seen_training"  # unseen by form, but a training program equals it or passes all its tests


def strict_novelty(
    evaluated: Mapping[str, str],
    form: Mapping[str, str],
    solved: Mapping[str, list],
    training_sources: Iterable[str],
) -> dict[str, str]:
    """The labels by behaviour: an instance unseen by form (``form``) stays ``unseen`` only if its
    reference program (``evaluated``) equals no training program and no training program solves it
    (``solved``: id → the training programs that pass all of its tests)."""
    keys = {normalized_or_text(p) for p in training_sources}
    return {
        i: SEEN_TRAINING
        if kind == UNSEEN and (solved.get(i) or normalized_or_text(evaluated[i]) in keys)
        else kind
        for i, kind in form.items()
    }


async def _strict(inputs: dict, evaluator) -> dict:
    """``{split: {"form", "strict", "solved", "equal"}}`` for the inputs of a profile or a run."""
    from cobalt.data import exposure

    splits, solutions = inputs["splits"], inputs["solutions"]
    programs = exposure.sft_programs(splits["train"], solutions, inputs["warmup_problems"])
    if "run_dir" in inputs:
        programs += exposure.run_trajectory_programs(inputs["run_dir"])
    else:
        programs += await exposure.offline_programs(splits["train"], inputs["offline"], evaluator)
        if inputs.get("with_mutants"):
            programs += await exposure.offline_programs(splits["train"], STAND_IN_MUTANTS, evaluator)
    sources = [p.source for p in programs]
    keys = {normalized_or_text(s) for s in sources}
    form = _form(inputs)
    unseen = {str(r["id"]): r for split in form for r in splits[split] if form[split][str(r["id"])] == UNSEEN}
    solved = await exposure.solved_by_training(unseen, programs, evaluator)  # all splits in one pass
    out = {}
    for split, labels in form.items():
        evaluated = {i: solutions[i][0] for i in labels}
        out[split] = {
            "form": labels,
            "strict": strict_novelty(evaluated, labels, solved, sources),
            "solved": {i: solved[i] for i in labels if solved.get(i)},
            "equal": sorted(i for i in labels if i in unseen and normalized_or_text(evaluated[i]) in keys),
        }
    return out


def report_lines(result: Mapping[str, dict]) -> list[str]:
    """Both counts of every split, the families not held out by behaviour, and the training program
    that solves each instance seen by behaviour."""
    lines = []
    for split, r in result.items():
        form, strict = counts(r["form"]), collections.Counter(r["strict"].values())
        lines.append(
            f"{split}: {len(r['form'])} instances: unseen by form {form[UNSEEN]} (seen_sft {form[SEEN_SFT]}, "
            f"seen_grpo {form[SEEN_GRPO]}); unseen by behaviour {strict[UNSEEN]}: a training program solves "
            f"{strict[SEEN_TRAINING]} of the {form[UNSEEN]} ({len(r['equal'])} of them equal one)"
        )
        if split == "heldout_families":
            lines += _family_lines(r["strict"])
    for split, r in result.items():
        for i, found in sorted(r["solved"].items()):
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            lines.append(f"  {split} {i}: solved by the {found[0].describe()}{more}")
    return lines


def _family_lines(strict: Mapping[str, str]) -> list[str]:
    from cobalt.data.procedural.generate import parse_id

    total, solved = collections.Counter(), collections.Counter()
    for i, kind in strict.items():
        family = parse_id(i)[0]
        total[family] += 1
        solved[family] += kind == SEEN_TRAINING
    failing = [f"{f} {solved[f]} of {total[f]}" for f in sorted(total) if solved[f]]
    if not failing:
        return ["  every held-out family is held out by behaviour (no training program solves an instance)"]
    return ["  not held out by behaviour (instances solved by a training program): " + ", ".join(failing)]


def strict_result(
    run_dir: str | Path | None = None,
    config: str | Path | None = None,
    evaluator=None,
    with_mutants: bool = False,
) -> dict:
    """:func:`report_lines`' input for a run directory or a profile; the local sandbox unless
    ``evaluator`` is given. For a profile, the inputs it fixes before any run: the model's own
    trajectories exist only after a run (label its run directory), and ``with_mutants`` adds
    mutants of every training reference as stand-ins for the wrong attempts they will hold."""
    import asyncio

    inputs = _config_inputs(config) if config is not None else _run_inputs(run_dir)
    inputs["with_mutants"] = with_mutants
    if evaluator is None:
        from cobalt.serve.client import get_evaluator

        evaluator = get_evaluator("local")
    return asyncio.run(_strict(inputs, evaluator))


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="python -m cobalt.data.novelty",
        description="Label the evaluated instances by form (is the normalized reference program an SFT "
        "warm-up program: seen_sft, a GRPO training program: seen_grpo, or neither: unseen) and by "
        "behaviour (an instance unseen by form that a program of any arm's training input equals or "
        "solves, judged by the sandbox, is seen_training), and name the training program that solves "
        "each. Runs every distinct training program in the sandbox: minutes for a design's profile.",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("run_dir", nargs="?", help="a quickstart run directory (problems: procedural)")
    where.add_argument(
        "--config", help="a quickstart profile (name or path): rebuild its inputs from the seeds"
    )
    parser.add_argument("--ids", action="store_true", help="print every instance's labels as JSON")
    parser.add_argument("--form-only", action="store_true", help="the labels by form only (no program runs)")
    parser.add_argument(
        "--with-mutants",
        action="store_true",
        help="with --config: add mutants of every training reference to the training inputs, standing "
        "in for the wrong attempts a model's own trajectories will hold (choosing held-out families)",
    )
    args = parser.parse_args(argv)
    if args.with_mutants and not args.config:
        parser.error("--with-mutants goes with --config: a run directory holds its real trajectories")
    if args.form_only:
        form = config_novelty(args.config) if args.config else run_novelty(args.run_dir)
        if args.ids:
            print(json.dumps(form, indent=1))
        for split, novelty in form.items():
            c = counts(novelty)
            print(f"{split}: {len(novelty)} instances: " + ", ".join(f"{k} {v}" for k, v in c.items()))
        return 0
    result = strict_result(args.run_dir, args.config, with_mutants=args.with_mutants)
    if args.ids:
        print(json.dumps(_ids(result), indent=1))
    print("\n".join(report_lines(result)))
    if args.config and (own := _config_inputs(args.config)["own_trajectories"]):
        print(
            f"not labelled here: the model's own trajectories (train_samples {own}), a training input only "
            "a run has: python -m cobalt.data.novelty RUN_DIR labels a run's instances with them"
        )
    return 0


def _ids(result: Mapping[str, dict]) -> dict:
    return {
        split: {
            i: {
                "form": r["form"][i],
                "behaviour": r["strict"][i],
                "solved_by": [{"origin": p.origin, "instance": p.instance} for p in r["solved"].get(i, [])],
            }
            for i in r["form"]
        }
        for split, r in result.items()
    }


if __name__ == "__main__":
    sys.exit(run(main))
