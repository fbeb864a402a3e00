"""ServeEvaluator's handling of lost replicas and Serve's late-probe warnings, around a stand-in
for the Serve handle (the real app is in test_serve_replica_loss.py)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

pytest.importorskip("ray")
from ray.exceptions import ActorDiedError, ActorUnavailableError
from ray.serve.exceptions import ReplicaUnavailableError

from cobalt.serve import client
from cobalt.serve.client import ClientConfig, LateReplicaWarnings, ServeEvaluator

RESULT = {"passing": [True], "feedback": ["ok"]}


class FakeHandle:
    """Raises the given errors on successive calls, then answers."""

    def __init__(self, errors):
        self.errors = list(errors)
        self.calls = 0

    def remote(self, request):
        self.calls += 1

        async def answer():
            if self.errors:
                raise self.errors.pop(0)
            return RESULT

        return answer()


def evaluator(monkeypatch, errors, **settings) -> tuple[ServeEvaluator, FakeHandle]:
    from ray import serve

    handle = FakeHandle(errors)
    monkeypatch.setattr(serve, "get_deployment_handle", lambda *args, **kwargs: handle)
    config = ClientConfig(**{"retry_backoff_s": 0.01, "retry_backoff_max_s": 0.02, **settings})
    return ServeEvaluator(config=config), handle


def evaluate(ev: ServeEvaluator):
    return asyncio.run(ev.evaluate("print(1)", {"inputs": [""], "outputs": ["1"]}))


def test_a_request_whose_replica_was_lost_is_sent_again(monkeypatch, caplog):
    lost = [ActorDiedError(), ActorUnavailableError("unreachable", None), ReplicaUnavailableError("r1")]
    ev, handle = evaluator(monkeypatch, lost)
    with caplog.at_level(logging.WARNING, logger="cobalt.serve.client"):
        assert evaluate(ev) == RESULT
    assert handle.calls == 4
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["evaluator replica lost"] * 3


def test_every_request_sent_is_counted_in_the_task_that_sent_it_retries_too(monkeypatch):
    """What a step's episodes cost the evaluator is counted as requests leave: a retry is one more;
    a task's subtasks count into its counter; a concurrent task keeps its own; nothing counts
    outside counted_requests()."""
    ev, handle = evaluator(monkeypatch, [ActorDiedError()])
    request = ("print(1)", {"inputs": [""], "outputs": ["1"]})

    async def episode(requests: int) -> int:
        with client.counted_requests() as sent:
            await asyncio.gather(*(ev.evaluate(*request) for _ in range(requests)))
        return sent[0]

    async def two_episodes():
        return await asyncio.gather(episode(2), episode(3))

    assert asyncio.run(two_episodes()) == [2 + 1, 3]  # the first request of the first is sent twice
    assert evaluate(ev) == RESULT and handle.calls == 7  # uncounted, and no error without a counter


def test_retries_stop_after_the_attempts(monkeypatch):
    ev, handle = evaluator(monkeypatch, [ActorDiedError()] * 10, retry_attempts=3)
    with pytest.raises(ActorDiedError):
        evaluate(ev)
    assert handle.calls == 3


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_retries_stop_at_the_deadline(monkeypatch):
    ev, handle = evaluator(
        monkeypatch,
        [ActorDiedError()] * 1000,
        retry_attempts=1000,
        retry_backoff_s=0.05,
        retry_backoff_max_s=0.1,
        retry_deadline_s=0.3,
    )
    started = time.monotonic()
    with pytest.raises(ActorDiedError):
        evaluate(ev)
    assert time.monotonic() - started < 1.0 and 2 <= handle.calls < 10


def test_other_errors_are_not_retried(monkeypatch):
    ev, handle = evaluator(monkeypatch, [ValueError("bad request")])
    with pytest.raises(ValueError):
        evaluate(ev)
    assert handle.calls == 1


def test_the_client_settings_come_from_the_config():
    assert client.load_client_config("evaluator").retry_attempts >= 2
    with pytest.raises(ValueError):
        ClientConfig(retry_attempts=0)


def test_late_replica_warnings_are_digested():
    logger = logging.getLogger("test.late_replica_warnings")
    logger.propagate = False
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger.addHandler(handler)
    logger.addFilter(LateReplicaWarnings(interval_s=0.2))
    for _ in range(100):
        logger.warning("Failed to get queue length from %s within 0.1s.", "Replica(id='x')")
    logger.warning("something else")
    for _ in range(3):  # another kind: digested on its own
        logger.warning("Failed to fetch queue length for Replica(id='x'): 'The actor died'")
    time.sleep(0.25)
    logger.warning("Failed to get queue length from %s within 0.1s.", "Replica(id='y')")
    assert seen == [
        "Failed to get queue length from Replica(id='x') within 0.1s.",
        "something else",
        "Failed to fetch queue length for Replica(id='x'): 'The actor died'",
        "Failed to get queue length from Replica(id='y') within 0.1s. [99 more like this in the last 0.2 s]",
    ]
