"""Nothing of a previous run may be needed: a private Ray head works with an empty HOME and
leaves the user's ~/.ray alone (Ray 2.60's `ray start` refuses to run without a token)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

LAUNCHER_PATH = textwrap.dedent(
    """
    import asyncio
    from cobalt.serve.client import get_evaluator
    from cobalt.serve.cluster import connect, ray_cluster
    from cobalt.train.launch import start_evaluator

    # the launcher's private-head path: head, evaluator app from a separate driver, then a job
    with ray_cluster(None, num_cpus=4) as address:
        start_evaluator(address, "evaluator")
        connect(address)
        result = asyncio.run(get_evaluator("serve").evaluate("print(int(input()) + 1)",
                                                           {"inputs": ["1"], "outputs": ["2"]}))
        assert result["passing"] == [True], result
        print("EVALUATED")
    """
)


def test_private_head_works_in_an_empty_home_and_leaves_it_empty(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCHER_PATH], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and "EVALUATED" in proc.stdout, proc.stderr[-3000:]
    assert list(home.iterdir()) == []  # no ~/.ray/auth_token written behind the user's back


def test_joining_an_address_where_nothing_listens_fails_fast():
    import time

    from cobalt.serve.cluster import connect, free_port

    started = time.monotonic()
    with pytest.raises(ConnectionError, match=r"no Ray cluster answers at 127\.0\.0\.1"):
        connect(f"127.0.0.1:{free_port()}")
    assert time.monotonic() - started < 10
