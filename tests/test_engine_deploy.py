"""The engine deploy honours ``deploy_timeout_s``: an app whose replica cannot be scheduled on the
cluster fails within the timeout, naming the resource Serve says it waits for, instead of hanging
in ``serve.run`` (which in Ray 2.60 waits with no limit for the app to run). Real Serve apps on the
session's private loopback Ray head (tests/conftest.py), which has CPUs and no GPU."""

from __future__ import annotations

import threading
import time

import pytest
from proc_helpers import wait_until

pytestmark = pytest.mark.slow


def outcomes_within(seconds: float, calls: dict) -> dict[str, tuple[float, BaseException | None]]:
    """Each of ``calls`` in a thread of its own, all at once (so a call that never returns fails
    the test instead of hanging it): for each, the time it took and what it raised."""
    results: dict = {}

    def target(name, call):
        started = time.monotonic()
        try:
            call()
        except BaseException as e:  # reported to the test
            results[name] = (time.monotonic() - started, e)
        else:
            results[name] = (time.monotonic() - started, None)

    threads = [threading.Thread(target=target, args=item, daemon=True) for item in calls.items()]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not [name for name in calls if name not in results], (
        f"a deploy did not return within {seconds:.0f} s"
    )
    return results


def deleted(serve, name: str) -> bool:
    app = serve.status().applications.get(name)
    return app is None or str(app.status).endswith("DELETING")


@pytest.fixture(scope="module")
def timed_out_deploys(ray_cluster, tmp_path_factory):
    """The two unschedulable apps of the tests below, deployed at the same time: each deploy
    waits out its 40 s idle, so the module waits once, not twice.

    ``unplaceable`` asks for a resource the cluster lacks. ``engine_no_gpu`` is the CPU engine
    config without ``accelerator_config: {kind: cpu}`` (as engine_paper on a CPU cluster): its vLLM
    replica asks for a GPU this cluster has not; it is on a route of its own, because the
    session's engine may hold the OpenAI route ``/`` on this cluster."""
    from ray import serve

    from cobalt.common.config import load_config
    from cobalt.serve.engine import EngineConfig, build_engine_app, deploy
    from cobalt.train.tiny_policy import random_policy

    @serve.deployment(ray_actor_options={"num_cpus": 0.1, "resources": {"no_such_gpu": 1}})
    class Unplaceable:
        def __call__(self, request):
            return "never"

    config = load_config("engine")
    config["llm"].pop("accelerator_config")
    config |= {"app_name": "engine_no_gpu", "deploy_timeout_s": 40}
    cfg = EngineConfig(**config)
    engine = build_engine_app(str(random_policy(tmp_path_factory.mktemp("engine_no_gpu") / "random")), cfg)
    calls = {
        "unplaceable": lambda: deploy(Unplaceable.bind(), "unplaceable", timeout_s=40, route_prefix=None),
        "engine_no_gpu": lambda: deploy(
            engine, cfg.app_name, cfg.deploy_timeout_s, route_prefix="/engine_no_gpu"
        ),
    }
    return outcomes_within(90, calls)


def test_a_replica_asking_for_a_resource_the_cluster_lacks_fails_within_the_timeout(timed_out_deploys):
    from ray import serve

    took, error = timed_out_deploys["unplaceable"]
    assert isinstance(error, TimeoutError), error
    assert took < 55 and "not running after 40 s (deploy_timeout_s)" in str(error)
    assert "no_such_gpu" in str(error)  # Serve's note: the resources each replica needs
    # its pending replica would take the resource later (the delete is asynchronous)
    assert wait_until(lambda: deleted(serve, "unplaceable"), 30)


def test_an_engine_whose_replica_needs_a_gpu_fails_within_deploy_timeout_s(timed_out_deploys):
    from ray import serve

    took, error = timed_out_deploys["engine_no_gpu"]
    assert isinstance(error, TimeoutError), error
    assert took < 55 and "engine_no_gpu" in str(error) and '"GPU": 1.0' in str(error), str(error)
    assert wait_until(lambda: deleted(serve, "engine_no_gpu"), 30)
