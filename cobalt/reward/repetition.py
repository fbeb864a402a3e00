"""Detecting degenerate, looping responses: a block of >= 32 characters repeated >= 8 times in a row.

The definition (reference section 4) as the reference checks it, one regex per block length::

    any(re.search(r"(.{L})\\1{7,}", s, re.DOTALL) for L in range(32, len(s) // 8 + 1))

costs seconds on a long response. :func:`has_repetitive_pattern` gives the same answer in roughly
linear time; :func:`naive_has_repetitive_pattern` is the definition, kept for tests and benchmarks.
"""

from __future__ import annotations

import re

MIN_BLOCK = 32
MIN_REPEATS = 8


def naive_has_repetitive_pattern(s: str, min_block: int = MIN_BLOCK, min_repeats: int = MIN_REPEATS) -> bool:
    """The definition, one regex per block length (slow: for tests and benchmarks)."""
    for length in range(min_block, len(s) // min_repeats + 1):
        if re.search(rf"(.{{{length}}})\1{{{min_repeats - 1},}}", s, re.DOTALL):
            return True
    return False


def has_repetitive_pattern(s: str, min_block: int = MIN_BLOCK, min_repeats: int = MIN_REPEATS) -> bool:
    """True iff some block of L >= ``min_block`` characters occurs ``min_repeats`` times back to back.

    A block of length L repeated m times at position i means ``s[j] == s[j + L]`` for every j in
    the window [i, i + (m - 1) L). Such a window is (m - 1) L long, so it contains one of the
    sample points j = 0, (m-1)L, 2(m-1)L, ...; at each sample we measure, with C-speed slice
    comparisons, how far the agreement ``s[j] == s[j + L]`` extends to the left and right.
    """
    n = len(s)
    for length in range(min_block, n // min_repeats + 1):
        need = (min_repeats - 1) * length  # agreeing positions needed in a row
        last = n - length  # s[j] == s[j + L] is defined for j < last
        for j in range(0, last, need):
            if s[j] != s[j + length]:
                continue
            right = _agree_run(s, j, length, min(need, last - j), forward=True)
            if right >= need:
                return True
            left = _agree_run(s, j, length, min(need - right, j), forward=False)
            if left + right >= need:
                return True
    return False


def _agree_run(s: str, j: int, shift: int, cap: int, forward: bool) -> int:
    """How many consecutive positions (at most ``cap``) agree with the position ``shift`` later:
    forward counts j, j+1, ...; backward counts j-1, j-2, ... Found by doubling then bisecting,
    each probe one slice comparison."""

    def agrees(k: int) -> bool:  # the first k positions in the chosen direction all agree
        lo, hi = (j, j + k) if forward else (j - k, j)
        return s[lo:hi] == s[lo + shift : hi + shift]

    good, step = 0, 1
    while good < cap and agrees(min(good + step, cap)):
        good = min(good + step, cap)
        step *= 2
    bad = min(good + step, cap + 1)  # agrees(bad) is False (or bad is beyond the cap)
    while bad - good > 1:
        mid = (good + bad) // 2
        if agrees(mid):
            good = mid
        else:
            bad = mid
    return good
