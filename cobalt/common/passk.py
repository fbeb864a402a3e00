"""Pass@k with the unbiased estimator ``1 - C(n - c, k) / C(n, k)`` (Chen et al., 2021).

``n`` is the number of samples a problem actually has (the reference hard-codes 16 samples and 9
turns in the formula whatever the file holds; here both come from the data).
"""

from __future__ import annotations

from math import comb

from cobalt.common.jsonl import read_jsonl


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` samples drawn from ``n`` (``c`` correct) passes."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - comb(n - c, k) / comb(n, k)


def solved(result: dict) -> bool:
    """An execution result that passes every test."""
    return bool(result["passing"]) and all(result["passing"])


def turn_solved(pass_rate: float) -> bool:
    """A turn's answer is correct when it passes every hidden test (its pass rate is 1)."""
    return pass_rate == 1


def mean_pass_at_k(counts: list[tuple[int, int]], k: int) -> float | None:
    """Mean pass@k in % over problems given as ``(n, c)``; None if some problem has fewer than k."""
    if not counts or any(n < k for n, _ in counts):
        return None
    return 100.0 * sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)


def pass_at_k_summary(single_turn_output: str, ks: list[int]) -> dict:
    """``{"pass@1": ..., "pass@5": ...}`` (in %) of a single-turn output file, where n allows."""
    counts = [
        (len(r["exec_results"]), sum(map(solved, r["exec_results"]))) for r in read_jsonl(single_turn_output)
    ]
    summary = {f"pass@{k}": mean_pass_at_k(counts, k) for k in ks}
    return {key: round(value, 2) for key, value in summary.items() if value is not None}


def pass_at_1_per_problem(all_pass_rates: list[list[list[float]]]) -> list[list[float]]:
    """Pass@1 in % of each problem (rows) at each assistant turn that every problem has, from its
    K × T hidden pass-rate grid (a sample is correct when it passes every hidden test)."""
    if not all_pass_rates:
        return []
    turns = min(len(grid[0]) for grid in all_pass_rates)
    return [
        [100.0 * pass_at_k(len(grid), sum(turn_solved(row[t]) for row in grid), 1) for t in range(turns)]
        for grid in all_pass_rates
    ]


def pass_at_1_per_turn(all_pass_rates: list[list[list[float]]]) -> list[float]:
    """Pass@1 in % at each assistant turn: the mean over problems of :func:`pass_at_1_per_problem`."""
    per_problem = pass_at_1_per_problem(all_pass_rates)
    return [sum(column) / len(column) for column in zip(*per_problem)]
