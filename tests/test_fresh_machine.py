"""Nothing of a previous run may be needed: Ray clusters started or joined by cobalt.serve.cluster
work with an empty HOME and leave the user's ~/.ray alone (Ray 2.60's `ray start` refuses to run
without a token). Drivers run in subprocesses with a fresh, empty HOME."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from proc_helpers import live_processes

pytest.importorskip("ray")
# the tests that start Ray heads of their own are slow (they run alone: tests/run_alone.py); the
# file and import checks are light

ROOT = Path(__file__).resolve().parents[1]

# Stands in for veRL's main_ppo: a driver that joins the cluster the way main_ppo does (ray.init()
# with RAY_ADDRESS from the environment) and scores one program through the evaluator app.
DRIVER = textwrap.dedent(
    """
    import asyncio, ray
    ray.init(log_to_driver=False)
    from cobalt.serve.client import get_evaluator
    code = "a, b = map(int, input().split())\\nprint(a + b)\\n"
    result = asyncio.run(get_evaluator("serve").evaluate(code, {"inputs": ["1 2"], "outputs": ["3"]}))
    assert result["passing"] == [True], result
    print("DRIVER OK")
    """
)

# The launcher's whole private-head path (profile env, Ray head, evaluator app, the trainer's
# driver), with main_ppo replaced by DRIVER and the prepare steps satisfied by placeholder files.
LAUNCH = textwrap.dedent(
    """
    import sys
    from cobalt.train import launch
    launch.main_ppo_command = lambda overrides: [sys.executable, "-c", {driver!r}]
    sys.exit(launch.main(["--profile", "cpu_smoke", "data.train_files={train}",
                          "actor_rollout_ref.model.path={model}"]))
    """
)


def fresh_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0", **extra}


@pytest.mark.slow
def test_launcher_private_head_works_in_an_empty_home(tmp_path):
    """Before cobalt.serve.cluster, `ray start --head` found no token in an empty HOME and the
    launcher stopped with `ray start exited with 1` (RAY_AUTH_MODE=token came from the profile)."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "train.parquet").write_bytes(b"")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    script = LAUNCH.format(driver=DRIVER, train=tmp_path / "train.parquet", model=tmp_path / "model")
    env = fresh_env(home, RAY_AUTH_MODE="token")  # as Ray's docs (and our profiles) had users set it
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "DRIVER OK" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    assert "starting a private Ray head" in done.stdout
    assert list(home.iterdir()) == [], "nothing may be written into the user's HOME (~/.ray)"


@pytest.mark.slow
def test_joining_by_address_uses_the_clusters_token_as_ray_documents(tmp_path):
    """A driver given the address and RAY_AUTH_TOKEN_PATH (no RAY_AUTH_MODE) joins, on loopback:
    the node, the address it dials and every port the head's processes listen on."""
    from cobalt.serve.cluster import SINGLE_NODE_LOOPBACK, PrivateRayHead

    home = tmp_path / "home"
    home.mkdir()
    head = PrivateRayHead(num_cpus=1)
    try:
        head.wait_ready()
        script = textwrap.dedent(
            f"""
            import ray
            from cobalt.serve.cluster import connect, ray_cluster
            with ray_cluster({head.address!r}) as address:
                connect(address)
                assert ray.cluster_resources()["CPU"] == 1
                assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]
            print("JOINED")
            """
        )
        # what the head's "join with" line says beyond the address: its token, and that it is on loopback
        env = fresh_env(home, RAY_AUTH_TOKEN_PATH=head.token_path, **SINGLE_NODE_LOOPBACK)
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0 and "JOINED" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
        assert f"Connecting to existing Ray cluster at address: {head.address}" in done.stderr
        assert list(home.iterdir()) == []
        assert session_members(head.process.pid)  # GCS, raylet, workers (in groups of their own)
        listening = listening_addresses(session_members(head.process.pid))
        assert len(listening) >= 3  # GCS, raylet, ...
        # Regression: Ray registered the node as the machine's address and listened on all interfaces
        assert all(is_loopback(ip) for ip, _ in listening), listening
    finally:
        head.stop()
    assert head.process.poll() is not None
    assert session_members(head.process.pid) == [], "a process of the stopped head lives on"
    assert not os.path.exists(head.temp_dir), "a stopped head leaves no temp dir (logs, token) behind"


def listening_addresses(pids: list[int]) -> list[tuple[str, int]]:
    """(ip, port) of every TCP socket in LISTEN state that one of ``pids`` holds open."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                hex_ip, hex_port = fields[1].split(":")
                found.append((_proc_net_ip(hex_ip), int(hex_port, 16)))
    return found


def _proc_net_ip(hex_ip: str) -> str:
    """/proc/net/tcp{,6} write addresses as 32-bit words in host (little-endian) byte order."""
    raw = b"".join(bytes.fromhex(hex_ip[i : i + 8])[::-1] for i in range(0, len(hex_ip), 8))
    return str(ipaddress.ip_address(raw))


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return address.is_loopback or bool(
        getattr(address, "ipv4_mapped", None) and address.ipv4_mapped.is_loopback
    )


def session_members(sid: int) -> list[int]:
    """Live (not zombie) processes of the session ``ray start`` leads: all of the head's."""
    return live_processes(lambda entry: os.getsid(int(entry.name)) == sid)


@pytest.mark.slow
def test_a_private_head_does_not_outlive_its_owner(tmp_path):
    """An owner killed with SIGKILL (no `finally` runs) still takes its head down."""
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nfrom cobalt.serve.cluster import PrivateRayHead\n"
            "head = PrivateRayHead(num_cpus=1)\nhead.wait_ready()\n"
            "print(head.process.pid, flush=True)\ntime.sleep(600)\n",
        ],
        env=fresh_env(tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    head_pid = 0
    try:
        head_pid = int(owner.stdout.readline())
        owner.kill()
        owner.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and group_alive(head_pid):
            time.sleep(0.5)
        assert not group_alive(head_pid), "the Ray head outlived the process that started it"
        left = [p for p in Path("/tmp").glob("cobalt-ray-*") if (p / "owner.pid").exists()]
        left = [p for p in left if (p / "owner.pid").read_text() == str(owner.pid)]
        assert len(left) == 1  # nothing could remove it: its owner died by SIGKILL

        from cobalt.serve.cluster import remove_stale_temp_dirs

        assert str(left[0]) in remove_stale_temp_dirs()  # what the next head does first
        assert not left[0].exists()
    finally:
        owner.kill()
        owner.wait()
        if head_pid and group_alive(head_pid):
            os.killpg(head_pid, signal.SIGKILL)  # the head this test started, after a failure


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_joining_an_address_where_nothing_listens_fails_fast(tmp_path):
    # In a fresh interpreter: connect() is a no-op in a process already joined to a cluster (this
    # one is, once an earlier test used the session's cluster)
    from cobalt.serve.cluster import free_port

    # connect() alone is timed: the interpreter's imports took 19 s on a loaded CI machine
    script = textwrap.dedent(f"""
        import sys, time, ray
        from cobalt.serve.cluster import connect
        started = time.monotonic()
        try:
            connect('127.0.0.1:{free_port()}')
        finally:
            print(f"connect took {{time.monotonic() - started:.1f}} s", file=sys.stderr)
        """)
    done = subprocess.run(
        [sys.executable, "-c", script], env=fresh_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "ConnectionError: no Ray cluster answers at 127.0.0.1" in done.stderr, done.stderr[-2000:]
    connect_s = float(done.stderr.rsplit("connect took ", 1)[1].split(" s")[0])
    assert connect_s < 10, f"connect() took {connect_s} s to fail"


@pytest.mark.parametrize("package", ["vllm", "ray", "verl", "transformers"])
def test_setup_installed_the_heavy_packages_with_their_bytecode(package):
    # uv does not byte-compile unless told to, and with PYTHONDONTWRITEBYTECODE set (as on these
    # machines) no .pyc is ever written at import: every Ray worker then compiled vLLM, Ray and
    # veRL from source, and CI's heavy tests took ~50 % longer
    import importlib.util

    origin = importlib.util.find_spec(package).origin
    assert Path(importlib.util.cache_from_source(origin)).is_file(), f"{package}: no bytecode beside {origin}"


@pytest.mark.slow
def test_a_connected_driver_still_stops_gracefully_on_sigterm(tmp_path):
    """Regression: ``ray.init`` replaced the driver's SIGTERM handler by Ray's crash handler, so
    the quickstart, asked to stop, aborted (exit 134) without stopping its commands: an orphaned
    run_multi_turn.py went on retrying against the Ray head that had died with it."""
    home = tmp_path / "home"
    home.mkdir()
    script = textwrap.dedent(
        """
        import os, signal
        from cobalt.serve.cluster import connect, ray_cluster

        def interrupt(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")

        signal.signal(signal.SIGTERM, interrupt)
        with ray_cluster(None, num_cpus=1) as address:
            connect(address)
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                print("NOT INTERRUPTED")
            except KeyboardInterrupt:
                print("STOPPED GRACEFULLY")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=fresh_env(home), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0 and "STOPPED GRACEFULLY" in done.stdout, (
        done.stdout[-2000:] + done.stderr[-3000:]
    )


def test_the_libraries_caches_are_one_dir_of_the_test_run_never_the_users(pytestconfig):
    """vLLM's, Hugging Face datasets' and matplotlib's caches (those the caller did not set) go to
    one directory of this test run: never the user's ~/.cache, and shared by the tests' fresh HOMEs,
    so a vLLM engine of each test does not inspect its model class again (a 14 s subprocess)."""
    from conftest import _CACHE_DIR, PRIVATE_CACHES

    top, names = getattr(pytestconfig, _CACHE_DIR)
    assert "VLLM_CACHE_ROOT" in PRIVATE_CACHES
    for name in names:
        assert Path(os.environ[name]).parent == Path(top), name
    assert Path(top).is_dir() and Path.home() not in Path(top).parents
