"""Nothing a request does outlives it (docs/evaluator.md, "What a request can touch"): for every
entry of that list, a request A changes what it can, then a request B in the same warm sandbox
sees exactly what a request sees in a fresh one. The bwrap pid tells that B ran in A's sandbox;
where A's sandbox was discarded instead, B ran in a fresh one, which is contained too (the
entries that may do so say it).

In GRPO this is a reward-hacking channel: a sample that poisons its slot makes the other samples of
its group fail, which raises its own advantage."""

from __future__ import annotations

import pytest
from sandbox_fixtures import backend_config, processes_of

from cobalt.sandbox.runner import WARM_POOL, run_in_sandbox

pytestmark = pytest.mark.one_worker  # counts the processes of its own uids

# What B reports: every attribute of its sandbox that an earlier request could have changed and
# that a request can see. Nothing that differs between two fresh sandboxes (pids, times).
FINGERPRINT = r"""
import ctypes, fcntl, os, struct, time
libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}[os.uname().machine]

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return "error %d" % e.errno

def status(pid, keys=("SigBlk", "SigIgn", "NoNewPrivs", "Seccomp", "CapEff", "Cpus_allowed_list")):
    return [line for line in read("/proc/%s/status" % pid).splitlines() if line.split(":")[0] in keys]

def root(path):
    st = os.stat(path)
    now = time.time()
    recent = all(abs(now - t) < 3600 for t in (st.st_atime, st.st_mtime))
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        flags = struct.unpack("i", fcntl.ioctl(fd, 0x80086601, bytes(8))[:4])[0]
    except OSError as e:
        flags = "error %d" % e.errno
    os.close(fd)
    xattrs = {name: os.getxattr(path, name) for name in os.listxattr(path)}
    vfs = os.statvfs(path)
    used = (vfs.f_blocks - vfs.f_bfree, vfs.f_files - vfs.f_ffree)
    return oct(st.st_mode), st.st_uid, st.st_gid, recent, flags, xattrs, used

mine = {os.getpid(), os.getppid(), 1}
print("roots", root("/tmp"), root("/dev/shm"))
print("files", sorted(set(os.listdir("/tmp")) - {"solution.py", os.path.basename(os.getcwd())}),
      sorted(os.listdir("/dev/shm")), sorted(os.listdir(".")))
print("processes", [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine])
print("limits", read("/proc/self/limits"), read("/proc/1/limits"))
print("nice", [os.getpriority(os.PRIO_PROCESS, pid) for pid in (0, 1)], read("/proc/self/autogroup").split()[1:])
print("sched", [os.sched_getscheduler(pid) for pid in (0, 1)], [sorted(os.sched_getaffinity(pid)) for pid in (0, 1)])
print("ioprio", [libc.syscall(IOPRIO_GET, 1, pid) for pid in (0, 1)])
print("oom", read("/proc/self/oom_score_adj"), read("/proc/1/oom_score_adj"), read("/proc/self/timerslack_ns"))
print("status", status("self"), status(1))
print("umask", os.umask(0o22), "hostname", os.uname().nodename)
print("ipc", read("/proc/sysvipc/shm"), read("/proc/sysvipc/sem"), read("/proc/sysvipc/msg"), read("/proc/keys"))
os.makedirs("probe/a")  # what a default ACL or a mode on a root would break
with open("probe/a/f", "w") as f, open("/tmp/probe", "w") as g, open("/dev/shm/probe", "w") as h:
    f.write("x"), g.write("x"), h.write("x")
print("echo", input())
"""

PRELUDE = "import ctypes, os, struct\nlibc = ctypes.CDLL(None, use_errno=True)\n"

# entry of docs/evaluator.md -> request A (after PRELUDE). Each uses what any program can: ctypes and
# os, no unguarding.
ATTACKS = {
    # --- filesystem: the scratch roots' own attributes, and what is under them
    "default ACL on /tmp": (
        "acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, 0xFFFFFFFF)"
        " for t, p in ((1, 6), (4, 0), (32, 0)))\n"
        "os.setxattr('/tmp', 'system.posix_acl_default', acl)\n"
        "os.setxattr('/dev/shm', 'system.posix_acl_default', acl)\n"
    ),
    "access ACL on /tmp": (
        "acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, 0xFFFFFFFF)"
        " for t, p in ((1, 5), (4, 0), (32, 0)))\n"
        "os.setxattr('/tmp', 'system.posix_acl_access', acl)\n"
        "os.setxattr('/dev/shm', 'system.posix_acl_access', acl)\n"
    ),
    "user xattrs on the roots": (
        "os.setxattr('/tmp', 'user.poison', b'1')\nos.setxattr('/dev/shm', 'user.poison', b'1')\n"
    ),
    "mode of the roots": "libc.chmod(b'/tmp', 0o500)\nlibc.chmod(b'/dev/shm', 0o1777)\n",
    "times of the roots": "os.utime('/tmp', (1, 1))\nos.utime('/dev/shm', (4e9, 4e9))\n",
    "inode flags of the roots": (
        "import fcntl\nfor path in ('/tmp', '/dev/shm'):\n"
        "    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)\n"
        "    fcntl.ioctl(fd, 0x40086602, struct.pack('q', 0x40 | 0x80))  # NODUMP | NOATIME\n"
    ),
    "files in every writable place": (
        "for path in ('/tmp/planted', '/dev/shm/planted', 'planted-here', '/tmp/.hidden'):\n"
        "    open(path, 'w').write('secret')\n"
        "os.makedirs('/tmp/deep/er/still')\nos.mkfifo('/dev/shm/fifo')\n"
        "os.link('/tmp/planted', '/tmp/hardlink')\nos.symlink('/usr', '/tmp/link')\n"
    ),
    "a mode-000 directory nested in the working directory": (
        "os.makedirs('d/a')\nlibc.chmod(b'd/a', 0)\nlibc.chmod(b'd', 0)\n"
        "os.makedirs('/tmp/e/b')\nlibc.chmod(b'/tmp/e/b', 0)\nos.makedirs('/dev/shm/f/c')\nlibc.chmod(b'/dev/shm/f/c', 0)\n"
    ),
    # --- process attributes of PID 1 (the init) and of its session
    "rlimits of PID 1 (prlimit)": (
        "for resource, value in ((9, 256 << 20), (2, 256 << 20), (0, 3), (6, 32), (7, 199), (1, 4096),\n"
        "                        (3, 1 << 20), (8, 0), (4, 0), (10, 5), (11, 7), (12, 0), (13, 0), (15, 1)):\n"
        "    libc.prlimit(1, resource, (ctypes.c_ulong * 2)(value, value), None)\n"
    ),
    "nice of PID 1, its group and the uid (setpriority)": (
        "libc.setpriority(0, 1, 11)\nlibc.setpriority(1, 1, 12)\nlibc.setpriority(2, 0, 13)\n"
        "libc.setpriority(1, 0, 14)\n"
    ),
    "scheduler of PID 1 (sched_setscheduler, sched_setaffinity, sched_setparam)": (
        "for call in (lambda: os.sched_setscheduler(1, os.SCHED_BATCH, os.sched_param(0)),\n"
        "             lambda: os.sched_setaffinity(1, {0}),\n"
        "             lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))):\n"
        "    try:\n        call()\n    except OSError:\n        pass\n"
    ),
    "I/O priority of PID 1 and the uid (ioprio_set)": (
        "IOPRIO_SET = {'x86_64': 251, 'aarch64': 30}[os.uname().machine]\n"
        "libc.syscall(IOPRIO_SET, 1, 1, 3 << 13)\nlibc.syscall(IOPRIO_SET, 3, os.getuid(), 3 << 13)\n"
        "libc.syscall(IOPRIO_SET, 2, 1, 3 << 13)\n"
    ),
    "nice of the session's autogroup": (  # a program that execs owns its /proc entries again
        "if libc.fork() == 0:\n"
        "    libc.execv(b'/bin/sh', (ctypes.c_char_p * 4)(b'sh', b'-c', b'echo 19 > /proc/self/autogroup', None))\n"
        "    os._exit(1)\nos.wait()\n"
    ),
    "PID 1's files in /proc": (
        "writes = b'echo 1000 > /proc/1/oom_score_adj; echo 100000000 > /proc/1/timerslack_ns; echo x > /proc/1/comm'\n"
        "if libc.fork() == 0:\n"
        "    libc.execv(b'/bin/sh', (ctypes.c_char_p * 4)(b'sh', b'-c', writes, None))\n"
        "    os._exit(1)\nos.wait()\n"
    ),
    # --- processes and kernel objects
    "daemons, stopped and detached": (
        "import signal, time\n"
        "if libc.fork() == 0:\n    libc.setsid()\n    if libc.fork() == 0:\n        time.sleep(60)\n    os._exit(0)\n"
        "if libc.fork() == 0:\n    libc.kill(os.getpid(), signal.SIGSTOP)\n    os._exit(0)\n"
    ),
    "System V IPC, message queues, keys": (
        "libc.shmget(1234, 4096, 0o1666)\nlibc.semget(1234, 1, 0o1666)\nlibc.msgget(1234, 0o1666)\n"
        "libc.mq_open(b'/q', 0o102, 0o600, None)\n"
        "libc.syscall({'x86_64': 248, 'aarch64': 217}[os.uname().machine], b'user', b'k', b'v', 1, -4)\n"
    ),
    "its own limits, nice and umask (inherited by nothing after it)": (
        "libc.setpriority(0, 0, 19)\nos.umask(0o777)\nlibc.prlimit(0, 7, (ctypes.c_ulong * 2)(10, 10), None)\n"
    ),
}


@pytest.fixture(scope="module")
def cfg():
    """One slot: B can only run in A's sandbox, or in a fresh one if A's was discarded."""
    cfg = backend_config("bwrap", uid_base=63800, slots=1, warm=True, wall_timeout_s=6)
    WARM_POOL.close_all()
    yield cfg
    WARM_POOL.close_all()


def sandbox_pid(cfg) -> int | None:
    [sandbox] = WARM_POOL._idle.get(cfg) or [None]
    return sandbox.proc.pid if sandbox else None


def fingerprint(cfg) -> dict:
    [seen] = run_in_sandbox(FINGERPRINT, ["7\n"], cfg)
    return {key: seen.get(key) for key in ("status", "rc", "stdout", "stderr")}  # not its CPU time


@pytest.fixture(scope="module")
def fresh(cfg) -> dict:
    """What a request sees in a fresh sandbox, and again in the same one, warm: the two agree."""
    WARM_POOL.close_all()
    first = fingerprint(cfg)
    assert first["rc"] == 0 and first["stdout"].endswith("echo 7\n"), first
    pid = sandbox_pid(cfg)
    assert fingerprint(cfg) == first and sandbox_pid(cfg) == pid, "the fingerprint is not stable"
    return first


@pytest.mark.parametrize("attack", ATTACKS)
def test_nothing_of_a_request_reaches_the_next_one_in_the_same_warm_sandbox(cfg, fresh, attack):
    WARM_POOL.close_all()  # whatever an earlier entry did
    assert fingerprint(cfg) == fresh
    before = sandbox_pid(cfg)
    [a] = run_in_sandbox(PRELUDE + ATTACKS[attack], [""], cfg)
    assert a["status"] == "exit", a
    kept = sandbox_pid(cfg)
    after = fingerprint(cfg)
    assert processes_of(range(cfg.uid_base, cfg.uid_base + 1)) == []
    assert kept == before, f"A's sandbox was discarded ({attack}): every such request costs a cold start"
    assert after == fresh, f"{attack} reached the next request"


def test_a_request_runs_in_a_session_of_its_own(cfg, fresh):
    [seen] = run_in_sandbox("import os\nprint(os.getsid(0) != 1, os.getsid(1))\n", [""], cfg)
    assert seen["stdout"] == "True 1\n", seen
