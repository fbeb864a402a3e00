"""Running many programs through the evaluator: bounded concurrency, a progress bar, a cache.

A program run on the same tests twice gives the same verdicts (the sandbox is deterministic for
deterministic programs), so identical ``(code, tests)`` jobs are executed once.
"""

from __future__ import annotations

import asyncio

from tqdm import tqdm

from cobalt.prompts import no_code_result


def failure_result(message: str) -> dict:
    """An execution result for a request that failed as a whole (one failing entry)."""
    return {"passing": [False], "feedback": [message]}


async def run_jobs(
    evaluator,
    jobs: list[tuple[str | None, str]],
    *,
    concurrency: int = 64,
    timeout: float = 300.0,
    desc: str = "executing",
) -> list[dict]:
    """Execution results for ``(code, test_cases)`` jobs, in order. ``code=None`` = no program."""
    unique = list(dict.fromkeys(job for job in jobs if job[0] is not None))
    semaphore = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(unique), desc=desc, unit="run", disable=not unique, leave=False)

    async def run_one(code: str, tests: str) -> dict:
        async with semaphore:
            try:
                return await asyncio.wait_for(evaluator.evaluate(code, tests), timeout=timeout)
            except TimeoutError:
                return failure_result(f"TimeoutError: evaluation did not finish in {timeout:g} seconds.")
            except Exception as e:  # the evaluator's failure counts as one failing test
                return failure_result(f"Exception: {type(e).__name__}: {e}")
            finally:
                bar.update(1)

    try:
        results = await asyncio.gather(*(run_one(code, tests) for code, tests in unique))
    finally:
        bar.close()
    by_job = dict(zip(unique, results))
    return [by_job[job] if job[0] is not None else no_code_result() for job in jobs]
