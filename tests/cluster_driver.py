"""A driver the multi-node tests run as a subprocess in a LocalCluster's environment (the test
process itself may already be joined to the session's cluster):

    python tests/cluster_driver.py CONFIG     # deploy the evaluator app of CONFIG, answer requests
    python tests/cluster_driver.py --actors   # where every actor ran, the dead ones included
    python tests/cluster_driver.py --replicas APP   # the node of each live replica of Serve app APP

prints one JSON line: the cluster's live nodes, the node of each evaluator replica, the results;
or the live nodes and each actor's class, state and node (GCS's actor table: Ray's state API
needs the dashboard, which our heads do not start)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
CASES = {"inputs": [f"{i} {i + 1}\n" for i in range(3)], "outputs": [str(2 * i + 1) for i in range(3)]}


def replica_nodes(app_name: str) -> dict[str, str]:
    """Each live replica of ``app_name`` and the node it runs on (asked of the replica's actor)."""
    import ray

    prefix = f"SERVE_REPLICA::{app_name}#"
    names = [
        a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].startswith(prefix)
    ]
    where = lambda actor: ray.get_runtime_context().get_node_id()  # noqa: E731
    return {name: ray.get(ray.get_actor(name, "serve").__ray_call__.remote(where)) for name in names}


def main(config: str) -> None:
    import ray

    from cobalt.serve.client import ServeEvaluator
    from cobalt.serve.cluster import connect
    from cobalt.serve.evaluator import load_evaluator_config, start_evaluator_app

    connect(os.environ["RAY_ADDRESS"])
    start_evaluator_app(config)
    _, opts = load_evaluator_config(config)
    evaluator = ServeEvaluator(opts.deployment_name, opts.app_name)

    async def burst():
        return await asyncio.gather(*(evaluator.evaluate(ADD, CASES) for _ in range(16)))

    results = asyncio.run(burst())
    report = {
        "nodes": sorted(n["NodeID"] for n in ray.nodes() if n["Alive"]),
        "replicas": replica_nodes(opts.app_name),
        "passing": [r["passing"] for r in results],
    }
    print(json.dumps(report))


def actors() -> None:
    import ray
    from ray._private import state

    from cobalt.serve.cluster import connect

    connect(os.environ["RAY_ADDRESS"])
    report = {
        "nodes": sorted(n["NodeID"] for n in ray.nodes() if n["Alive"]),
        "actors": [
            {"class": a["ActorClassName"], "state": a["State"], "node": a["Address"]["NodeID"]}
            for a in state.actors().values()
        ],
    }
    print(json.dumps(report))


def replicas(app_name: str) -> None:
    import ray

    from cobalt.serve.cluster import connect

    connect(os.environ["RAY_ADDRESS"])
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    print(json.dumps({"nodes": nodes, "replicas": replica_nodes(app_name)}))


if __name__ == "__main__":
    if sys.argv[1] == "--actors":
        actors()
    elif sys.argv[1] == "--replicas":
        replicas(sys.argv[2])
    else:
        main(sys.argv[1])
