"""The one home for starting or joining a Ray cluster.

A private head (``PrivateRayHead``) runs ``ray start --head`` on loopback with its own port, temp
dir and **its own auth token** (Ray 2.60 enables token auth; ``ray start`` refuses to run without a
token and only ``ray.init()`` would create one, in the user's ``~/.ray``). The token file lives in
the head's temp dir and is handed to drivers and workers through ``RAY_AUTH_TOKEN_PATH``, so a
fresh machine needs nothing and the user's ``~/.ray`` is never read or written. Joining a cluster
(``--address``) uses that cluster's token as Ray documents (``RAY_AUTH_TOKEN``,
``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateRayHead:
    """``ray start --head --block`` on 127.0.0.1 with its own port, temp dir and token;
    :meth:`stop` ends exactly this head (SIGTERM, then SIGKILL of its process group)."""

    def __init__(
        self, num_cpus: int, num_gpus: int = 0, temp_dir: str | None = None, log_path: str | None = None
    ):
        self.port = free_port()
        # short: Ray's unix socket paths under the temp dir are length-limited
        self.temp_dir = temp_dir or tempfile.mkdtemp(prefix="cobalt-ray-", dir="/tmp")
        self.address = f"127.0.0.1:{self.port}"
        self.token_path = os.path.join(self.temp_dir, "auth_token")
        fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        cmd = [
            str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
            "--node-ip-address=127.0.0.1", f"--port={self.port}", f"--temp-dir={self.temp_dir}",
            f"--num-cpus={num_cpus}", f"--num-gpus={num_gpus}", "--include-dashboard=false",
            "--disable-usage-stats",
        ]  # fmt: skip
        self.log = open(log_path or os.path.join(self.temp_dir, "head.log"), "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            cmd,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **self.env()},
        )

    def env(self) -> dict[str, str]:
        """What a driver or subprocess needs in its environment to join this head."""
        return {"RAY_ADDRESS": self.address, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": self.token_path}

    def wait_ready(self, timeout_s: float = 120) -> None:
        """Wait until a driver can connect. Probed from a fresh interpreter: Ray reads its auth
        settings once per process."""
        probe = [sys.executable, "-c", f"import ray; ray.init(address={self.address!r}, log_to_driver=False)"]
        env = {**os.environ, **self.env()}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ray start exited with {self.process.returncode}; see {self.log.name}")
            try:
                if subprocess.run(probe, capture_output=True, timeout=60, env=env).returncode == 0:
                    return
            except subprocess.TimeoutExpired:
                pass
            time.sleep(1)
        raise TimeoutError(
            f"Ray head at {self.address} not ready after {timeout_s:.0f} s; see {self.log.name}"
        )

    def stop(self, timeout_s: float = 60) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of this head only
        except ProcessLookupError:
            pass
        self.log.close()


@contextlib.contextmanager
def ray_cluster(
    address: str | None = None, *, num_cpus: int | None = None, num_gpus: int = 0, log=print
) -> Iterator[str]:
    """Join ``address`` (or ``$RAY_ADDRESS``), or start a :class:`PrivateRayHead`; the join
    settings are exported to this process's environment while inside (so ``ray.init`` here and
    subprocesses both work), and a head started here is stopped on exit."""
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        yield address
        return
    head = PrivateRayHead(num_cpus or os.cpu_count() or 2, num_gpus)
    saved = {key: os.environ.get(key) for key in head.env()}
    try:
        log(
            f"starting a private Ray head at {head.address} (join with RAY_ADDRESS={head.address} RAY_AUTH_TOKEN_PATH={head.token_path})"
        )
        head.wait_ready()
        os.environ.update(head.env())
        yield head.address
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        head.stop()


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail within seconds, saying what to do, when nothing listens at ``address`` (``ray.init``
    would retry for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as e:
        raise ConnectionError(
            f"no Ray cluster answers at {address} ({e}); start one with `ray start --head` "
            "or leave out --address (and unset RAY_ADDRESS) to start a private one"
        ) from None


def connect(address: str) -> None:
    """``ray.init`` this process to ``address`` (idempotent)."""
    import ray

    if not ray.is_initialized():
        check_reachable(address)
        ray.init(address=address, log_to_driver=False)
