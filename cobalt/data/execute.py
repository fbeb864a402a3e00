"""Running programs through the evaluator: bounded concurrency, timeouts, failures as results.

:class:`Executor` is the one way callers run a response's program: at most ``concurrency`` calls
in flight (back-pressure instead of the reference's random sleeps), a deadline per call, and an
evaluator failure or timeout turned into a failing execution result that says why (reference
section 8), so a problem whose execution fails is recorded as failed rather than dropped.
:func:`run_jobs` runs a batch with a progress bar; identical ``(code, tests)`` jobs run once (the
sandbox is deterministic for deterministic programs).
"""

from __future__ import annotations

import asyncio
import logging

from tqdm import tqdm

from cobalt.common.prompts import no_code_result
from cobalt.common.testcases import failure_result

log = logging.getLogger("cobalt.execute")


class Executor:
    """Runs ``(code, tests)`` on an evaluator with at most ``concurrency`` calls in flight."""

    def __init__(self, evaluator, concurrency: int = 64, timeout_s: float = 300.0):
        self.evaluator = evaluator
        self.timeout_s = timeout_s
        self._slots = asyncio.Semaphore(concurrency)
        self.failures = 0

    async def run(self, code: str | None, tests) -> dict:
        """The execution result; ``code=None`` (no program in the response) never reaches the
        evaluator."""
        if code is None:
            return no_code_result()
        async with self._slots:
            try:
                return await asyncio.wait_for(self.evaluator.evaluate(code, tests), self.timeout_s)
            except TimeoutError:
                message = f"TimeoutError: evaluation did not finish in {self.timeout_s:g} seconds."
            except Exception as e:  # the evaluator's failure counts as one failing test
                message = f"Exception: {type(e).__name__}: {e}"
        self.failures += 1
        log.warning("execution failed: %s", message)
        return failure_result(message)


async def run_jobs(
    evaluator,
    jobs: list[tuple[str | None, str]],
    *,
    concurrency: int = 64,
    timeout: float = 300.0,
    desc: str = "executing",
) -> list[dict]:
    """Execution results for ``(code, test_cases)`` jobs, in order. ``code=None`` = no program."""
    executor = Executor(evaluator, concurrency, timeout)
    unique = list(dict.fromkeys(job for job in jobs if job[0] is not None))
    bar = tqdm(total=len(unique), desc=desc, unit="run", disable=not unique, leave=False)

    async def run_one(code: str, tests: str) -> dict:
        try:
            return await executor.run(code, tests)
        finally:
            bar.update(1)

    try:
        results = await asyncio.gather(*(run_one(code, tests) for code, tests in unique))
    finally:
        bar.close()
    by_job = dict(zip(unique, results))
    return [by_job[job] if job[0] is not None else no_code_result() for job in jobs]
