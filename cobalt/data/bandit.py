"""Trajectories → one-step bandit prompts (reference §7, ``process_multi_turn_taco``).

For each problem with 16 conversations:
1. skip it when every turn-0 sample passes every test (dynamic sampling);
2. emit the turn-0 prompt (system + user) with ``prev_best_pass_rate`` 0;
3. combined pass rate = (hidden × (N − 4) + public × 4) / N, N = number of tests (**quirk**: it
   assumes 4 public tests; ``actual_public_count`` uses the record's real count instead);
4. spread of a conversation = max − min over turns; training candidates have spread > 0 and
   max = 1, test candidates spread > 0; candidates are sorted by spread;
5. test mode keeps the lowest-spread conversation, cut to its first 8 messages;
6. training mode keeps a max-variance subset of ≤ 4 (:func:`max_variance_subset`);
7. each kept conversation is cut after 4, 6 and 8 messages, stopping at the first cut where
   (a) the all-public-passed marker is in messages turn−1 and turn−3, (b) the prompt exceeds the
   token limit, or (c) turn/2 < 3 and the pass rates at turn/2 − 2 and turn/2 are both 1;
   otherwise the cut is emitted with ``prev_best_pass_rate`` = the best earlier pass rate;
8. all prompts are shuffled with seed 42.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cobalt.common.prompts import ALL_PUBLIC_PASSED_MARKER

ASSUMED_PUBLIC_TESTS = 4
SUBSET_SIZE = 4  # m
MAX_CANDIDATES = 16  # n
NUM_TURNS = 3  # cuts after 4, 6, 8 messages
TEST_MESSAGES = 8
MAX_PROMPT_TOKENS = 10_000
SHUFFLE_SEED = 42


@dataclass
class BanditOptions:
    is_test: bool = False
    num_turns: int = NUM_TURNS
    max_prompt_tokens: int = MAX_PROMPT_TOKENS
    seed: int = SHUFFLE_SEED
    actual_public_count: bool = False  # False = the reference's "4 public tests" quirk
    strict_subset_size: bool = False  # False = the reference's slice quirk (> 16 candidates)


@dataclass
class BanditCounts:
    skipped: int = 0  # every turn-0 sample passed every test
    kept: int = 0  # problems with at least one conversation selected
    emitted: int = 0  # bandit prompts written (turn-0 prompts included)
    public_passes: int = 0  # cuts stopped because the pass rate was already 1 twice

    def lines(self) -> list[str]:
        return [
            f"Skipped examples: {self.skipped}",
            f"Unique examples with conversations extracted: {self.kept}",
            f"Total conversations extracted: {self.emitted}",
            f"Total turns where public test cases passed: {self.public_passes}",
        ]


def combined_pass_rates(hidden, public, n_tests: int, n_public: int = ASSUMED_PUBLIC_TESTS):
    """K × T combined rates: hidden weighted by N − n_public, public by n_public."""
    hidden, public = np.asarray(hidden, dtype=float), np.asarray(public, dtype=float)
    return (hidden * (n_tests - n_public) + public * n_public) / n_tests


def candidates(rates: np.ndarray, is_test: bool) -> tuple[list[int], list[float]]:
    """Conversation indices sorted by spread (ascending, stable) and every conversation's spread."""
    top, spread = rates.max(axis=1), rates.max(axis=1) - rates.min(axis=1)
    keep = [i for i in range(len(rates)) if spread[i] > 0 and (is_test or top[i] == 1.0)]
    return sorted(keep, key=lambda i: spread[i]), spread.tolist()


def max_variance_subset(
    ordered: list[int],
    spread: list[float],
    m: int = SUBSET_SIZE,
    n_max: int = MAX_CANDIDATES,
    strict_size: bool = False,
) -> list[int]:
    """Down-sample to ``m`` conversations with a high variance of spreads (arXiv 2504.13818).

    Start from the ``m`` lowest; for k = 0..m−1 try replacing the tail with the ``k`` highest
    (``subset[:m-k] + ordered[n-k:]``) and keep the swap when the variance grows.
    **quirk**: with more than ``n_max`` (16) candidates the reference's slice ``ordered[n-k:]``
    runs to the end of the list, so the subset can grow past ``m``; it cannot happen with 16
    samples per problem. ``strict_size`` considers only the ``n_max`` lowest instead.
    With ``m`` or fewer candidates all are kept, in conversation order (as the reference; the
    order decides where the prompts land after the seeded shuffle).
    """
    if len(ordered) <= m:
        return sorted(ordered)
    n = min(n_max, len(ordered))
    if strict_size:
        ordered = ordered[:n]
    subset = ordered[:m]
    for k in range(m):
        trial = subset[: m - k] + ordered[n - k :]
        if np.var([spread[i] for i in trial]) > np.var([spread[i] for i in subset]):
            subset = trial
    return subset


def stop_reason(
    conv: list[dict], turn: int, rates_row, num_turns: int, too_long: Callable[[list[dict]], bool]
) -> str | None:
    """Why the cut after ``turn`` messages (and all later ones) is not emitted, or None."""
    marker = ALL_PUBLIC_PASSED_MARKER
    if marker in conv[turn - 1]["content"] and marker in conv[turn - 3]["content"]:
        return "passed twice"
    if too_long(conv[:turn]):
        return "too long"
    if (
        turn // 2 < num_turns
        and _rate_at(rates_row, turn // 2 - 2) == 1.0
        and _rate_at(rates_row, turn // 2) == 1.0
    ):
        return "solved"
    return None


def _rate_at(row, i: int):
    """``row[i]``, or None past the end (a record with fewer turns than the rule looks at)."""
    return row[i] if 0 <= i < len(row) else None


def prompt_record(record: dict, conversation: list[dict], prev_best: float) -> dict:
    return {
        "example_id": record["id"],
        "conversation": conversation,
        "test_cases": record["test_cases"],
        "difficulty": record.get("difficulty"),
        "prev_best_pass_rate": prev_best,
    }


def select_conversations(record: dict, rates: np.ndarray, opts: BanditOptions) -> list[tuple]:
    """``(conversation, index)`` pairs kept for one problem (steps 4–6)."""
    ordered, spread = candidates(rates, opts.is_test)
    convs = record["conversations"]
    if opts.is_test and ordered:
        return [(convs[ordered[0]][:TEST_MESSAGES], ordered[0])]
    if opts.is_test:
        return []
    subset = max_variance_subset(ordered, spread, strict_size=opts.strict_subset_size)
    return [(convs[i], i) for i in subset]


def problem_rates(record: dict, opts: BanditOptions) -> np.ndarray:
    n_tests = len(json.loads(record["test_cases"])["inputs"])
    n_public = ASSUMED_PUBLIC_TESTS
    if opts.actual_public_count and "public_test_cases" in record:
        n_public = len(json.loads(record["public_test_cases"])["inputs"])
    return combined_pass_rates(record["all_pass_rates"], record["public_pass_rates"], n_tests, n_public)


def prompts_for_problem(record: dict, opts: BanditOptions, too_long, counts: BanditCounts) -> list:
    """All bandit prompts of one problem (empty if it is skipped by dynamic sampling)."""
    if all(all(r["passing"]) for r in record["turn0_results"]):
        counts.skipped += 1
        return []
    out = [prompt_record(record, record["conversations"][0][:2], 0.0)]
    rates = problem_rates(record, opts)
    kept = select_conversations(record, rates, opts)
    counts.kept += bool(kept)
    for conv, idx in kept:
        for turn in range(4, 4 + 2 * opts.num_turns, 2):
            if turn > len(conv):
                break
            reason = stop_reason(conv, turn, rates[idx], opts.num_turns, too_long)
            counts.public_passes += reason == "solved"
            if reason:
                break
            earlier = rates[idx][: (turn - 2) // 2].tolist()
            out.append(prompt_record(record, conv[:turn], max(earlier) if earlier else 0.0))
    return out


def build_bandit_prompts(
    records, count_tokens: Callable[[list[dict]], int], opts: BanditOptions | None = None
) -> tuple[list[dict], BanditCounts]:
    """Validated trajectory records → shuffled bandit prompts and the counts."""
    opts = opts or BanditOptions()
    counts = BanditCounts()

    def too_long(messages):
        return count_tokens(messages) > opts.max_prompt_tokens

    prompts = []
    for record in records:
        prompts.extend(prompts_for_problem(record, opts, too_long, counts))
    counts.emitted = len(prompts)
    random.Random(opts.seed).shuffle(prompts)
    return prompts, counts
