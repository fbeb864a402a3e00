"""The one way to run programs on tests from anywhere in the project.

``get_evaluator("serve")`` talks to the ``Evaluator`` deployment of the ``evaluator`` Ray Serve app
(started with ``serve run remote_reward_server:app``); ``get_evaluator("local")`` runs the same
sandbox in this process, for tests and for users without Ray. Both expose::

    result = await evaluator.evaluate(code, test_cases)   # {"passing": [...], "feedback": [...]}
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol


class Evaluator(Protocol):
    async def evaluate(self, code: str, test_cases: dict | str) -> dict: ...


class LocalEvaluator:
    """Runs :func:`cobalt.sandbox.evaluate` in a thread pool of this process."""

    def __init__(self, max_workers: int | None = None, config=None):
        from cobalt.sandbox import evaluate  # imported lazily: the client is also used without it

        self._evaluate = evaluate
        self._config = config
        self._pool = ThreadPoolExecutor(
            max_workers=max_workers or max(2, os.cpu_count() or 2), thread_name_prefix="cobalt-eval"
        )

    async def evaluate(self, code: str, test_cases: dict | str) -> dict:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._evaluate, code, test_cases, self._config)


class ServeEvaluator:
    """Calls the ``Evaluator`` deployment through a Ray Serve handle (Ray must be connected)."""

    def __init__(self, deployment_name: str = "Evaluator", app_name: str = "evaluator"):
        from ray import serve

        self._handle = serve.get_deployment_handle(deployment_name, app_name=app_name)

    async def evaluate(self, code: str, test_cases: dict | str) -> dict:
        return await self._handle.remote({"code": code, "test_cases": test_cases})


_cache: dict[tuple, Evaluator] = {}


def get_evaluator(kind: str | None = None, **kwargs) -> Evaluator:
    """The evaluator of the given kind (``serve`` or ``local``; default ``$COBALT_EVALUATOR`` or
    ``serve``), created once per process."""
    kind = kind or os.environ.get("COBALT_EVALUATOR", "serve")
    key = (kind, tuple(sorted(kwargs.items())))
    if key not in _cache:
        if kind == "serve":
            _cache[key] = ServeEvaluator(**kwargs)
        elif kind == "local":
            _cache[key] = LocalEvaluator(**kwargs)
        else:
            raise ValueError(f"unknown evaluator kind {kind!r}: expected 'serve' or 'local'")
    return _cache[key]
