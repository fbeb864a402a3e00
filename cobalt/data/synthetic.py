"""Synthetic multi-turn trajectories for tests and demos, in the format inference writes.

From problems with known correct and wrong programs, each of K conversations starts with a
turn-0 attempt (a correct or a wrong program, the problem's mix drawn with the seed from
``turn0_correct_mix``), then later turns fix a wrong program or regress a correct one. The wrong
programs can be anything that fails: the embedded set's hand-written ones, or mutants of the
reference solution (:mod:`cobalt.data.mutations`; ``python -m cobalt.data.procedural.offline``
sets ``turn0_correct_mix=(0.0,)``, so that every conversation opens with a failing attempt).
Every program really runs through the evaluator: turn 0 on all tests (``turn0_results``), each
turn on the public tests (the feedback message and ``public_pass_rates``) and on the hidden tests
(``all_pass_rates``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tqdm import tqdm

from cobalt.common.extract import extract_code
from cobalt.common.testcases import pass_rate
from cobalt.data.execute import run_jobs
from cobalt.data.trajectories import add_turn, start_conversation

ECHO_PROGRAM = "import sys\nprint(sys.stdin.read().strip())"
TURN0_CORRECT_MIX = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass
class SyntheticOptions:
    num_samples: int = 16  # conversations per problem
    num_turns: int = 2  # feedback turns after turn 0 (2 for training data, 8 to evaluate)
    p_fix: float = 0.5  # a wrong program is fixed at the next turn
    p_regress: float = 0.15  # a correct program is broken at the next turn
    p_no_code: float = 0.05  # a response without a code block
    seed: int = 42
    thinking: bool = True  # responses carry a <think> block that conversations drop
    # the fraction of a problem's conversations whose turn 0 is correct: one of these, per problem
    turn0_correct_mix: tuple[float, ...] = TURN0_CORRECT_MIX
    # a wrong attempt after a wrong one is another wrong program (when the problem has several)
    change_wrong: bool = False


def plan_programs(
    correct: list[str], wrong: list[str], rng: random.Random, opts: SyntheticOptions
) -> list[list[str | None]]:
    """K × (T+1) programs (None = no code block) following the fix / regress dynamics."""
    wrong = wrong or [ECHO_PROGRAM]
    mix = rng.choice(opts.turn0_correct_mix) if correct else 0.0
    plans = []
    for _ in range(opts.num_samples):
        ok = rng.random() < mix
        row, program = [], None
        for turn in range(opts.num_turns + 1):
            if turn:
                ok = (rng.random() < opts.p_fix) if not ok else (rng.random() >= opts.p_regress)
                ok = ok and bool(correct)
            pool = correct if ok else wrong
            if not ok and opts.change_wrong and program in wrong and len(wrong) > 1:
                pool = [w for w in wrong if w != program]
            program = rng.choice(pool)
            row.append(None if rng.random() < opts.p_no_code else program)
        plans.append(row)
    return plans


def render_response(program: str | None, turn: int, rng: random.Random, thinking: bool) -> str:
    """A plausible model response around ``program`` (no code block when it is None)."""
    notes = [
        "Let me re-read the statement and trace the sample.",
        "Wait, the edge case n = 1 needs care.",
        "The feedback shows a mismatch, so the logic must change.",
        "I should verify the output format.",
    ]
    think = f"<think>\n{rng.choice(notes)} (turn {turn})\n</think>\n\n" if thinking else ""
    if program is None:
        return think + "I believe the approach above is correct, so I will keep it."
    return (
        f"{think}Here is my solution.\n\n```python\n{program}\n```\n\n"
        "It reads the input, computes the answer and prints it."
    )


def _jobs_for(problem: dict, responses: list[list[str]]) -> list[tuple]:
    """(code, tests) for: turn 0 on all tests, then every turn on public, then on hidden."""
    codes = [[extract_code(r) for r in row] for row in responses]
    jobs = [(row[0], problem["test_cases"]) for row in codes]
    jobs += [(c, problem["public_test_cases"]) for row in codes for c in row]
    jobs += [(c, problem["hidden_test_cases"]) for row in codes for c in row]
    return jobs


def _assemble(problem: dict, responses, results: list[dict], opts: SyntheticOptions) -> dict:
    k, t = len(responses), len(responses[0])
    turn0, rest = results[:k], results[k:]
    public = [rest[i * t : (i + 1) * t] for i in range(k)]
    hidden = [rest[k * t + i * t : k * t + (i + 1) * t] for i in range(k)]
    conversations = []
    for i in range(k):
        conv = start_conversation(problem["instruction"])
        for turn in range(t):
            add_turn(conv, responses[i][turn], public[i][turn], opts.thinking)
        conversations.append(conv)
    return {
        "id": problem["id"],
        "difficulty": problem.get("difficulty"),
        "instruction": problem["instruction"],
        "test_cases": problem["test_cases"],
        "public_test_cases": problem["public_test_cases"],
        "hidden_test_cases": problem["hidden_test_cases"],
        "conversations": conversations,
        "responses": responses,
        "turn0_results": turn0,
        "public_results": public,
        "public_pass_rates": [[pass_rate(r) for r in row] for row in public],
        "all_pass_rates": [[pass_rate(r) for r in row] for row in hidden],
    }


async def generate(
    problems: list[dict], programs: dict, evaluator, opts: SyntheticOptions | None = None
) -> list[dict]:
    """Trajectory records for ``problems``; ``programs[id] = (correct list, wrong list)``."""
    opts = opts or SyntheticOptions()
    all_responses, all_jobs = [], []
    for problem in problems:
        rng = random.Random(f"{opts.seed}:{problem['id']}")
        correct, wrong = programs[problem["id"]]
        plan = plan_programs(correct, wrong, rng, opts)
        responses = [
            [render_response(p, turn, rng, opts.thinking) for turn, p in enumerate(row)] for row in plan
        ]
        all_responses.append(responses)
        all_jobs.append(_jobs_for(problem, responses))
    flat = [job for jobs in all_jobs for job in jobs]
    results = await run_jobs(evaluator, flat, desc="running synthetic programs")
    out, start = [], 0
    for problem, responses, jobs in tqdm(
        list(zip(problems, all_responses, all_jobs)), desc="assembling trajectories", leave=False
    ):
        out.append(_assemble(problem, responses, results[start : start + len(jobs)], opts))
        start += len(jobs)
    return out
