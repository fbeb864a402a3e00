"""The sandboxed code evaluator as a Ray Serve deployment (``Evaluator`` in app ``evaluator``).

    serve run remote_reward_server:app --name evaluator      # or: python remote_reward_server.py

Callers reach it with ``serve.get_deployment_handle("Evaluator", app_name="evaluator")`` or, better,
``cobalt.serve.client.get_evaluator("serve")``. Replicas, CPUs and concurrency come from the
``serve:`` section of ``configs/evaluator.yaml`` (``$COBALT_EVALUATOR_CONFIG`` picks another file).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from concurrent.futures import ThreadPoolExecutor

from ray import serve

from cobalt.common.config import check_ranges, config_path, from_dict, load_config
from cobalt.common.testcases import failure_result
from cobalt.sandbox import SandboxConfig
from cobalt.sandbox.evaluation import REQUEST_OUTCOMES, judge
from cobalt.sandbox.runner import get_backend

log = logging.getLogger("cobalt.serve")


@dataclasses.dataclass(frozen=True)
class ServeConfig:
    app_name: str = "evaluator"
    deployment_name: str = "Evaluator"
    num_replicas: int | str = 2  # or "auto": sized to the node (sized_to_node)
    min_replicas: int = 2  # "auto" takes at least ...
    max_replicas: int = 80  # ... and at most this many
    reserve_cpus: int = 0  # "auto": the node's CPUs left to training and inference
    max_replicas_per_node: int | None = None  # None: no limit (Serve still spreads, best effort)
    num_cpus: float = 1
    memory_gb: float = 2
    max_ongoing_requests: int = 32
    sandboxes_per_replica: int = 4
    max_queued_requests: int = -1
    route_prefix: str | None = None

    def __post_init__(self):
        if isinstance(self.num_replicas, str) and self.num_replicas != AUTO:
            raise ValueError(f"serve.num_replicas must be a number or {AUTO!r}, not {self.num_replicas!r}")
        fixed = {} if self.auto else {"num_replicas": 1}
        check_ranges(self, "serve", positive=("num_cpus", "memory_gb"), at_least={**fixed,
            "min_replicas": 1, "max_replicas": self.min_replicas, "reserve_cpus": 0,
            "max_replicas_per_node": 1, "max_ongoing_requests": 1, "sandboxes_per_replica": 1,
            "max_queued_requests": -1})  # fmt: skip

    @property
    def auto(self) -> bool:
        return self.num_replicas == AUTO

    @property
    def capacity(self) -> int:
        """Requests the app runs at once; more wait, in a replica or in Serve's router."""
        return self.num_replicas * min(self.max_ongoing_requests, self.sandboxes_per_replica)


AUTO = "auto"


def load_evaluator_config(
    name: str | None = None, cpus: int | None = None, reserve_cpus: int | None = None
) -> tuple[SandboxConfig, ServeConfig]:
    """The sandbox and Serve settings of ``configs/<name>.yaml`` (or a path); ``num_replicas: auto``
    sized to a node of ``cpus`` CPUs (default: this machine's), ``reserve_cpus`` of them left to
    training and inference (default: the config's ``reserve_cpus``)."""
    name = name or os.environ.get("COBALT_EVALUATOR_CONFIG", "evaluator")
    data = load_config(name)
    sandbox = from_dict(SandboxConfig, data.get("sandbox"), source=f"{config_path(name)}: sandbox")
    return sandbox, sized_to_node(serve_config(name, data), node_cpus(cpus), reserve_cpus)[0]


def serve_config(name: str, data: dict | None = None) -> ServeConfig:
    """The ``serve`` section as written (``num_replicas`` may be ``auto``); ``data``: the config
    when already read."""
    data = load_config(name) if data is None else data
    return from_dict(ServeConfig, data.get("serve"), source=f"{config_path(name)}: serve")


def node_cpus(cpus: int | None = None) -> int:
    return cpus if cpus is not None else os.cpu_count() or 1


def sized_to_node(opts: ServeConfig, cpus: int, reserve_cpus: int | None = None) -> tuple[ServeConfig, str]:
    """``opts`` with ``num_replicas: auto`` replaced by the replicas that the node's ``cpus`` hold
    beyond ``reserve_cpus`` (default: the config's), between ``min_replicas`` and ``max_replicas``;
    and a line saying so. A fixed ``num_replicas`` is kept."""
    if not opts.auto:
        return opts, f"{opts.num_replicas} replicas (fixed)"
    reserve = opts.reserve_cpus if reserve_cpus is None else reserve_cpus
    fit = int((cpus - reserve) // opts.num_cpus)
    replicas = min(opts.max_replicas, max(opts.min_replicas, fit))
    line = (
        f"{replicas} replicas of {opts.num_cpus:g} CPU: {cpus} CPUs on the node, {reserve} left to "
        f"training and inference (at least {opts.min_replicas}, at most {opts.max_replicas})"
    )
    return dataclasses.replace(opts, num_replicas=replicas), line


class Evaluator:
    """One replica: runs requests ``{"code", "test_cases"}`` in the sandbox, several at once."""

    def __init__(self, sandbox: dict, sandboxes: int):
        self.cfg = SandboxConfig(**sandbox)
        get_backend(self.cfg)  # fail at start-up, loudly, if no sandbox works on this node
        # Requests beyond `sandboxes` wait here, inside the replica, rather than in Serve's router
        # (whose retry back-off left replicas idle under a burst).
        self.pool = ThreadPoolExecutor(max_workers=sandboxes, thread_name_prefix="sandbox")
        self.outcomes = serve.metrics.Counter(
            "cobalt_evaluator_requests",
            description="Requests by how they ended: judged, over_bound (replayed schedule over "
            "request_timeout_s), wall_backstop (request_wall_timeout_s), invalid_request, sandbox_error.",
            tag_keys=("outcome",),
        )

    async def __call__(self, request) -> dict:
        if not isinstance(request, dict) or "code" not in request or "test_cases" not in request:
            missing = (
                "request is not an object"
                if not isinstance(request, dict)
                else "missing field " + ", ".join(repr(f) for f in ("code", "test_cases") if f not in request)
            )
            REQUEST_OUTCOMES.add("invalid_request")
            self.outcomes.inc(tags={"outcome": "invalid_request"})
            return failure_result(f"Exception: invalid request: {missing}")
        loop = asyncio.get_running_loop()
        result, outcome = await loop.run_in_executor(
            self.pool, judge, request["code"], request["test_cases"], self.cfg
        )
        self.outcomes.inc(tags={"outcome": outcome})
        return result

    def metrics(self) -> dict[str, int]:
        """This replica's requests by how they ended (``cobalt.sandbox.evaluation.OUTCOMES``)."""
        return REQUEST_OUTCOMES.snapshot()


def build_app(config_name: str | None = None):
    """The Serve application, configured from ``configs/<config_name>.yaml``."""
    sandbox, opts = load_evaluator_config(config_name)
    deployment = serve.deployment(
        Evaluator,
        name=opts.deployment_name,
        num_replicas=opts.num_replicas,
        max_ongoing_requests=opts.max_ongoing_requests,
        max_queued_requests=opts.max_queued_requests,
        **_per_node_limit(opts),
        ray_actor_options={"num_cpus": opts.num_cpus, "memory": int(opts.memory_gb * (1 << 30))},
    )
    return deployment.bind(dataclasses.asdict(sandbox), opts.sandboxes_per_replica)


def _per_node_limit(opts: ServeConfig) -> dict:
    """Serve's option only when set (it has no "unlimited" value of its own)."""
    if opts.max_replicas_per_node is None:
        return {}
    return {"max_replicas_per_node": opts.max_replicas_per_node}


def start_evaluator_app(config_name: str | None = None):
    """Deploy the evaluator on the connected Ray cluster (reached by handle; no HTTP route) and
    return its deployment handle."""
    _, opts = load_evaluator_config(config_name)
    # Whoever starts Serve on a cluster fixes its HTTP options for everyone: keep a proxy, on
    # loopback and a free port, so an engine app deployed later still gets its OpenAI route.
    from cobalt.serve.cluster import free_port

    serve.start(http_options={"host": "127.0.0.1", "port": free_port()})
    return serve.run(build_app(config_name), name=opts.app_name, route_prefix=opts.route_prefix)


def main() -> None:
    """``python remote_reward_server.py``: join $RAY_ADDRESS (or start a private Ray head) and serve
    until Ctrl-C; a head started here is stopped on the way out."""
    import time

    import ray

    from cobalt.common.cli import ArgumentParser
    from cobalt.serve.cluster import connect, ray_cluster

    parser = ArgumentParser(description="Serve the sandboxed code evaluator on Ray Serve.")
    parser.add_argument("--config", default=None, help="config name in configs/ (default: evaluator)")
    parser.add_argument(
        "--address", default=None, help="Ray cluster address (default: $RAY_ADDRESS or a private head)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    _, opts = load_evaluator_config(args.config)
    with ray_cluster(
        args.address, num_cpus=max(4, int(opts.num_replicas * opts.num_cpus) + 2), log=log.info
    ) as address:
        connect(address)
        start_evaluator_app(args.config)
        log.info("evaluator app %r is up on %s; Ctrl-C to stop", opts.app_name, address)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            serve.delete(opts.app_name)
            ray.shutdown()
