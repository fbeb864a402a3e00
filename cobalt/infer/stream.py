"""Streaming records through an async step, durably and resumably.

Every long job (single-turn sampling, multi-turn debugging, hidden-test evaluation) is the same
loop: read records, skip those already in the output, run a bounded number at once, append each
result as soon as it is ready (flushed and fsynced), show progress. A crash loses only the
records in flight; re-running the same command continues where it stopped and never writes a
record twice. A torn last line from a crash is set aside before appending (``resume_appending``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from cobalt.common.jsonl import Key, append_jsonl, record_key, resume_appending

log = logging.getLogger("cobalt.infer")


@dataclass
class StreamStats:
    total: int = 0
    skipped: int = 0  # already in the output
    written: int = 0
    seconds: float = 0.0


def pending(records: list[dict], output: str, key: Key = "id") -> tuple[list[dict], int]:
    """Records not yet in ``output`` (after repairing a torn tail), and how many were skipped."""
    done = resume_appending(output, key)
    todo = [r for r in records if record_key(r, key) not in done]
    return todo, len(records) - len(todo)


async def stream_records(
    records: list[dict],
    step: Callable[[dict], Awaitable[dict]],
    output: str,
    *,
    concurrency: int,
    desc: str,
    key: Key = "id",
    unit: str = "problem",
) -> StreamStats:
    """Run ``step`` on every record not yet in ``output``, at most ``concurrency`` at once,
    appending results in completion order. The first exception cancels the rest and is raised
    (records finished before it stay written)."""
    started = time.monotonic()
    Path(output).parent.mkdir(parents=True, exist_ok=True)  # e.g. a run directory's repair-seed0/
    todo, skipped = pending(records, output, key)
    stats = StreamStats(total=len(records), skipped=skipped)
    if skipped:
        log.info("%s: %d of %d records already done, resuming", output, skipped, len(records))
    queue: asyncio.Queue[dict] = asyncio.Queue()
    for record in todo:
        queue.put_nowait(record)
    bar = tqdm(total=len(records), initial=skipped, desc=desc, unit=unit, dynamic_ncols=True)

    async def worker() -> None:
        while not queue.empty():
            record = queue.get_nowait()
            result = await step(record)
            append_jsonl(output, result)
            stats.written += 1
            bar.update(1)

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(todo))))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        bar.close()
        stats.seconds = time.monotonic() - started
    return stats
