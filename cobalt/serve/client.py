"""The one way to run programs on tests from anywhere in the project.

``get_evaluator("serve")`` talks to the ``Evaluator`` deployment of the ``evaluator`` Ray Serve app
(started with ``serve run remote_reward_server:app``); ``get_evaluator("local")`` runs the same
sandbox in this process, for tests and for users without Ray. Both expose::

    result = await evaluator.evaluate(code, test_cases)   # {"passing": [...], "feedback": [...]}
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

from cobalt.common.errors import ConfigError

log = logging.getLogger("cobalt.serve.client")


class Evaluator(Protocol):
    async def evaluate(self, code: str, test_cases: dict | str) -> dict: ...


# The requests sent by the task that opened counted_requests() and by the tasks it starts (they
# copy its context, and with it this list); None where nothing counts.
_SENT: ContextVar[list[int] | None] = ContextVar("cobalt_evaluator_requests", default=None)


@contextmanager
def counted_requests() -> Iterator[list[int]]:
    """Count the evaluator requests this task sends, retries included: ``with counted_requests() as
    sent: ...`` leaves the number in ``sent[0]``. What a training step's episodes cost the
    evaluator (``reward/evaluator_requests/count``) is counted here, not computed from turns."""
    sent = [0]
    token = _SENT.set(sent)
    try:
        yield sent
    finally:
        _SENT.reset(token)


def _count_request() -> None:
    sent = _SENT.get()
    if sent is not None:
        sent[0] += 1


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
        _count_request()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._evaluate, code, test_cases, self._config)


@dataclasses.dataclass(frozen=True)
class ClientConfig:
    """``client:`` in ``configs/evaluator.yaml``: how a caller retries a request whose replica was
    lost (evaluation is idempotent, so sending it again is safe)."""

    retry_attempts: int = 6
    retry_backoff_s: float = 0.5
    retry_backoff_max_s: float = 8.0
    retry_deadline_s: float = 120.0
    late_replica_warning_interval_s: float = 60.0

    def __post_init__(self):
        if self.retry_attempts < 1:
            raise ValueError("client.retry_attempts must be at least 1")
        times = (self.retry_backoff_s, self.retry_backoff_max_s, self.retry_deadline_s)
        if min(*times, self.late_replica_warning_interval_s) < 0:
            raise ValueError("client: times must not be negative")


def load_client_config(name: str | None = None) -> ClientConfig:
    from cobalt.common.config import config_path, from_dict, load_config

    name = name or os.environ.get("COBALT_EVALUATOR_CONFIG", "evaluator")
    return from_dict(ClientConfig, load_config(name).get("client"), source=f"{config_path(name)}: client")


class ServeEvaluator:
    """Calls the ``Evaluator`` deployment through a Ray Serve handle (Ray must be connected). A
    request whose replica died or became unreachable is sent again (to a live replica), with
    back-off, up to ``retry_attempts`` times within ``retry_deadline_s``."""

    def __init__(
        self,
        deployment_name: str = "Evaluator",
        app_name: str = "evaluator",
        config: ClientConfig | None = None,
    ):
        from ray import serve

        self._handle = serve.get_deployment_handle(deployment_name, app_name=app_name)
        self._config = config or load_client_config()
        self._lost_replica = _lost_replica_errors()
        LateReplicaWarnings.install(self._config.late_replica_warning_interval_s)

    async def evaluate(self, code: str, test_cases: dict | str) -> dict:
        request = {"code": code, "test_cases": test_cases}
        cfg = self._config
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + cfg.retry_deadline_s
        delay, attempt = cfg.retry_backoff_s, 1
        while True:
            _count_request()
            try:
                return await self._handle.remote(request)
            except self._lost_replica as e:
                if attempt == cfg.retry_attempts or loop.time() + delay > give_up_at:
                    log.error("evaluator request failed after %d attempt(s): %s", attempt, _brief(e))
                    raise
                attempt += 1
                log.warning(
                    "evaluator replica lost (%s); sending the request again in %.1f s (attempt %d of %d)",
                    _brief(e),
                    delay,
                    attempt,
                    cfg.retry_attempts,
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, cfg.retry_backoff_max_s)


class LateReplicaWarnings(logging.Filter):
    """Serve's router logs "Failed to get queue length from Replica(...) within 0.1s" each time a
    replica's answer to its probe comes late. Under a burst that is hundreds of lines, and the
    lateness is mostly this process's own busy event loop (measured: the replicas answer a separate
    prober within 3 ms at p90 meanwhile). A replica that dies under a burst likewise gets one
    multi-line warning per request in flight. Of each kind, one warning per interval goes through,
    carrying the count of those held back. ``RAY_SERVE_QUEUE_LENGTH_RESPONSE_DEADLINE_S`` sets the
    deadline itself (the training profiles use the reference's 10 s)."""

    MARKS = (
        "Failed to get queue length",  # a late answer to the router's probe
        "Failed to fetch queue length",  # the probed replica has died
        "will not be considered for future requests",  # ditto, once per request in flight
    )
    _installed: LateReplicaWarnings | None = None

    def __init__(self, interval_s: float):
        super().__init__()
        self.interval_s = interval_s
        self.held = dict.fromkeys(self.MARKS, 0)
        self.next_at = dict.fromkeys(self.MARKS, 0.0)

    @classmethod
    def install(cls, interval_s: float) -> None:
        """On Serve's logger, once per process."""
        if cls._installed is None:
            cls._installed = cls(interval_s)
            logging.getLogger("ray.serve").addFilter(cls._installed)

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        mark = next((mark for mark in self.MARKS if mark in text), None)
        if mark is None:
            return True
        now = time.monotonic()
        if now < self.next_at[mark]:
            self.held[mark] += 1
            return False
        if self.held[mark]:
            record.msg = (
                f"{record.getMessage()} [{self.held[mark]} more like this in the last {self.interval_s:g} s]"
            )
            record.args = ()
        self.held[mark], self.next_at[mark] = 0, now + self.interval_s
        return True


def _lost_replica_errors() -> tuple[type[BaseException], ...]:
    """What Ray raises for a request whose replica died or became unreachable (not for a failure
    of the evaluation itself, which the replica answers with a result)."""
    from ray.exceptions import RayActorError  # ActorDiedError, ActorUnavailableError
    from ray.serve.exceptions import ReplicaUnavailableError

    return (RayActorError, ReplicaUnavailableError)


def _brief(error: BaseException) -> str:
    first_line = (str(error).strip().splitlines() or [""])[0]
    return f"{type(error).__name__}: {first_line[:200]}"


_cache: dict[tuple, Evaluator] = {}
EVALUATOR_KINDS = {"serve": ServeEvaluator, "local": LocalEvaluator}


def evaluator_kind(configured: str = "serve") -> str:
    """The evaluator kind to use: ``$COBALT_EVALUATOR`` when set (it overrides every config),
    else ``configured``; ConfigError for a kind that does not exist."""
    from_env = os.environ.get("COBALT_EVALUATOR")
    kind = from_env or configured
    if kind not in EVALUATOR_KINDS:
        source = "$COBALT_EVALUATOR" if from_env else "the configured evaluator"
        raise ConfigError(
            f"{source}: unknown evaluator kind {kind!r}; expected one of {sorted(EVALUATOR_KINDS)}"
        )
    return kind


def get_evaluator(kind: str | None = None, **kwargs) -> Evaluator:
    """The evaluator of the given kind (default :func:`evaluator_kind`), created once per process."""
    kind = kind or evaluator_kind()
    if kind not in EVALUATOR_KINDS:
        raise ConfigError(f"unknown evaluator kind {kind!r}; expected one of {sorted(EVALUATOR_KINDS)}")
    key = (kind, tuple(sorted(kwargs.items())))
    if key not in _cache:
        _cache[key] = EVALUATOR_KINDS[kind](**kwargs)
    return _cache[key]
