"""The in-sandbox runner: compile a program once, then fork a fresh child per test case.

This file runs INSIDE the sandbox as ``python3 -S -c <this source>``: standard library only, and
only cheap modules, because interpreter start-up is paid on every request. It reads one
``marshal``-encoded request on stdin (the launcher is trusted)::

    {"code": str, "inputs": [bytes, ...], "limits": {...}, "landlock": None | {...}}

and writes one framed record per finished test on stdout (parsed defensively by the launcher)::

    b"<index> <status> <exit code> <cpu seconds> <stdout length> <stderr length>\\n" + stdout + stderr

status: ``exit`` (the program ended by itself), ``timeout`` (CPU limit or wall backstop),
``over_bound`` (not run to its end: the tests before it are already over the request's bound),
``output_limit`` (stopped for printing too much), ``disk_limit`` (the request's files outgrew
its scratch bound: the tests running then and those not yet started), ``memory_limit`` (the
processes of a test, or of the whole request, held more memory together than allowed). Expected outputs never
enter the sandbox: the launcher decides verdicts. Each child is forked from a parent that has
compiled (but not run) the program and runs in a fresh working directory (removed when it ends),
so tests cannot see each other's state, and start-up (interpreter, sandbox) is paid once per
program instead of once per test.
"""

import _signal
import builtins
import ctypes
import gc
import marshal
import os
import resource
import select
import sys
import time

PROGRAM_NAME = "solution.py"
READ_CHUNK = 65536
DISK_CHECK_SECONDS = 0.01  # how often the scratch space is measured while tests run
PROCESS_CHECK_SECONDS = 0.05  # how often the CPU time and memory of all processes are summed
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# CPU a test must have used during its last wall-clock window to be given another one: below it,
# the program is blocked (sleeping, waiting), above it, it is computing on a machine too busy to
# let it finish in time (RLIMIT_CPU still ends it if it spins).
MIN_CPU_PER_WALL_WINDOW = 0.1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
LIBC = ctypes.CDLL(None, use_errno=True)  # loaded once: every forked test inherits it
LIBC.syscall.restype = ctypes.c_long
MAX_FDS = 256
ENAMETOOLONG = 36
SIGKILL, SIGXCPU = _signal.SIGKILL, _signal.SIGXCPU  # _signal: `signal` would import enum (slow)
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
BLOCKED_MODULE_FUNCTIONS = {"shutil": ("rmtree", "move", "chown"), "subprocess": ("Popen",)}
# Pure standard modules loaded before the tests fork when a program names them (see preimport).
PREIMPORTABLE = frozenset((
    "array", "bisect", "collections", "copy", "decimal", "fractions", "functools", "heapq",
    "itertools", "math", "operator", "re", "string", "typing",
))


# --- limits and hardening ------------------------------------------------------------------------

def set_limit(which, soft, hard=None):
    """Lower a resource limit (never above the current hard limit)."""
    _, cur_hard = resource.getrlimit(which)
    hard = soft if hard is None else hard
    if cur_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur_hard), min(hard, cur_hard)
    resource.setrlimit(which, (soft, hard))


def limit_sandbox(limits):
    """Limits for the whole sandbox (this process and every child)."""
    set_limit(resource.RLIMIT_CORE, 0)
    set_limit(resource.RLIMIT_FSIZE, limits["max_file_bytes"])
    set_limit(resource.RLIMIT_NOFILE, MAX_FDS)
    if limits["max_processes"]:
        set_limit(resource.RLIMIT_NPROC, limits["max_processes"])
    libc = LIBC
    # Not dumpable: children (same uid) cannot ptrace this process or open its /proc/<pid>/fd,
    # so a program cannot reach the result channel or its siblings' pipes.
    PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    # Orphans of the tests (daemons) become our children, so end_sandbox() can reap them.
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def limit_program(limits):
    """Limits for one test's process, set in the child right before the program runs."""
    memory = limits["memory_bytes"]
    for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA, resource.RLIMIT_STACK):
        set_limit(which, memory)
    cpu = int(-(-limits["cpu_seconds"] // 1))  # ceil: RLIMIT_CPU counts whole seconds
    set_limit(resource.RLIMIT_CPU, cpu, cpu + 1)  # SIGXCPU at the limit, SIGKILL a second later


class GuardedModule(type(sys)):
    """A stand-in in ``sys.modules`` that imports the real module on first use and disables some of
    its functions, so the guard costs nothing for programs that never use the module."""

    def __init__(self, name, functions):
        super().__init__(name)
        self._guarded = functions

    def __getattr__(self, attr):
        name, functions = self.__name__, self.__dict__["_guarded"]
        del sys.modules[name]
        real = __import__(name)
        for function in functions:
            setattr(real, function, None)
        sys.modules[name] = real
        self.__dict__.update(real.__dict__)
        return getattr(real, attr)


def disable_destructive_functions():
    """The reference's guard: destructive calls become None, some modules unimportable."""
    for name in BLOCKED_OS_FUNCTIONS:
        if hasattr(os, name):
            setattr(os, name, None)
    for module, functions in BLOCKED_MODULE_FUNCTIONS.items():
        sys.modules[module] = GuardedModule(module, functions)
    for name in BLOCKED_MODULES:
        sys.modules[name] = None


# --- Landlock (fallback backend without namespaces) ----------------------------------------------

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_RULE_PATH_BENEATH = 1
FS_READ = 1 | 4 | 8            # execute, read file, read dir
FS_FILE_RIGHTS = 1 | 2 | 4 | (1 << 14)  # rights that apply to a single file
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
    libc = LIBC
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, 1)  # 1: ask for the ABI version
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
        if not os.path.isdir(path):
            allowed &= FS_FILE_RIGHTS
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
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


def scope_signals():
    """In a warm sandbox, where the request process is not the init of a PID namespace (immune to
    signals from inside) as a cold sandbox's harness is: a Landlock domain of the test's own that
    only scopes signals and abstract sockets, so the program cannot kill the process that reports
    its verdict, nor other tests (Landlock ABI 6, Linux 6.12; on an older kernel the program could
    end its own request, nothing else)."""
    libc = LIBC
    if libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, 1) < 6:
        return
    attr = _RulesetAttr(0, 0, SCOPE_ALL)
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0 or libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) < 0:
        raise OSError(ctypes.get_errno(), "cannot scope the test's signals")
    os.close(ruleset)


# --- seccomp: system calls no program needs (both backends) -----------------------------------

# Kernel interfaces with a long record of privilege escalations, shared state outside the sandbox's
# namespaces (System V IPC, keyrings: the landlock backend has no IPC namespace; POSIX message
# queues, which outlive their processes in a warm sandbox's IPC namespace) or the network
# (socket(): the landlock backend has no network namespace; socketpair() stays, asyncio needs it).
# They fail with EPERM. Numbers per architecture: {name: (x86_64, aarch64)}.
DENIED_SYSCALLS = {
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "userfaultfd": (323, 282), "bpf": (321, 280), "perf_event_open": (298, 241),
    "add_key": (248, 217), "request_key": (249, 218), "keyctl": (250, 219),
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "socket": (41, 198),
    # POSIX message queues outlive their processes in the IPC namespace (a warm sandbox's is shared
    # by its requests, one after the other)
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183), "mq_notify": (244, 184), "mq_getsetattr": (245, 185),
    # another process's memory or descriptors (ptrace's checks stop them too; no program needs them)
    "process_vm_readv": (310, 270), "process_vm_writev": (311, 271), "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
}
# Calls that change a process's attributes, allowed on the caller alone: aimed at a warm sandbox's
# init, its session or the uid, they would reach every later request (limits, nice, scheduling,
# CPUs, I/O priority, memory placement). {name: ((x86_64, aarch64), {argument: required value})};
# pid 0 is the caller (glibc's setrlimit, nice, os.sched_setaffinity(0, ...) pass it).
SELF_ONLY_SYSCALLS = {
    "prlimit64": ((302, 261), {0: 0}),
    "setpriority": ((141, 140), {0: 0, 1: 0}),  # PRIO_PROCESS, the caller
    "sched_setparam": ((142, 118), {0: 0}),
    "sched_setscheduler": ((144, 119), {0: 0}),
    "sched_setaffinity": ((203, 122), {0: 0}),
    "sched_setattr": ((314, 274), {0: 0}),
    "ioprio_set": ((251, 30), {0: 1, 1: 0}),  # IOPRIO_WHO_PROCESS, the caller
    "migrate_pages": ((256, 238), {0: 0}),
    "move_pages": ((279, 239), {0: 0}),
}
IOCTL = (16, 29)
TIOCSTI = 0x5412  # push characters into a terminal's input: a way out through a shared tty
AUDIT_ARCHES = {"x86_64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1)}  # (audit arch, column)
X32_SYSCALL_BIT = 0x40000000  # x86_64's x32 ABI: the same calls under other numbers
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
RET_ALLOW, RET_EPERM, RET_KILL = 0x7FFF0000, 0x00050000 | 1, 0x80000000


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(machine):
    """The BPF filter: other architectures (i386 via int 0x80) are killed, the x32 ABI and the
    calls above get EPERM, ioctl(TIOCSTI) too, and the self-only calls unless their arguments name
    the caller; everything else is allowed."""
    arch, column = AUDIT_ARCHES[machine]
    denied = sorted({numbers[column] for numbers in DENIED_SYSCALLS.values()})
    prog = [(BPF_LD_W_ABS, 0, 0, 4), (BPF_JEQ_K, 1, 0, arch), (BPF_RET_K, 0, 0, RET_KILL),
            (BPF_LD_W_ABS, 0, 0, 0)]
    if machine == "x86_64":
        prog += [(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT), (BPF_RET_K, 0, 0, RET_EPERM)]
    for number in denied:
        prog += [(BPF_JEQ_K, 0, 1, number), (BPF_RET_K, 0, 0, RET_EPERM)]
    rules = [(numbers[column], required) for numbers, required in SELF_ONLY_SYSCALLS.values()]
    rules.append((IOCTL[column], {1: TIOCSTI}))  # ioctl is allowed unless its request is TIOCSTI
    for number, required in rules:
        prog += argument_rule(number, required, allow_if_equal=number != IOCTL[column])
    return prog + [(BPF_RET_K, 0, 0, RET_ALLOW)]


def argument_rule(number, required, allow_if_equal=True):
    """Instructions that decide call ``number`` by the low 32 bits of its arguments (pids and the
    like are ints): allowed if every ``{argument: value}`` matches, else EPERM (the reverse with
    ``allow_if_equal`` false). Other calls skip it with the call's number still loaded."""
    checks = []
    for argument, value in sorted(required.items()):
        checks += [(BPF_LD_W_ABS, 0, 0, 16 + 8 * argument), (BPF_JEQ_K, 0, 0, value)]
    match, mismatch = (RET_ALLOW, RET_EPERM) if allow_if_equal else (RET_EPERM, RET_ALLOW)
    body = checks + [(BPF_RET_K, 0, 0, match), (BPF_RET_K, 0, 0, mismatch)]
    for at in range(1, len(checks), 2):  # a mismatch jumps to the last instruction
        code, _, _, value = body[at]
        body[at] = (code, 0, len(body) - 2 - at, value)
    return [(BPF_JEQ_K, 0, len(body), number)] + body


def apply_seccomp():
    """Install the filter on this process and (inherited) every process it starts."""
    machine = os.uname().machine
    if machine not in AUDIT_ARCHES:
        raise OSError(f"no seccomp filter for {machine}")
    prog = seccomp_program(machine)
    array = (_SockFilter * len(prog))(*(_SockFilter(*insn) for insn in prog))
    fprog = _SockFprog(len(prog), array)
    libc = LIBC
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")


# --- one test: the child side --------------------------------------------------------------------

def print_user_traceback(exc):
    """Print the traceback as ``python3 solution.py`` would, without the harness's frames. The
    interpreter's own printer (C) finds solution.py on sys.path for the source lines and carets."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != PROGRAM_NAME:
        tb = tb.tb_next
    exc.__traceback__ = tb or exc.__traceback__  # the C printer reads the exception's own traceback
    sys.__excepthook__(type(exc), exc, exc.__traceback__)


def exit_status(exc):
    """Exit status of a SystemExit, printing its message as the interpreter does."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def die_with(parent):
    """SIGKILL this process when ``parent`` (the harness) dies: without a PID namespace (landlock)
    a test would otherwise outlive a harness killed with its launcher."""
    PR_SET_PDEATHSIG = 1
    LIBC.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def run_child(program, fds, workdir, limits, stdio, parent, landlock):
    """In the forked child: wire up stdio, lock down, run the program, exit. Never returns."""
    status = 1
    try:
        die_with(parent)
        os.setpgid(0, 0)
        os.chdir(workdir)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, MAX_FDS)
        if landlock:  # the harness reads its children's /proc entries; the program reads none
            apply_landlock({**landlock, "read": [p for p in landlock["read"] if p != "/proc"]})
        elif limits["warm"]:
            scope_signals()
        os.environ["OMP_NUM_THREADS"] = "1"
        limit_program(limits)
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__ = stdio
        sys.argv = [PROGRAM_NAME]
        sys.path[0:0] = [os.path.dirname(workdir)]  # as for `python3 solution.py`
        disable_destructive_functions()
        keep_children_waitable()
        if limits["site_builtins"]:
            define_site_builtins()
        status = run_program(program)
    finally:
        os._exit(status)


def keep_children_waitable():
    """SIGCHLD set to SIG_IGN through the signal module becomes SIG_DFL: the kernel reaps the
    children of a process that ignores SIGCHLD at once, out of every parent's accounting, where
    the default keeps them (as zombies) until their parent waits, so the harness counts their CPU
    time. Not a boundary (sigaction() called through ctypes is not seen): the slot's cgroup, where
    the launcher has one, counts those children."""
    real = _signal.signal

    def signal(signalnum, handler):
        if signalnum == _signal.SIGCHLD and handler == _signal.SIG_IGN:
            handler = _signal.SIG_DFL
        return real(signalnum, handler)

    _signal.signal = signal


def define_site_builtins():
    """``exit`` and ``quit`` as site.py defines them under plain ``python3`` (``-S`` has neither)."""
    import _sitebuiltins

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")


def run_program(program):
    """Execute the compiled program like ``python3 solution.py``; return the exit status. At the
    end, as the interpreter's exit does: wait for non-daemon threads, run the atexit handlers (fast-
    output templates write their buffer there), flush the standard streams the program left open."""
    status = 0
    try:
        exec(program, {"__name__": "__main__", "__builtins__": builtins, "__file__": PROGRAM_NAME})
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - any uncaught error ends the program
        status = 1
        print_user_traceback(exc)
    if "threading" in sys.modules:  # however the main thread ended, as the interpreter's exit does
        try:
            sys.modules["threading"]._shutdown()
        except BaseException:  # noqa: BLE001 - e.g. interrupted while joining: exit all the same
            pass
    if "atexit" in sys.modules:  # imported only by programs that may have registered handlers
        sys.modules["atexit"]._run_exitfuncs()  # prints and ignores their errors, as python3 does
    return flush_standard_streams(status)


def flush_standard_streams(status):
    """Flush stdout and stderr (the program's and the original ones) unless the program closed
    them; a failing flush turns a clean exit into 120, as in CPython's finalisation."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if not getattr(stream, "closed", True):
                stream.flush()
        except BaseException:  # noqa: BLE001 - e.g. a broken pipe
            status = status or 120
    return status


# --- one test: the parent side -------------------------------------------------------------------

class Run:
    """A running test: its child, pipes, captured output and deadline."""

    def __init__(self, index, pid, workdir, stdin_fd, stdout_fd, stderr_fd, data, limits):
        self.index, self.pid, self.workdir = index, pid, workdir
        self.stdin_fd, self.data, self.written = stdin_fd, data, 0
        self.stdout_fd, self.stderr_fd = stdout_fd, stderr_fd
        self.out = {stdout_fd: bytearray(), stderr_fd: bytearray()}
        self.pidfd = os.pidfd_open(pid)
        self.deadline = time.monotonic() + limits["wall_seconds"]
        self.cpu_at_window_start = 0.0
        self.max_output = limits["max_output_bytes"]
        self.over_output = False
        self.group_cpu = None  # CPU seconds of every process of the test, when last measured
        self.forced_status = None  # set when the harness stops the test for a request-wide limit


class Loop:
    """An epoll loop over the running tests' pipes and pidfds."""

    def __init__(self):
        self.epoll = select.epoll()
        self.owner = {}  # fd -> (run, role)

    def watch(self, fd, run, role, events=select.EPOLLIN):
        self.epoll.register(fd, events)
        self.owner[fd] = (run, role)

    def forget(self, fd):
        if self.owner.pop(fd, None) is not None:
            self.epoll.unregister(fd)


def start_test(index, program, data, limits, loop, stdio, landlock):
    """Fork a child running the program on one input in a fresh directory of its own (removed
    when the test ends)."""
    workdir = os.path.abspath(f"test-{index}")
    os.mkdir(workdir, 0o700)
    in_r, in_w = stdin_file(data) if limits["stdin_file"] else os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        run_child(program, (in_r, out_w, err_w), workdir, limits, stdio, parent, landlock)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child already did it, or has exited
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    for fd in (out_r, err_r):
        os.set_blocking(fd, False)
    run = Run(index, pid, workdir, in_w, out_r, err_r, data, limits)
    loop.watch(run.pidfd, run, "exit")
    loop.watch(out_r, run, "out")
    loop.watch(err_r, run, "out")
    if in_w is not None:
        os.set_blocking(in_w, False)
        loop.watch(in_w, run, "in", select.EPOLLOUT)
    return run


def stdin_file(data):
    """The input as a seekable in-memory file at offset 0 (as a judge that redirects a file into
    the program): ``os.fstat(0).st_size`` is its size. Nothing to feed: no writing end."""
    fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd, None


def close_stdin(run, loop):
    if run.stdin_fd is not None:
        loop.forget(run.stdin_fd)
        os.close(run.stdin_fd)
        run.stdin_fd = None


def feed_stdin(run, loop):
    try:
        run.written += os.write(run.stdin_fd, run.data[run.written:run.written + READ_CHUNK])
    except BlockingIOError:
        return
    except BrokenPipeError:  # the program exited or closed stdin without reading it all
        return close_stdin(run, loop)
    if run.written >= len(run.data):
        close_stdin(run, loop)


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


def cpu_seconds(pid):
    """CPU time used so far by a running child (all its threads), or None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


def still_computing(run, now, limits):
    """At its wall deadline, a test that used CPU in the last window is starved, not stuck: the
    wall backstop is for blocked programs, so verdicts do not depend on the machine's load. It
    gets another window; the CPU limit and the request's deadline still bound it."""
    cpu = cpu_seconds(run.pid)  # now, or (more) as the whole group was last measured
    if cpu is None or max(cpu, run.group_cpu or 0.0) - run.cpu_at_window_start < MIN_CPU_PER_WALL_WINDOW:
        return False
    run.cpu_at_window_start = max(cpu, run.group_cpu or 0.0)
    run.deadline = now + limits["wall_seconds"]
    return True


def kill_group(pid):
    try:
        os.killpg(pid, SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def end_stray(pid, ours):
    """Kill a process of no running test; reap it if it is our child (an orphan we adopted as
    the subreaper), once dead (it usually is by the next poll)."""
    try:
        os.kill(pid, SIGKILL)
        if ours:
            os.waitpid(pid, os.WNOHANG)
    except (ProcessLookupError, PermissionError, ChildProcessError):
        pass


def finish(run, loop, limits, emit, disk, killed_for_time=False):
    """Collect a finished (or killed) child's status and output, release its resources (its
    directory too, once its files are counted), report."""
    _, wait_status, usage = os.wait4(run.pid, 0)
    for fd in (run.stdout_fd, run.stderr_fd):
        drain(run, fd, kill_on_limit=False)  # whatever the child wrote before it exited
    kill_group(run.pid)  # leftovers of the test (daemons) must not outlive it
    close_stdin(run, loop)
    for fd in (run.stdout_fd, run.stderr_fd, run.pidfd):
        loop.forget(fd)
        os.close(fd)
    over_disk = disk.exceeded or disk.check()
    remove_tree(run.workdir)
    cpu = max(usage.ru_utime + usage.ru_stime, run.group_cpu or 0.0)  # with what left its group
    rc = os.waitstatus_to_exitcode(wait_status)
    if over_disk:
        status = "disk_limit"
    elif run.forced_status:
        status = run.forced_status
    elif killed_for_time or cpu >= limits["cpu_seconds"] or rc == -SIGXCPU:
        status = "timeout"
    elif run.over_output:
        status = "output_limit"
    else:
        status = "exit"
    emit(run.index, status, rc, cpu, bytes(run.out[run.stdout_fd]), bytes(run.out[run.stderr_fd]))


# --- the scratch space's bound -------------------------------------------------------------------

class DiskWatch:
    """How much the request's programs have put in the scratch space (the working directory),
    against ``max_scratch_bytes`` / ``max_scratch_files``. On a filesystem of its own (bwrap's
    sized tmpfs, which also enforces the bound) statvfs measures it; otherwise (a host directory)
    the tree is walked, at most one entry past the bound."""

    def __init__(self, limits):
        self.mounts = limits["scratch_mounts"]
        self.max_bytes, self.max_files = limits["max_scratch_bytes"], limits["max_scratch_files"]
        self.base_bytes, self.base_files = 0, 0  # usage() bounds its walk by base_files
        self.base_bytes, self.base_files = self.usage()  # the harness's own files (the program)
        self.exceeded = False
        self.next_check = 0.0

    def usage(self):
        if self.mounts:
            used = files = 0
            for mount in self.mounts:
                st = os.statvfs(mount)
                used += (st.f_blocks - st.f_bfree) * st.f_frsize
                files += st.f_files - st.f_ffree
            return used, files
        return tree_usage(".", self.base_files + self.max_files + 1)

    def check(self):
        """Measure now; True (and sticky) once the bound is exceeded."""
        started = time.monotonic()
        used, files = self.usage()
        now = time.monotonic()
        self.next_check = now + max(DISK_CHECK_SECONDS, 4 * (now - started))  # walks stay a small share
        if used - self.base_bytes > self.max_bytes or files - self.base_files > self.max_files:
            self.exceeded = True
        return self.exceeded


def tree_usage(top, max_entries):
    """Bytes allocated and entries under ``top``; stops counting past ``max_entries``. A tree too
    deep to walk by path (a program's trap for the walk) counts as over the bound."""
    used, entries, stack = 0, 0, [top]
    while stack and entries <= max_entries:
        path = stack.pop()
        listing = list_dir(path)
        if listing is None:
            return used, max_entries + 1
        for entry in listing:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # removed meanwhile
            used += st.st_blocks * 512
            entries += 1
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return used, entries


def list_dir(path):
    """Entries of a directory of ours (a path or an open descriptor), made readable again if a
    program locked it; [] if it is gone, None if its path is too long to use."""
    for _ in range(2):
        try:
            with os.scandir(path) as it:
                return list(it)
        except PermissionError:
            try:
                os.chmod(path, 0o700)
            except OSError:
                return []
        except OSError as exc:
            return None if exc.errno == ENAMETOOLONG else []
    return []


def remove_tree(top):
    """Delete ``top`` and everything in it without following a link, blocking on a FIFO or
    recursing, whatever the depth, links or permissions a program left: each subdirectory is
    hoisted into ``top`` before it is emptied, so no walk is deeper than two names. Everything is
    done relative to directories opened with O_NOFOLLOW, never by path: a process of the slot
    still alive that swaps a directory for a link while this runs (as root) only gets its link
    unlinked, never its target emptied or chmod-ed."""
    top_fd = open_dir(top)
    if top_fd is None:
        return
    pending, hoisted, tag = [None], 0, os.urandom(6).hex()  # None: top itself
    try:
        while pending:
            name = pending.pop()
            fd = top_fd if name is None else open_dir(name, top_fd)
            if fd is None:  # not a directory (any more): remove the entry itself
                unlink_entry(name, top_fd)
                continue
            try:
                for entry in list_dir(fd) or ():
                    if entry.is_dir(follow_symlinks=False):
                        hoisted += 1
                        target = ".rm-%s-%d" % (tag, hoisted)
                        if hoist(entry.name, fd, target, top_fd):
                            pending.append(target)
                    else:
                        unlink_entry(entry.name, fd)  # links, FIFOs, sockets: the entry, never its target
            finally:
                if fd != top_fd:
                    os.close(fd)
            if name is not None:
                try:
                    os.rmdir(name, dir_fd=top_fd)
                except OSError:
                    unlink_entry(name, top_fd)  # swapped for a link meanwhile
    finally:
        os.close(top_fd)
    try:
        os.rmdir(top)
    except OSError:
        pass


def hoist(name, dir_fd, target, top_fd):
    """Move the directory ``name`` into the top as ``target``. Moving a directory to another
    parent rewrites its ``..``, which needs write permission on it: one a program made read-only
    (mode 000) is made writable first."""
    for attempt in range(2):
        try:
            os.rename(name, target, src_dir_fd=dir_fd, dst_dir_fd=top_fd)
            return True
        except PermissionError:
            if attempt or make_writable(name, dir_fd) is None:
                return False
        except OSError:
            return False
    return False


def make_writable(name, dir_fd=None, then_open=None):
    """chmod 0700 the directory ``name`` itself (never a link's target: through a descriptor of
    it), then open it with ``then_open`` flags if given; None if it is no directory or gone."""
    try:
        held = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        os.chmod("/proc/self/fd/%d" % held, 0o700)
        return os.open("/proc/self/fd/%d" % held, then_open) if then_open is not None else True
    except OSError:
        return None
    finally:
        os.close(held)


def open_dir(name, dir_fd=None):
    """A descriptor of the directory ``name`` itself (never a link's target), made readable again
    if a program locked it; None if it is no directory or gone."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        return make_writable(name, dir_fd, then_open=flags & ~os.O_NOFOLLOW)
    except OSError:
        return None


def unlink_entry(name, dir_fd):
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def stop_all(running, pending, loop, limits, emit, disk, status="disk_limit"):
    """The request outgrew a request-wide bound: stop every running test, skip the rest."""
    for run in running.values():
        run.forced_status = status
        kill_group(run.pid)
    for run in list(running.values()):
        finish(run, loop, limits, emit, disk)
    running.clear()
    while pending:
        emit(pending.pop(), status, 0, 0.0, b"", b"")


# --- the request's bound, on the reference's schedule replayed in CPU time ----------------------

def charged_seconds(status, cpu, limit):
    """What a test counts towards the request's bound: its CPU time, or its whole limit if it timed
    out (the reference's test then takes its whole limit)."""
    return limit if status == "timeout" else min(cpu, limit)


def replayed_seconds(durations, lanes):
    """How long tests lasting ``durations`` take when run in order at most ``lanes`` at once, each
    starting as soon as a lane is free: the reference's pool of test workers on an idle machine."""
    ends = [0.0] * lanes
    for duration in durations:
        at = ends.index(min(ends))
        ends[at] += duration
    return max(ends)


class RequestBound:
    """Whether the request is surely over its bound (``request_bound_seconds``): the replayed
    schedule of the finished tests, the others counted as taking no time, is a lower bound (a
    schedule never gets shorter when one of its tests gets longer). The launcher decides on all of
    them; this only stops a request that cannot pass any more."""

    def __init__(self, count, limits):
        self.durations = [0.0] * count
        self.total = 0.0
        self.limit, self.lanes = limits["cpu_seconds"], limits["concurrency"]
        self.seconds = limits["request_bound_seconds"]
        self.exceeded = False

    def add(self, index, status, cpu):
        charged = charged_seconds(status, cpu, self.limit)
        self.durations[index] = charged
        self.total += charged
        if self.total > self.seconds:  # else the schedule, at most the sum of its tests, fits
            self.exceeded = replayed_seconds(self.durations, self.lanes) > self.seconds


# --- CPU time and memory of everything a request starts --------------------------------------------

class ProcessWatch:
    """Rlimits bound each process alone: 16 forked spinners had 16 x the CPU time, 5 children each
    holding 900 MiB 5 x the memory. This sums, from /proc, the CPU time and resident memory of every
    process of a test (dead members included through their parents) and of every process of the
    request: the sandbox's PID namespace (bwrap, where the harness is init) or the slot's uid
    (landlock), plus what the harness has reaped. A process belongs to the test whose process group
    it is in, else to its parent's test (a child that left with setsid() is still its test's), else
    to the test it was seen in before its parent died. In a sandbox of its own, a process of no
    running test (a finished test's daemon) is ended. Polling misses processes that live and die
    between two polls and are reaped by the kernel (their parent ignores SIGCHLD): the launcher's
    cgroup counter, where it has one, bounds those (runner.py)."""

    def __init__(self, limits):
        self.whole_sandbox = owns_whole_sandbox(limits)
        self.max_cpu = limits["request_cpu_seconds"]
        self.max_memory = limits["request_memory_bytes"]
        self.next_check = time.monotonic() + PROCESS_CHECK_SECONDS
        self.owner = {}  # pid -> the test (its leader's pid) it belonged to when last seen

    def processes(self):
        """pid -> (parent, process group, CPU seconds with reaped children, resident bytes) of the
        processes we watch (not the harness)."""
        me, uid, found = os.getpid(), os.getuid(), {}
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (me, 1):  # 1: a warm sandbox's init, or the host's
                continue
            try:
                if me != 1 and os.stat("/proc/" + name).st_uid != uid:
                    continue
                with open("/proc/%s/stat" % name, "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                used = sum(int(f) for f in fields[11:15]) / CLOCK_TICKS  # utime stime cutime cstime
                found[int(name)] = (int(fields[1]), int(fields[2]), used, int(fields[21]) * PAGE_SIZE)
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
        return found

    def attribute(self, procs, running):
        """pid -> the running test it belongs to, or None."""
        owner = {}
        for pid in procs:
            chain, at = [], pid
            while at in procs and at not in owner and len(chain) <= len(procs):
                chain.append(at)
                parent, group = procs[at][:2]
                if group in running or parent not in procs:
                    owner[at] = group if group in running else self.owner.get(at)
                    break
                at = parent
            test = owner.get(at)
            for member in chain:
                owner[member] = test if test in running else None
        self.owner = {pid: test for pid, test in owner.items() if test is not None}
        return owner

    def sample(self, running):
        """CPU seconds and resident bytes per running test (by its leader's pid), and the request's
        CPU seconds and resident bytes; ends strays (in a sandbox of its own)."""
        procs = self.processes()
        owner = self.attribute(procs, running)
        test_cpu, test_rss, cpu, rss = dict.fromkeys(running, 0.0), dict.fromkeys(running, 0), 0.0, 0
        for pid, (parent, _, used, resident) in procs.items():
            test = owner[pid]
            if test is not None:
                test_cpu[test] += used
                test_rss[test] += resident
            elif self.whole_sandbox:
                end_stray(pid, parent == os.getpid())  # no running test's: a finished test's leftover
            if self.whole_sandbox or test is not None:
                cpu += used
                rss += resident
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        return test_cpu, test_rss, cpu + reaped.ru_utime + reaped.ru_stime, rss

    def check(self, running, limits):
        """Tests whose processes together went over their CPU time or memory (each marked with
        its status), and the request's status if everything together did, else None."""
        test_cpu, test_rss, cpu, rss = self.sample(running)
        self.next_check = time.monotonic() + PROCESS_CHECK_SECONDS
        stopped = []
        for pid, used in test_cpu.items():
            run = running[pid]
            run.group_cpu = used
            if used >= limits["cpu_seconds"]:
                run.forced_status = "timeout"
            elif test_rss[pid] > limits["memory_bytes"]:
                run.forced_status = "memory_limit"
            if run.forced_status:
                stopped.append(run)
        if cpu > self.max_cpu:
            return stopped, "timeout"
        if rss > self.max_memory:
            return stopped, "memory_limit"
        return stopped, None


def fresh_stdio():
    """Text streams on fds 0, 1, 2, made once and unused here: each child inherits pristine copies
    (its own fds 0-2 are the test's pipes by then), which saves building them per test."""
    return (open(0, "r", encoding="utf-8", errors="surrogateescape", closefd=False),
            open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False),
            open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False))


def run_tests(program, inputs, limits, emit, landlock=None):
    """Run every input with at most ``limits['concurrency']`` children at once; stop the rest once
    the finished tests' replayed schedule is over the request's bound."""
    loop = Loop()
    stdio = fresh_stdio()
    disk = DiskWatch(limits)
    processes = ProcessWatch(limits)
    bound = RequestBound(len(inputs), limits)
    report = emit

    def emit(index, status, rc, cpu, stdout, stderr):
        bound.add(index, status, cpu)
        report(index, status, rc, cpu, stdout, stderr)

    give_up_at = time.monotonic() + limits["request_seconds"]  # the launcher has stopped waiting
    pending = list(range(len(inputs)))
    pending.reverse()
    running = {}
    while (pending or running) and time.monotonic() < give_up_at:
        if bound.exceeded:
            stop_all(running, pending, loop, limits, report, disk, "over_bound")
            break
        while pending and len(running) < limits["concurrency"]:
            index = pending.pop()
            run = start_test(index, program, inputs[index], limits, loop, stdio, landlock)
            running[run.pid] = run
        wake_at = min(min(r.deadline for r in running.values()), disk.next_check, processes.next_check)
        for fd, _ in loop.epoll.poll(max(0.0, wake_at - time.monotonic())):
            if fd not in loop.owner:
                continue  # forgotten earlier in this batch of events
            run, role = loop.owner[fd]
            if role == "in":
                feed_stdin(run, loop)
            elif role == "out" and not drain(run, fd):
                loop.forget(fd)  # EOF: stop watching; closed in finish()
            elif role == "exit":
                del running[run.pid]
                finish(run, loop, limits, emit, disk)
        now = time.monotonic()
        for run in [r for r in running.values() if r.deadline <= now]:
            if still_computing(run, now, limits):
                continue
            kill_group(run.pid)
            del running[run.pid]
            finish(run, loop, limits, emit, disk, killed_for_time=True)
        if disk.exceeded or (running and now >= disk.next_check and disk.check()):
            stop_all(running, pending, loop, limits, emit, disk)
        if running and now >= processes.next_check:
            watch_processes(processes, running, pending, loop, limits, emit, disk)
    for run in running.values():
        kill_group(run.pid)


def watch_processes(processes, running, pending, loop, limits, emit, disk):
    """Stop the tests whose processes used their CPU time together, or the whole request when
    everything it started is over the request's CPU time or memory."""
    stopped, request_status = processes.check(running, limits)
    for run in stopped:
        kill_group(run.pid)
        del running[run.pid]
        finish(run, loop, limits, emit, disk)
    if request_status:
        stop_all(running, pending, loop, limits, emit, disk, request_status)


def owns_whole_sandbox(limits):
    """Whether every process we may signal is the request's: as init of a PID namespace (a cold
    bwrap sandbox), as a warm sandbox's request process (its init ignores our signals), or as a
    uid of our own that is not root (landlock)."""
    return os.getpid() == 1 or limits["warm"] or (limits["dedicated_uid"] and os.geteuid() != 0)


def end_sandbox(limits):
    """Kill and reap every process left in the sandbox.

    kill(-1) reaches every process we may signal, so it is used only where that set is exactly the
    sandbox: as the init of a PID namespace (bwrap), or as a uid of our own that is not root
    (landlock). Anywhere else (e.g. the harness run by hand) only our own children are reaped.
    """
    if owns_whole_sandbox(limits):
        try:
            os.kill(-1, SIGKILL)
        except OSError:
            pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def preimport(program):
    """Import, once in the parent, the standard modules the program names that hold no state a
    test could observe, so that each forked test finds them loaded (`re` alone costs ~8 ms per
    interpreter). Never `random` and the like: each test must seed its own."""
    names, stack = set(), [program]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(const for const in code.co_consts if isinstance(const, type(program)))
    for name in sorted(PREIMPORTABLE.intersection(names)):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - the test's own import will report it
            pass


def syntax_error_text(exc):
    import traceback  # only for programs that do not compile

    return "".join(traceback.format_exception_only(type(exc), exc)).encode("utf-8", "backslashreplace")


def main():
    """Read the launcher's first line: ``warm`` (then serve requests until EOF) or the length of
    the one request to run."""
    stdin = sys.stdin.buffer
    first = stdin.readline()
    if first == b"warm\n":
        serve(stdin)
    else:
        handle(marshal.loads(stdin.read(int(first))))


def handle(request):
    """One request: lock down, compile the program once, run every test, end what is left."""
    limits = request["limits"]
    if request["landlock"]:
        apply_landlock(request["landlock"])
    apply_seccomp()
    limit_sandbox(limits)
    out = sys.stdout.buffer

    def emit(index, status, rc, cpu, stdout, stderr):
        out.write(b"%d %s %d %.4f %d %d\n" % (index, status.encode(), rc, cpu, len(stdout), len(stderr)))
        out.write(stdout)
        out.write(stderr)
        out.flush()

    source = request["code"]
    with open(PROGRAM_NAME, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(source)  # only so that error messages can quote source lines, as python3 does
    try:
        program = compile(source, PROGRAM_NAME, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: source contains NUL bytes
        message = syntax_error_text(exc)
        for index in range(len(request["inputs"])):
            emit(index, "exit", 1, 0.0, b"", message)
        return
    preimport(program)
    gc.freeze()  # children then do not touch (copy) the harness's objects when they collect
    try:
        run_tests(program, request["inputs"], limits, emit, request["landlock"])
    finally:
        end_sandbox(limits)


# --- warm mode: one sandbox serving request after request ----------------------------------------

def serve(stdin):
    """Stay the sandbox's init (bwrap, PID 1 of its namespace) and never run a program: fork a
    fresh request process per request, which does what one cold sandbox does. When it ends, kill
    every other process of the namespace (init's kill(-1) reaches them all; no signal from inside
    reaches init), reap them, empty the scratch filesystems, and only then answer ``end <exit
    status>``: nothing of one request is alive or on disk when the next one starts. Anything
    unexpected ends this process, and the launcher then discards the sandbox."""
    if os.getpid() != 1:  # kill(-1) below would reach every process of this uid on the machine
        raise SystemExit("a warm sandbox must be the init of a PID namespace of its own")
    LIBC.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no ptrace or /proc/1/fd from inside
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    roots = {}  # scratch root -> its attributes before the first request
    while True:
        line = stdin.readline()
        if not line:
            return
        request = marshal.loads(stdin.read(int(line)))
        for top in request["limits"]["scratch_mounts"]:
            roots.setdefault(top, root_attributes(top))
        pid = os.fork()
        if pid == 0:
            run_request_process(request)
        _, status = os.waitpid(pid, 0)
        kill_all_others()
        clear_scratch(roots)
        out.write(b"end %d\n" % os.waitstatus_to_exitcode(status))
        out.flush()


def run_request_process(request):
    """The forked request process: everything of one request happens here. Never returns."""
    status = 1
    try:
        os.setsid()  # a session (and autogroup) of its own: nothing set on it outlives the request
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # the request stream is the init's alone
        os.close(null)
        handle(request)
        status = 0
    except BaseException:  # noqa: BLE001 - reported on stderr, as a cold harness's crash is
        import traceback

        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(status)


def kill_all_others():
    """As init: SIGKILL every other process of the namespace until none is left to reap."""
    while True:
        try:
            os.kill(-1, SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def clear_scratch(roots):
    """Put every scratch filesystem back as it was before the first request (no process is left
    to race this): the root's own attributes, then nothing in it, then its times. Anything that
    does not come back ends this sandbox."""
    for top, attributes in roots.items():
        restore_root(top, attributes)
        for entry in list_dir(top) or ():
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        if list_dir(top):
            raise OSError(f"{top} is not empty after the request")
        os.utime(top, ns=attributes["times"], follow_symlinks=False)  # emptying it set them
        if root_attributes(top) != attributes:
            raise OSError(f"{top}'s own attributes could not be restored after the request")


FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602


def root_attributes(top):
    """What a request may change of a scratch root itself (it owns it): mode, owner, times,
    extended attributes (POSIX ACLs among them) and inode flags (chattr's)."""
    st = os.stat(top, follow_symlinks=False)
    names = os.listxattr(top, follow_symlinks=False)
    return {
        "mode": st.st_mode, "owner": (st.st_uid, st.st_gid), "times": (st.st_atime_ns, st.st_mtime_ns),
        "xattrs": {name: os.getxattr(top, name, follow_symlinks=False) for name in names},
        "flags": inode_flags(top),
    }


def inode_flags(top, new=None):
    """The inode flags of a directory (setting them to ``new`` first); None where the filesystem
    has none."""
    import fcntl

    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if new is not None:
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, new.to_bytes(8, sys.byteorder))
        return int.from_bytes(fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))[:4], sys.byteorder)
    except OSError as exc:
        if exc.errno in (25, 95):  # ENOTTY, EOPNOTSUPP: no inode flags here
            return None
        raise
    finally:
        os.close(fd)


def restore_root(top, attributes):
    """Undo what a request did to a scratch root's own attributes (an ACL or mode that leaves
    later requests unable to write, xattrs, inode flags); its times come last, in clear_scratch."""
    for name in os.listxattr(top, follow_symlinks=False):
        if name not in attributes["xattrs"]:
            os.removexattr(top, name, follow_symlinks=False)
    for name, value in attributes["xattrs"].items():
        os.setxattr(top, name, value, follow_symlinks=False)
    if attributes["flags"] is not None and inode_flags(top) != attributes["flags"]:
        inode_flags(top, attributes["flags"])
    os.chmod(top, attributes["mode"] & 0o7777)  # a mount point: never a link


if __name__ == "__main__":
    main()
