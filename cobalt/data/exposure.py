"""Which evaluation instances a program shown in training already solves.

A *training program* is any program an arm's training input holds: the SFT targets (the warm-up's
reference programs, the control arm's), and every program of the trajectories the bandit prompts are
cut from (first attempts, mutants shown as failed attempts, fixes). An instance is *solved by
training* when one of them passes every one of its tests, as the project's evaluator (the sandbox)
judges it.

:func:`solved_by_training` runs each distinct program (by normalized form) once per chunk of
instances, on the first test of each, through the evaluator: a program that fails an instance's
first test cannot pass all of its tests, so this only drops pairs that cannot pass (a request the
sandbox refuses as a whole keeps every pair of its chunk). Each pair that passes is then judged on
all of the instance's tests, one evaluator request per pair: that verdict is the label.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from cobalt.common.extract import extract_code
from cobalt.common.testcases import parse_test_cases
from cobalt.data.execute import run_jobs
from cobalt.data.program_form import normalized_or_text

CHUNK = 512  # first tests per pre-filter request
WARMUP, CONTROL, FIX = "warm-up SFT target", "control SFT target", "trajectories' fix"
ORIGIN_ORDER = (WARMUP, CONTROL, FIX)  # then the trajectories' failed attempts


@dataclasses.dataclass(frozen=True)
class TrainingProgram:
    """A program of a training input: where it is (``origin``) and which training instance it
    belongs to."""

    origin: str  # one of ORIGIN_ORDER, or "trajectories' attempt (<bug class> mutant)"
    instance: str
    source: str = dataclasses.field(repr=False)

    def describe(self) -> str:
        return f"{self.origin} of {self.instance}"

    def sort_key(self) -> tuple:
        rank = ORIGIN_ORDER.index(self.origin) if self.origin in ORIGIN_ORDER else len(ORIGIN_ORDER)
        return rank, self.origin, self.instance, self.source


def in_order(programs: Iterable[TrainingProgram]) -> list[TrainingProgram]:
    """Distinct programs, SFT targets first: the order does not depend on the inputs' order."""
    return sorted(set(programs), key=TrainingProgram.sort_key)


def reference_programs(
    origin: str, ids: Iterable[str], solutions: Mapping[str, list[str]]
) -> list[TrainingProgram]:
    return [TrainingProgram(origin, str(i), p) for i in ids for p in solutions[str(i)]]


def trajectory_programs(records: Iterable[dict]) -> list[TrainingProgram]:
    """Every program of the trajectories' responses, named by its bug class where the record
    carries one (offline trajectories: a mutant, or ``reference`` for the fix)."""
    out = set()
    for record in records:
        classes = record.get("bug_classes")
        for k, row in enumerate(record["responses"]):
            for t, response in enumerate(row):
                code = extract_code(response)
                if code is None:
                    continue
                bug = classes[k][t] if classes else None
                if bug == "reference":
                    origin = FIX
                else:  # a mutant, or a program of the model's own trajectories (no bug class)
                    origin = f"trajectories' attempt ({bug} mutant)" if bug else "trajectories' program"
                out.add(TrainingProgram(origin, str(record["id"]), code))
    return in_order(out)


def _first_test(record: dict) -> tuple[str, str]:
    tests = parse_test_cases(record["test_cases"])
    return tests["inputs"][0], tests["outputs"][0]


async def solved_by_training(
    instances: Mapping[str, dict], programs: Iterable[TrainingProgram], evaluator
) -> dict[str, list[TrainingProgram]]:
    """``{instance id: the training programs that pass all of its tests}`` (sorted; empty when
    none does) for ``instances`` (id → problem record with ``test_cases``)."""
    groups: dict[str, list[TrainingProgram]] = {}
    for program in in_order(programs):
        groups.setdefault(normalized_or_text(program.source), []).append(program)
    ids = sorted(instances)
    first = {i: _first_test(instances[i]) for i in ids}
    chunks = [ids[s : s + CHUNK] for s in range(0, len(ids), CHUNK)]
    jobs, pairs = [], []
    for key, group in groups.items():
        for chunk in chunks:
            tests = {"inputs": [first[i][0] for i in chunk], "outputs": [first[i][1] for i in chunk]}
            jobs.append((group[0].source, json.dumps(tests)))
            pairs.append((key, chunk))
    results = await run_jobs(evaluator, jobs, desc="first tests")
    candidates = []
    for (key, chunk), result in zip(pairs, results):
        passing = result["passing"]
        whole = len(passing) != len(chunk)  # the request failed as a whole: keep every pair
        candidates += [(key, i) for n, i in enumerate(chunk) if whole or passing[n]]
    confirm = [(groups[key][0].source, _tests_key(instances[i]["test_cases"])) for key, i in candidates]
    verdicts = await run_jobs(evaluator, confirm, desc="all tests")
    out: dict[str, list[TrainingProgram]] = {i: [] for i in ids}
    for (key, i), result in zip(candidates, verdicts):
        if result["passing"] and all(result["passing"]):
            out[i] += groups[key]
    return {i: in_order(found) for i, found in out.items()}


def _tests_key(test_cases) -> str:
    return test_cases if isinstance(test_cases, str) else json.dumps(test_cases)


# ------------------------------------------------------------------ the training inputs of a profile
def sft_programs(train: list[dict], solutions: Mapping[str, list[str]], warmup_problems: int | None):
    """The warm-up's targets (the first ``warmup_problems`` training instances, all when None or
    0) and the control arm's (every training instance)."""
    ids = [str(r["id"]) for r in train]
    return [
        *reference_programs(WARMUP, ids[:warmup_problems] if warmup_problems else ids, solutions),
        *reference_programs(CONTROL, ids, solutions),
    ]


async def offline_programs(train: list[dict], options: Mapping, evaluator) -> list[TrainingProgram]:
    """The programs of the offline trajectories a profile's ``offline_trajectories`` options make
    (as ``python -m cobalt.data.procedural.offline`` does in the quickstart; its mutants run in the
    sandbox to keep the failing ones); none when the options are empty."""
    if not options:
        return []
    from cobalt.data.procedural.offline import offline_options, offline_trajectories

    o = dict(options)
    problems = train[: o["limit"]] if o.get("limit") else train
    opts = offline_options(
        o.get("num_samples", 16), o.get("num_turns", 2), o.get("p_fix", 0.5), o.get("seed", 0)
    )
    records = await offline_trajectories(
        problems, evaluator, per_problem=o.get("per_problem", 4), tries_per_problem=o.get("tries"), opts=opts
    )
    return trajectory_programs(records)


def run_trajectory_programs(run_dir: str | Path) -> list[TrainingProgram]:
    """The programs of the trajectories a quickstart run cut its bandit prompts from: the model's
    own and the offline ones."""
    from cobalt.common import rundir
    from cobalt.common.jsonl import load_jsonl

    root = Path(run_dir)
    paths = [root / rundir.evaluated("trajectories"), root / rundir.OFFLINE_TRAJECTORIES]
    return in_order(p for path in paths if path.exists() for p in trajectory_programs(load_jsonl(path)))
