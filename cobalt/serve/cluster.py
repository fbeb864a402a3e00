"""The one home for starting or joining a Ray cluster (launcher, evaluator server, tests, benches).

Ray 2.60 clusters use token authentication. A head this module starts gets its own random token
in a file inside its own temp dir; the head, its workers and every driver or subprocess that joins
it find that file through ``RAY_AUTH_TOKEN_PATH`` (see :meth:`PrivateRayHead.env`). Nothing here
reads or writes the user's ``~/.ray``: joining another cluster (``--address`` / ``$RAY_ADDRESS``)
uses that cluster's token the way Ray documents it (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or
``~/.ray/auth_token``, read by Ray itself).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

AUTH_MODE = "RAY_AUTH_MODE"
TOKEN = "RAY_AUTH_TOKEN"
TOKEN_PATH = "RAY_AUTH_TOKEN_PATH"
# Ray 2.60 replaces 127.0.0.1 by the machine's own address (node IP, the address drivers dial,
# gRPC servers listening on every interface) unless it believes multi-node clusters are off; that
# switch (meant for laptops) keeps a private head and everything joining it on loopback, and makes
# Ray refuse worker nodes, which a private head never has. A process joining such a head needs it
# too (PrivateRayHead.env, and join_env for a loopback address); clusters joined at another address
# keep Ray's own behaviour.
SINGLE_NODE_LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Ray drains a node for 30 s on SIGTERM (so Serve proxies elsewhere can move away from it); a
# private head or local cluster is stopped when its run is over, with nothing to drain to
NO_DRAIN = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
TEMP_PREFIX = "/tmp/cobalt-ray-"  # short: Ray's socket paths under the temp dir are length-limited
OWNER_FILE = "owner.pid"


class PrivateRayHead:
    """``ray start --head --block`` on 127.0.0.1 with its own port, temp dir and auth token;
    :meth:`stop` ends exactly this head (SIGTERM, then SIGKILL of its process group) and removes
    the temp dir it made; the death of the thread that created it ends the head too, and the next
    head started on the machine removes the temp dir such a head left behind."""

    def __init__(
        self,
        num_cpus: int,
        num_gpus: int = 0,
        temp_dir: str | None = None,
        log_path: str | None = None,
        *,
        detach: bool = False,
    ):
        """``detach``: the head outlives this process (no death signal; its temp dir's owner is the
        head itself), for :class:`LocalCluster` started by ``python -m cobalt.serve.cluster start``."""
        self.owns_temp_dir = temp_dir is None
        if self.owns_temp_dir:
            remove_stale_temp_dirs()
            temp_dir = tempfile.mkdtemp(
                prefix=os.path.basename(TEMP_PREFIX), dir=os.path.dirname(TEMP_PREFIX)
            )
            Path(temp_dir, OWNER_FILE).write_text(str(os.getpid()))
        self.temp_dir = temp_dir
        os.makedirs(self.temp_dir, exist_ok=True)
        self.token_path = os.path.join(self.temp_dir, "auth_token")
        _write_private_file(self.token_path, secrets.token_hex(32))
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        cmd = ([] if detach else die_with_this_thread()) + [
            str(Path(sys.executable).with_name("ray")),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={self.port}",
            f"--ray-client-server-port={free_port()}",
            f"--temp-dir={self.temp_dir}",
            f"--num-cpus={num_cpus}",
            f"--num-gpus={num_gpus}",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ]
        self.log = open(  # noqa: SIM115 (closed in stop())
            log_path or os.path.join(self.temp_dir, "head.log"), "w"
        )
        head_env = {**NO_DRAIN, **self.child_env()}
        self.process = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, env=head_env
        )
        if detach and self.owns_temp_dir:
            Path(temp_dir, OWNER_FILE).write_text(str(self.process.pid))

    def env(self) -> dict[str, str]:
        """What a driver or subprocess needs in its environment to join this head (on loopback).
        A ``RAY_AUTH_TOKEN`` variable would take precedence over the file: drop it (:meth:`child_env`)."""
        return {
            "RAY_ADDRESS": self.address,
            AUTH_MODE: "token",
            TOKEN_PATH: self.token_path,
            **SINGLE_NODE_LOOPBACK,
        }

    def exported(self) -> contextlib.AbstractContextManager:
        """:meth:`env` set in ``os.environ`` for a ``with`` block (and ``RAY_AUTH_TOKEN`` unset)."""
        return exported(self.env(), drop=(TOKEN,))

    def child_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with :meth:`env` applied."""
        env = {k: v for k, v in (os.environ if base is None else base).items() if k != TOKEN}
        return {**env, **self.env()}

    def wait_ready(self, timeout_s: float = 120) -> None:
        """Wait until a driver can connect. Probed from a fresh interpreter, so this process's
        Ray state is left untouched."""
        probe = [sys.executable, "-c", f"import ray; ray.init(address={self.address!r}, log_to_driver=False)"]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ray start exited with {self.process.returncode}; see {self.log.name}")
            try:
                done = subprocess.run(probe, capture_output=True, timeout=60, env=self.child_env())
                if done.returncode == 0:
                    return
            except subprocess.TimeoutExpired:
                pass
            time.sleep(1)
        raise TimeoutError(
            f"Ray head at {self.address} not ready after {timeout_s:.0f} s; see {self.log.name}"
        )

    def stop(self, timeout_s: float = 60, keep_files: bool = False) -> None:
        """Stop this head and everything in its process group (its raylet, GCS, workers); remove
        the temp dir it made (logs and token) unless ``keep_files`` (then it is left for the user
        to read, and :func:`remove_stale_temp_dirs` leaves it alone too)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of this head only
        self.log.close()
        if self.owns_temp_dir and keep_files:
            Path(self.temp_dir, OWNER_FILE).unlink(missing_ok=True)
        elif self.owns_temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def remove_stale_temp_dirs() -> list[str]:
    """Remove this user's private-head temp dirs whose owner process is gone (killed before it
    could stop its head); returns them."""
    removed = []
    for path in Path(os.path.dirname(TEMP_PREFIX)).glob(os.path.basename(TEMP_PREFIX) + "*"):
        try:
            if path.stat().st_uid != os.geteuid():
                continue
            owner = int((path / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or not a head this module made
        if not _alive(owner):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def die_with_this_thread() -> list[str]:
    """A command prefix that sends the command SIGTERM when the thread that started it dies, even
    by SIGKILL: a Ray head (``ray start --block`` then stops its cluster) or a stage's command
    never outlives its owner."""
    setpriv = shutil.which("setpriv")  # util-linux
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []


def _write_private_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def join_env(address: str) -> dict[str, str]:
    """Variables for joining an existing cluster: its address, token mode when Ray would find a
    token (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``) and the user has
    not chosen a mode (Ray itself never enables token mode for an explicit address), and
    :data:`SINGLE_NODE_LOOPBACK` for a cluster on loopback (a private head or a
    :class:`LocalCluster`) unless the user has set that switch: without it ``ray.init`` replaces
    127.0.0.1 by the machine's address and cannot reach the head."""
    env = {"RAY_ADDRESS": address}
    if AUTH_MODE not in os.environ and _token_available():
        env[AUTH_MODE] = "token"
    if is_loopback_address(address):
        env.update({k: v for k, v in SINGLE_NODE_LOOPBACK.items() if k not in os.environ})
    return env


def is_loopback_address(address: str) -> bool:
    """Whether ``address`` (``HOST:PORT``, ``ray://HOST:PORT``, ``[::1]:PORT``) names this machine's
    loopback interface: ``localhost`` or a 127.0.0.0/8 or ::1 address."""
    host = address.split("://", 1)[-1].rpartition(":")[0] or address.split("://", 1)[-1]
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token_available() -> bool:
    if os.environ.get(TOKEN):
        return True
    path = os.environ.get(TOKEN_PATH) or os.path.join(os.path.expanduser("~"), ".ray", "auth_token")
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


@contextlib.contextmanager
def exported(env: dict[str, str], drop: tuple[str, ...] = ()) -> Iterator[None]:
    """Set ``env`` (and unset ``drop``) in ``os.environ`` for the block; restore afterwards."""
    saved = {key: os.environ.get(key) for key in (*env, *drop)}
    for key in drop:
        os.environ.pop(key, None)
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _visible_devices(value: str) -> int:
    """GPUs CUDA_VISIBLE_DEVICES leaves visible: its ids up to the first invalid one (``-1``
    hides every GPU, as CUDA stops at an invalid id); an empty value hides all."""
    count = 0
    for item in value.split(","):
        item = item.strip()
        if not item or item.startswith("-"):
            break
        count += 1
    return count


def _nvidia_smi_gpus() -> int | None:
    """GPUs ``nvidia-smi -L`` lists (lines ``GPU N: ...``), or None without a working nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return sum(1 for line in done.stdout.splitlines() if line.startswith("GPU "))


def _torch_gpus() -> int | None:
    """torch's CUDA device count, only when torch is already imported (importing it costs seconds)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return int(torch.cuda.device_count())
    except Exception:
        return None


def gpu_count() -> tuple[int, str]:
    """This machine's GPUs and how they were found: ``CUDA_VISIBLE_DEVICES`` when set, else
    ``nvidia-smi -L``, else torch (if already imported); 0 when none of them says. Never raises."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return _visible_devices(visible), f"detected: CUDA_VISIBLE_DEVICES={visible!r}"
    listed = _nvidia_smi_gpus()
    if listed is not None:
        return listed, "detected: nvidia-smi -L"
    counted = _torch_gpus()
    if counted is not None:
        return counted, "detected: torch.cuda.device_count()"
    return 0, "detected: no nvidia-smi and no CUDA_VISIBLE_DEVICES"


def detect_gpus() -> int:
    """The number of GPUs on this machine (:func:`gpu_count` without the reason)."""
    return gpu_count()[0]


def head_gpus(override: int | None, cpu_platform: bool, needed: int = 0) -> tuple[int, str]:
    """GPUs a private Ray head should offer, and why: ``override`` (``--num-gpus``) when given;
    on the CPU platform ``needed`` fake GPUs (a Ray resource veRL's CPU workers ask for); else the
    GPUs detected here. Raises :class:`~cobalt.common.errors.ConfigError` (one line) when that is fewer
    than ``needed``: the run would wait for GPUs that never come."""
    from cobalt.common.errors import ConfigError

    if override is not None:
        count, why = override, f"--num-gpus {override}"
    elif cpu_platform:
        count, why = needed, "CPU platform: fake GPUs, one per FSDP rank"
    else:
        count, why = gpu_count()
    if count < needed:
        raise ConfigError(
            f"the run needs {needed} GPUs (trainer.nnodes x trainer.n_gpus_per_node) but a private Ray "
            f"head here would offer {count} ({why}); run on a machine with {needed} GPUs, join a "
            "cluster with --address, or rehearse it on CPU with --rehearse"
        )
    return count, why


@contextlib.contextmanager
def ray_cluster(
    address: str | None = None,
    *,
    num_cpus: int | None = None,
    num_gpus: int = 0,
    gpus_why: str | None = None,
    log=print,
) -> Iterator[str]:
    """Join ``address`` (or ``$RAY_ADDRESS``), or start a :class:`PrivateRayHead`; export the join
    environment into ``os.environ`` (so a later :func:`connect` here and subprocesses both work);
    yield the address; on exit stop only a head started here and restore ``os.environ``.
    ``gpus_why``: why the head offers ``num_gpus`` GPUs (:func:`head_gpus`), said in the log."""
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        log(f"joining the Ray cluster at {address}")
        with exported(join_env(address)):
            yield address
        return
    if gpus_why:
        log(f"the private Ray head offers {num_gpus} GPUs ({gpus_why})")
    head = PrivateRayHead(num_cpus or os.cpu_count() or 2, num_gpus)
    try:
        join_with = " ".join(f"{key}={value}" for key, value in head.env().items())
        log(f"starting a private Ray head at {head.address} (join with {join_with})")
        head.wait_ready()
        with head.exported():
            yield head.address
    except BaseException:
        head.stop(keep_files=True)
        log(f"the private Ray head's logs are kept in {head.temp_dir}")
        raise
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
    """``ray.init(address=...)`` in this process (once; later calls return). Call it inside
    :func:`ray_cluster`, or with the variables of :meth:`PrivateRayHead.env` set."""
    import ray

    if ray.is_initialized():
        return
    check_reachable(address)
    _reload_ray_settings()
    with sigterm_kept():
        ray.init(address=address, log_to_driver=False)


@contextlib.contextmanager
def sigterm_kept() -> Iterator[None]:
    """Keep this process's SIGTERM handling across ``ray.init``: Ray's core worker installs a
    crash handler that prints a stack and aborts on SIGTERM, so a driver that stops gracefully
    (the quickstart stops its commands and its Ray head) was aborted instead, orphaning them."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (and Python delivers signals there)
        return
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, handler if handler is not None else signal.SIG_DFL)


def _reload_ray_settings() -> None:
    """Ray reads its auth mode, token and multi-node switch once per process (at import or first
    use): re-read them from the environment this module may have changed since (the calls
    ``ray.init`` itself makes after enabling token mode; the constant it reads at import)."""
    from ray._private import ray_constants
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    ray_constants.ENABLE_RAY_CLUSTER = ray_constants.env_bool(
        ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, not ray_constants.IS_WINDOWS_OR_OSX
    )


# --------------------------------------------------------------------- several nodes on loopback
STATE_FILE = "cluster.json"
# `ray start` for a worker node that joins a loopback head. SINGLE_NODE_LOOPBACK keeps every Ray
# process on 127.0.0.1, but the CLI reads the same switch to refuse worker nodes. This process
# (only) is told multi-node is on, with the two addresses it resolves (the head's, its own) held on
# loopback; the node's raylet, agents and workers inherit SINGLE_NODE_LOOPBACK like the head's.
_WORKER_NODE = """
import sys
from ray._private import ray_constants, services
ray_constants.ENABLE_RAY_CLUSTER = True
services.get_node_ip_address = lambda address=None: "127.0.0.1"
from ray.scripts.scripts import main
sys.argv[0] = "ray"
main()
"""


class LocalCluster:
    """A Ray cluster of ``nodes`` nodes on this machine, all on 127.0.0.1: a :class:`PrivateRayHead`
    and ``nodes - 1`` worker nodes (``ray start --address --block``), each with ``num_cpus`` CPUs,
    ``num_gpus`` GPUs (on a machine without any: a resource count only, what the CPU training
    platform schedules on) and a temp dir of its own under the head's, all joined with the head's
    private token. :meth:`stop` ends exactly its nodes and removes the temp dir. Unless
    ``detach``, every node dies with the thread that started it, as a private head does; a
    detached cluster records itself in ``<temp_dir>/cluster.json`` and :func:`stop_cluster` ends it
    from any process."""

    def __init__(self, nodes: int, num_cpus: int, num_gpus: int = 0, *, detach: bool = False):
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one node, not {nodes}")
        self.nodes, self.num_cpus, self.num_gpus, self.detach = nodes, num_cpus, num_gpus, detach
        self.head = PrivateRayHead(num_cpus, num_gpus, detach=detach)
        self.workers: list[subprocess.Popen] = []
        self.address, self.temp_dir = self.head.address, self.head.temp_dir

    def env(self) -> dict[str, str]:
        return self.head.env()

    def exported(self) -> contextlib.AbstractContextManager:
        return self.head.exported()

    def node_dir(self, index: int) -> str:
        """Worker node ``index``'s temp dir (1 .. nodes - 1); the head's is :attr:`temp_dir`."""
        return os.path.join(self.temp_dir, f"node-{index}")

    def start(self, timeout_s: float = 240) -> None:
        """Wait for the head, start the worker nodes, wait until all ``nodes`` are alive."""
        try:
            self.head.wait_ready(timeout_s)
            self.workers = [self._start_worker(index) for index in range(1, self.nodes)]
            self._write_state()
            self.wait_alive(timeout_s)
        except BaseException:
            self.stop(keep_files=True)
            raise

    def _start_worker(self, index: int) -> subprocess.Popen:
        os.makedirs(self.node_dir(index))
        cmd = ([] if self.detach else die_with_this_thread()) + [
            sys.executable,
            "-c",
            _WORKER_NODE,
            "start",
            f"--address={self.address}",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={self.node_dir(index)}",
            f"--num-cpus={self.num_cpus}",
            f"--num-gpus={self.num_gpus}",
            f"--dashboard-agent-listen-port={free_port()}",  # the default (52365) is the head's
            "--block",
            "--disable-usage-stats",
        ]
        with open(self.node_dir(index) + ".log", "w") as log:
            return subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**NO_DRAIN, **self.head.child_env()},
            )

    def wait_alive(self, timeout_s: float = 240) -> None:
        """Wait until the cluster has ``nodes`` live nodes (probed from a fresh interpreter)."""
        deadline = time.monotonic() + timeout_s
        alive = 0
        while time.monotonic() < deadline:
            for index, worker in enumerate(self.workers, 1):
                if worker.poll() is not None:
                    raise RuntimeError(
                        f"worker node {index} exited with {worker.returncode}; see {self.node_dir(index)}.log"
                    )
            alive = alive_nodes(self.address, self.head.child_env())
            if alive == self.nodes:
                return
            time.sleep(1)
        raise TimeoutError(f"{alive} of {self.nodes} nodes alive at {self.address} after {timeout_s:.0f} s")

    def _write_state(self) -> None:
        state = {
            "address": self.address,
            "temp_dir": self.temp_dir,
            "nodes": self.nodes,
            "num_cpus": self.num_cpus,
            "num_gpus": self.num_gpus,
            "pids": [self.head.process.pid, *(w.pid for w in self.workers)],
            "env": self.env(),
        }
        Path(self.temp_dir, STATE_FILE).write_text(json.dumps(state, indent=1) + "\n")

    def stop(self, timeout_s: float = 60, keep_files: bool = False) -> None:
        """Stop the worker nodes, then the head (each with its whole process group); remove the
        temp dir unless ``keep_files``."""
        for worker in self.workers:
            _end_process_group(worker.pid, self.temp_dir, timeout_s)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(1)
        self.head.stop(timeout_s, keep_files=keep_files)


def alive_nodes(address: str, env: dict[str, str]) -> int:
    """The number of live nodes of the cluster at ``address`` (0 if no driver can join it), asked
    from a fresh interpreter so this process's Ray state is left untouched."""
    probe = (
        f"import ray; ray.init(address={address!r}, log_to_driver=False); "
        "print(sum(node['Alive'] for node in ray.nodes()))"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env
        )
        return int(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else 0
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return 0


def _end_process_group(pid: int, marker: str, timeout_s: float) -> None:
    """SIGTERM ``pid`` (a ``ray start --block`` of ours: its command line names ``marker``, our
    temp dir), wait for it, then SIGKILL what is left of its process group."""
    if marker in _cmdline(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while marker in _cmdline(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if any(marker in _cmdline(p) for p in _group_members(pid)):
            os.killpg(pid, signal.SIGKILL)


def _cmdline(pid: int) -> str:
    """A live process's command line ('' once it has exited or is a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def _group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:  # the fields after the name: state, ppid, pgrp, ...
            members.append(int(stat.parent.name))
    return members


def processes_of(temp_dir: str) -> list[int]:
    """Live processes whose command line names ``temp_dir`` (a cluster's raylets, GCS, agents)."""
    return [int(p.name) for p in Path("/proc").glob("[0-9]*") if temp_dir in _cmdline(int(p.name))]


def find_cluster(where: str) -> dict:
    """The state of the detached cluster started at ``where``: its address or its temp dir."""
    candidates = (
        [Path(where)]
        if os.path.isdir(where)
        else Path(os.path.dirname(TEMP_PREFIX)).glob(os.path.basename(TEMP_PREFIX) + "*")
    )
    for path in candidates:
        try:
            state = json.loads(Path(path, STATE_FILE).read_text())
        except (OSError, ValueError):
            continue
        if where in (state["address"], state["temp_dir"], str(path)):
            return state
    raise LookupError(f"no cluster started by `python -m cobalt.serve.cluster start` at {where}")


def stop_cluster(where: str, timeout_s: float = 60) -> dict:
    """Stop the detached cluster at ``where`` (address or temp dir): its worker nodes, then its
    head, then remove its temp dir; returns its state."""
    state = find_cluster(where)
    for pid in reversed(state["pids"]):
        _end_process_group(pid, state["temp_dir"], timeout_s)
    shutil.rmtree(state["temp_dir"], ignore_errors=True)
    return state


def export_lines(env: dict[str, str]) -> list[str]:
    """Shell lines that give a shell ``env`` (``RAY_AUTH_TOKEN`` would win over the token file)."""
    return [f"export {key}={value}" for key, value in env.items()] + [f"unset {TOKEN}"]


def main(argv: list[str] | None = None) -> int:
    """``python -m cobalt.serve.cluster start|stop``: a local multi-node cluster on loopback."""
    from cobalt.common.cli import ArgumentParser

    parser = ArgumentParser(
        prog="python -m cobalt.serve.cluster",
        description="A Ray cluster of several nodes on this machine, on 127.0.0.1 with a private "
        "token: rehearse multi-node training and serving without a second machine.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser(
        "start",
        help='start a cluster and leave it running; prints the lines to export (eval "$(...)")',
    )
    start.add_argument("--nodes", type=int, default=2, help="head + nodes-1 worker nodes")
    start.add_argument("--num-cpus", type=int, default=2, help="CPUs each node offers")
    start.add_argument("--num-gpus", type=int, default=0, help="GPUs each node offers (a count only)")
    stop = sub.add_parser("stop", help="stop exactly the cluster started at ADDRESS or in TEMP_DIR")
    stop.add_argument("where", metavar="ADDRESS_OR_TEMP_DIR")
    args = parser.parse_args(argv)
    if args.command == "stop":
        try:
            state = stop_cluster(args.where)
        except LookupError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"stopped the {state['nodes']}-node cluster at {state['address']}", file=sys.stderr)
        return 0
    cluster = LocalCluster(args.nodes, args.num_cpus, args.num_gpus, detach=True)
    cluster.start()
    print(
        f"# {args.nodes} Ray nodes at {cluster.address} ({args.num_cpus} CPUs, {args.num_gpus} GPUs "
        f"each; logs in {cluster.temp_dir})\n"
        + "\n".join(export_lines(cluster.env()))
        + f"\n# pass --address {cluster.address}; stop with: "
        f"python -m cobalt.serve.cluster stop {cluster.temp_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
