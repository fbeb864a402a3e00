"""The in-sandbox runner: compile a program once, then fork a fresh child per test case.

This file runs INSIDE the sandbox as ``python3 -S -c <this source>``, so it uses the standard
library only and imports nothing from the project. It reads one JSON request on stdin::

    {"code": str, "inputs": [str, ...], "limits": {...}, "landlock": null | {...}}

and writes one JSON line per finished test on stdout::

    {"i": index, "status": "exit" | "timeout" | "output_limit", "rc": int, "cpu": float,
     "stdout": str, "stderr": str}

Expected outputs never enter the sandbox: verdicts are decided by the launcher. Each child is forked
from a parent that has compiled (but not run) the program, so tests cannot see each other's state,
and start-up (interpreter, sandbox) is paid once per program instead of once per test.
"""

import builtins
import ctypes
import json
import linecache
import os
import resource
import selectors
import shutil
import signal
import sys
import time
import traceback

PROGRAM_NAME = "solution.py"
READ_CHUNK = 65536
BLOCKED_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter")
# Functions a program must not call (reference: destructive functions are disabled).
BLOCKED_OS_FUNCTIONS = (
    "kill", "killpg", "fork", "forkpty", "system", "popen", "putenv", "unsetenv",
    "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe",
    "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
    "posix_spawn", "posix_spawnp", "remove", "unlink", "removedirs", "rmdir", "rename",
    "renames", "replace", "truncate", "chmod", "fchmod", "lchmod", "chown", "fchown", "lchown",
    "chdir", "fchdir", "chroot", "setuid", "seteuid", "setgid", "setegid", "setreuid",
    "setregid", "link", "symlink", "mkfifo", "mknod",
)


# --- limits and hardening ------------------------------------------------------------------------

def set_limit(which, soft, hard=None):
    """Lower a resource limit (never raise it above the current hard limit)."""
    _, cur_hard = resource.getrlimit(which)
    hard = soft if hard is None else hard
    if cur_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur_hard), min(hard, cur_hard)
    resource.setrlimit(which, (soft, hard))


def limit_sandbox(limits):
    """Limits for the whole sandbox (this process and every child)."""
    set_limit(resource.RLIMIT_CORE, 0)
    set_limit(resource.RLIMIT_FSIZE, limits["max_file_bytes"])
    set_limit(resource.RLIMIT_NOFILE, 256)
    if limits.get("max_processes"):
        set_limit(resource.RLIMIT_NPROC, limits["max_processes"])
    # Not dumpable: children (same uid) cannot ptrace this process or open its /proc/<pid>/fd,
    # so a program cannot reach the result channel or its siblings' pipes.
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_DUMPABLE = 4
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    # Orphans of the tests (daemons) become our children, so end_sandbox() can reap them.
    PR_SET_CHILD_SUBREAPER = 36
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def end_sandbox():
    """Kill and reap every process left in the sandbox. We run as a uid of our own (or as init of
    a PID namespace), so kill(-1) reaches exactly the sandbox's processes."""
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def limit_program(limits):
    """Limits for one test's process, set in the child right before the program runs."""
    memory = limits["memory_bytes"]
    for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA, resource.RLIMIT_STACK):
        set_limit(which, memory)
    cpu = int(-(-limits["cpu_seconds"] // 1))  # ceil: RLIMIT_CPU counts whole seconds
    set_limit(resource.RLIMIT_CPU, cpu, cpu + 1)  # SIGXCPU at the limit, SIGKILL a second later


def disable_destructive_functions():
    """The reference's guard: destructive calls become None, some modules unimportable."""
    import subprocess
    for name in BLOCKED_OS_FUNCTIONS:
        if hasattr(os, name):
            setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    for name in BLOCKED_MODULES:
        sys.modules[name] = None


# --- Landlock (fallback backend without namespaces) ----------------------------------------------

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_RULE_PATH_BENEATH = 1
FS_READ = 1 | 4 | 8            # execute, read file, read dir
FS_ALL_V1 = (1 << 13) - 1      # every filesystem right of Landlock ABI 1
NET_ALL = 1 | 2                # bind and connect TCP (ABI 4)
SCOPE_ALL = 1 | 2              # abstract unix sockets and signals outside the domain (ABI 6)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def apply_landlock(spec):
    """Restrict this process and its children: read-only system dirs, full access to the scratch
    dir, no TCP, no signals or abstract sockets outside the sandbox (as far as the ABI allows)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, 1)  # 1 = LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        raise OSError(ctypes.get_errno(), "Landlock is not available")
    fs_all = FS_ALL_V1 | (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0)
    attr = _RulesetAttr(fs_all, NET_ALL if abi >= 4 else 0, SCOPE_ALL if abi >= 6 else 0)
    size = ctypes.sizeof(attr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    rules = [(path, FS_READ) for path in spec["read"]] + [(path, fs_all) for path in spec["write"]]
    for path, allowed in rules:
        if not os.path.exists(path):
            continue
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        # Rights that only make sense on directories are dropped for files.
        if not os.path.isdir(path):
            allowed &= 1 | 2 | 4 | (1 << 14)
        rule = _PathBeneath(allowed & fs_all, fd)
        if libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH,
                        ctypes.byref(rule), 0) < 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
        os.close(fd)
    PR_SET_NO_NEW_PRIVS = 38
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) < 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    os.close(ruleset)


# --- one test: the child side --------------------------------------------------------------------

def user_traceback(exc):
    """The traceback as ``python3 solution.py`` would print it, without the harness's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != PROGRAM_NAME:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def exit_code_of(exc):
    """Exit status and message for a SystemExit, as the interpreter computes them."""
    code = exc.code
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code & 0xFF, ""
    return 1, f"{code}\n"


def run_child(program, fds, workdir, limits):
    """In the forked child: wire up stdio, lock down, run the program, exit. Never returns."""
    status = 1
    try:
        os.setpgid(0, 0)
        os.chdir(workdir)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 4096)
        os.environ["OMP_NUM_THREADS"] = "1"
        limit_program(limits)
        sys.stdin = open(0, "r", encoding="utf-8", errors="surrogateescape", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.argv = [PROGRAM_NAME]
        disable_destructive_functions()
        status = run_program(program)
    finally:
        os._exit(status)


def run_program(program):
    """Execute the compiled program like ``python3 solution.py`` would; return the exit status."""
    status, message = 0, ""
    try:
        exec(program, {"__name__": "__main__", "__builtins__": builtins, "__file__": PROGRAM_NAME})
        if "threading" in sys.modules:  # wait for non-daemon threads, as interpreter exit does
            sys.modules["threading"]._shutdown()
    except SystemExit as exc:
        status, message = exit_code_of(exc)
    except BaseException as exc:  # noqa: BLE001 - any uncaught error ends the program
        status, message = 1, user_traceback(exc)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - e.g. output closed by the parent
            status = status or 1
    if message:
        try:
            os.write(2, message.encode("utf-8", "backslashreplace"))
        except OSError:
            pass
    return status


# --- one test: the parent side -------------------------------------------------------------------

class Run:
    """A running test: its child, pipes, captured output and limits."""

    def __init__(self, index, pid, workdir, stdin_fd, stdout_fd, stderr_fd, data, limits):
        self.index, self.pid, self.workdir = index, pid, workdir
        self.stdin_fd, self.data, self.written = stdin_fd, data, 0
        self.out = {stdout_fd: bytearray(), stderr_fd: bytearray()}
        self.stdout_fd, self.stderr_fd = stdout_fd, stderr_fd
        self.pidfd = os.pidfd_open(pid)
        self.deadline = time.monotonic() + limits["wall_seconds"]
        self.max_output = limits["max_output_bytes"]
        self.over_output = False

    def result(self, status, rc, cpu):
        decode = lambda b: b.decode("utf-8", "replace")  # noqa: E731
        return {"i": self.index, "status": status, "rc": rc, "cpu": round(cpu, 4),
                "stdout": decode(self.out[self.stdout_fd]), "stderr": decode(self.out[self.stderr_fd])}


def start_test(index, program, data, limits):
    """Fork a child running the program on one input, in a fresh working directory of its own (so
    files one test writes are not seen by the next); return its Run."""
    workdir = os.path.abspath(f"test-{index}")
    os.mkdir(workdir, 0o700)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        run_child(program, (in_r, out_w, err_w), workdir, limits)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child already did it, or has exited
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    for fd in (in_w, out_r, err_r):
        os.set_blocking(fd, False)
    return Run(index, pid, workdir, in_w, out_r, err_r, data, limits)


def forget(selector, fd):
    try:
        selector.unregister(fd)
    except KeyError:
        pass  # already unregistered (the pipe reached EOF earlier)


def close_stdin(run, selector):
    if run.stdin_fd is not None:
        forget(selector, run.stdin_fd)
        os.close(run.stdin_fd)
        run.stdin_fd = None


def feed_stdin(run, selector):
    try:
        run.written += os.write(run.stdin_fd, run.data[run.written:run.written + READ_CHUNK])
    except BlockingIOError:
        return
    except BrokenPipeError:  # the program exited or closed stdin without reading it all
        return close_stdin(run, selector)
    if run.written >= len(run.data):
        close_stdin(run, selector)


def drain(run, fd, kill_on_limit=True):
    """Read what is available on one output pipe; returns False at EOF."""
    buf = run.out[fd]
    while True:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        room = run.max_output - len(buf)
        buf += chunk[:max(room, 0)]
        if len(chunk) > room:
            run.over_output = True
            if kill_on_limit:
                kill_group(run.pid)
            return True


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def finish(run, selector, limits, killed_for_time=False):
    """Collect the exit status of a finished (or killed) child and release its resources."""
    _, wait_status, usage = os.wait4(run.pid, 0)
    for fd in (run.stdout_fd, run.stderr_fd):
        drain(run, fd, kill_on_limit=False)  # whatever the child wrote before it exited
    kill_group(run.pid)  # leftovers of the test (daemons) must not outlive it
    close_stdin(run, selector)
    for fd in (run.stdout_fd, run.stderr_fd, run.pidfd):
        forget(selector, fd)
        os.close(fd)
    shutil.rmtree(run.workdir, ignore_errors=True)
    cpu = usage.ru_utime + usage.ru_stime
    rc = os.waitstatus_to_exitcode(wait_status)
    if killed_for_time or cpu >= limits["cpu_seconds"] or rc == -signal.SIGXCPU:
        status = "timeout"
    elif run.over_output:
        status = "output_limit"
    else:
        status = "exit"
    return run.result(status, rc, cpu)


def run_tests(program, inputs, limits, emit):
    """Run every input with at most ``limits['concurrency']`` children at once."""
    selector = selectors.DefaultSelector()
    pending = list(range(len(inputs)))
    running = {}
    while pending or running:
        while pending and len(running) < limits["concurrency"]:
            index = pending.pop(0)
            run = start_test(index, program, inputs[index].encode("utf-8", "surrogateescape"), limits)
            running[run.pid] = run
            selector.register(run.pidfd, selectors.EVENT_READ, (run, "exit"))
            selector.register(run.stdout_fd, selectors.EVENT_READ, (run, "out"))
            selector.register(run.stderr_fd, selectors.EVENT_READ, (run, "out"))
            selector.register(run.stdin_fd, selectors.EVENT_WRITE, (run, "in"))
        timeout = max(0.0, min(r.deadline for r in running.values()) - time.monotonic())
        for key, _ in selector.select(timeout):
            run, what = key.data
            if run.pid not in running:
                continue
            if what == "in" and run.stdin_fd is not None:
                feed_stdin(run, selector)
            elif what == "out" and not drain(run, key.fd):
                forget(selector, key.fd)  # EOF: stop watching; closed in finish()
            elif what == "exit":
                emit(finish(run, selector, limits))
                del running[run.pid]
        now = time.monotonic()
        for run in [r for r in running.values() if r.deadline <= now]:
            kill_group(run.pid)
            emit(finish(run, selector, limits, killed_for_time=True))
            del running[run.pid]


def main():
    request = json.loads(sys.stdin.buffer.read())
    limits = request["limits"]
    if request.get("landlock"):
        apply_landlock(request["landlock"])
    limit_sandbox(limits)
    out = sys.stdout

    def emit(result):
        out.write(json.dumps(result) + "\n")
        out.flush()

    source = request["code"]
    try:
        program = compile(source, PROGRAM_NAME, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: source contains NUL bytes
        message = "".join(traceback.format_exception_only(type(exc), exc))
        for index in range(len(request["inputs"])):
            emit({"i": index, "status": "exit", "rc": 1, "cpu": 0.0, "stdout": "", "stderr": message})
        return
    linecache.cache[PROGRAM_NAME] = (len(source), None, source.splitlines(True), PROGRAM_NAME)
    import subprocess  # noqa: F401  (imported once here so each child's guard does not pay for it)
    try:
        run_tests(program, request["inputs"], limits, emit)
    finally:
        end_sandbox()


if __name__ == "__main__":
    main()
