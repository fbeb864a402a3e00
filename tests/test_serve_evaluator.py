"""The evaluator as a real Ray Serve app on a private local cluster."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest

pytestmark = pytest.mark.slow

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"


def cases(n: int) -> dict:
    return {"inputs": [f"{i} {i + 1}\n" for i in range(n)], "outputs": [str(2 * i + 1) for i in range(n)]}


def test_handle_by_name_answers_with_reference_results(evaluator_app):
    from ray import serve

    handle = serve.get_deployment_handle("Evaluator", app_name="evaluator")
    result = handle.remote({"code": ADD, "test_cases": json.dumps(cases(3))}).result(timeout_s=60)
    assert result["passing"] == [True, True, True]
    assert result["feedback"][0] == "Input:\n0 1\nProgram's Output:\n1\nExpected Output:\n1"


def test_bad_requests_get_clear_failures_and_the_service_keeps_serving(evaluator_app):
    bad = [
        "not a dict",
        {"code": ADD},
        {"test_cases": cases(1)},
        {"code": ADD, "test_cases": {"inputs": ["1 2"], "outputs": []}},
        {"code": ADD, "test_cases": {"inputs": [], "outputs": []}},
        {"code": "x" * (10 << 20), "test_cases": cases(1)},
        {"code": "print(1)", "test_cases": {"inputs": [None], "outputs": ["1"]}},
    ]
    for request in bad:
        result = evaluator_app.remote(request).result(timeout_s=60)
        assert result["passing"] == [False], request if not isinstance(request, dict) else request.keys()
        assert result["feedback"][0].startswith("Exception: invalid request: ")
    assert evaluator_app.remote({"code": ADD, "test_cases": cases(2)}).result(timeout_s=60)["passing"] == [
        True,
        True,
    ]


class QueueLengthWarnings(logging.Handler):
    """Counts Serve's "Failed to get queue length from Replica(...)" warnings in this process."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += "Failed to get queue length" in record.getMessage()


def test_burst_of_500_concurrent_requests_all_answered_without_flooding_the_log(evaluator_app):
    from cobalt.serve.client import get_evaluator, load_client_config

    evaluator = get_evaluator("serve")

    async def burst():
        jobs = [evaluator.evaluate(ADD if i % 2 == 0 else WRONG, cases(4)) for i in range(500)]
        return await asyncio.gather(*jobs)

    warnings = QueueLengthWarnings()
    logging.getLogger("ray.serve").addHandler(warnings)
    try:
        started = time.monotonic()
        results = asyncio.run(burst())
        elapsed = time.monotonic() - started
    finally:
        logging.getLogger("ray.serve").removeHandler(warnings)
    print(f"500 requests in {elapsed:.1f} s; {warnings.count} queue-length warnings")
    assert len(results) == 500
    for i, result in enumerate(results):
        assert result["passing"] == ([True] * 4 if i % 2 == 0 else [False, False, False, False]), i
    # a saturated evaluator does not flood the caller's log (it had several hundred such lines)
    interval = load_client_config().late_replica_warning_interval_s
    assert warnings.count <= 1 + elapsed // interval


def test_each_replica_counts_its_requests_by_how_they_ended(evaluator_app):
    from cobalt.sandbox.evaluation import OUTCOMES

    pending = [evaluator_app.remote({"code": ADD, "test_cases": cases(2)}) for _ in range(20)]
    assert all(r.result(timeout_s=120)["passing"] == [True, True] for r in pending)
    for _ in range(4):  # 20 requests at once reached both replicas; ask whichever answers
        counts = evaluator_app.metrics.remote().result(timeout_s=60)
        assert set(counts) == set(OUTCOMES)
        assert counts["judged"] > 0 and counts["wall_backstop"] == counts["over_bound"] == 0
