"""Sandbox settings (``sandbox:`` in ``configs/evaluator.yaml``)."""

from __future__ import annotations

import dataclasses
import functools

from cobalt.common.config import check_ranges, config_path, from_dict, load_config


@dataclasses.dataclass(frozen=True)
class SandboxConfig:
    backend: str = "auto"  # bwrap | landlock | auto
    python: str = "/usr/bin/python3"
    bwrap: str = "auto"
    test_timeout_s: float = 4.0  # CPU seconds per test
    wall_timeout_s: float = 12.0  # wall-clock backstop per test for blocked programs
    # the whole request: its tests' CPU times replayed on the reference's schedule (harness.py)
    request_timeout_s: float = 27.0
    request_wall_timeout_s: float = 240.0  # wall-clock backstop for a whole request
    test_concurrency: int = 4
    memory_mb: int = 1024
    max_processes: int = 64
    request_memory_mb: int | None = None  # all processes of a request; None: memory_mb x test_concurrency
    request_cpu_s: float | None = None  # all processes of a request; None: see request_cpu_seconds
    # auto: a cgroup per slot where the host allows it (the kernel counts) | off (YAML: false)
    cgroups: str | bool = "auto"
    warm: bool = True  # keep each slot's sandbox between requests (bwrap with its own tmpfs)
    warm_idle_s: float = 30.0  # a warm sandbox unused this long gives its slot back
    max_file_mb: int = 16
    max_scratch_mb: int = 64  # all files of one request's programs together
    max_scratch_files: int = 4096  # files and directories of one request's programs together
    max_output_bytes: int = 1 << 20
    max_code_bytes: int = 1 << 20
    max_input_bytes: int = 64 << 20
    uid_base: int = 61000
    slots: int = 64
    scratch_root: str | None = None
    # Contest-site judging, off by default (the defaults judge as the reference does):
    judge: str = "reference"  # reference: stripped output equal | lcb: LiveCodeBench's line-by-line match
    stdin: str = "pipe"  # pipe | file: a seekable file, as Codeforces gives it (os.fstat(0).st_size)
    # off: python3 -S, as the reference | on: exit() and quit() defined, as python3 (YAML: booleans)
    site: str | bool = "off"

    def __post_init__(self):
        if self.backend not in ("auto", "bwrap", "landlock"):
            raise ValueError(f"sandbox.backend must be auto, bwrap or landlock, not {self.backend!r}")
        if isinstance(self.cgroups, bool):  # YAML reads a bare `off` as false
            object.__setattr__(self, "cgroups", "auto" if self.cgroups else "off")
        if self.cgroups not in ("auto", "off"):
            raise ValueError(f"sandbox.cgroups must be auto or off, not {self.cgroups!r}")
        if isinstance(self.site, bool):  # YAML reads a bare `on` / `off` as a boolean
            object.__setattr__(self, "site", "on" if self.site else "off")
        for name, allowed in (
            ("judge", ("reference", "lcb")),
            ("stdin", ("pipe", "file")),
            ("site", ("off", "on")),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"sandbox.{name} must be {' or '.join(allowed)}, not {getattr(self, name)!r}"
                )
        positive = ("test_timeout_s", "wall_timeout_s", "request_timeout_s", "request_wall_timeout_s",
                    "test_concurrency", "memory_mb",
                    "max_output_bytes", "max_code_bytes", "max_input_bytes", "max_file_mb", "max_scratch_mb",
                    "max_scratch_files", "slots", "warm_idle_s", "uid_base", "request_memory_mb", "request_cpu_s")  # fmt: skip
        check_ranges(self, "sandbox", positive, at_least={"max_processes": 0})

    def request_memory_bytes(self) -> int:
        return (self.request_memory_mb or self.memory_mb * self.test_concurrency) << 20

    def request_cpu_seconds(self, tests: int) -> float:
        """CPU time all processes of a request may use together: ``request_cpu_s``, else what its
        tests may use one after the other plus a second (the harness, stragglers), at most what
        ``test_concurrency`` tests could use in ``request_timeout_s``, the request's bound."""
        if self.request_cpu_s:
            return self.request_cpu_s
        return min(self.test_timeout_s * tests + 1.0, self.request_timeout_s * self.test_concurrency)

    def harness_limits(
        self,
        dedicated_uid: bool,
        scratch_mounts: tuple[str, ...] = (),
        tests: int = 1,
        own_user_namespace: bool = False,
        warm: bool = False,
    ) -> dict:
        """The limits the in-sandbox harness applies (see harness.py). ``scratch_mounts``: the
        filesystems of their own (bwrap's sized tmpfs) that hold every file a program may write;
        empty when the scratch space is a host directory. ``own_user_namespace``: the sandbox runs
        in a user namespace of its own where the kernel counts processes apart (Linux 5.14).
        ``warm``: the request runs in a process forked by a warm sandbox's init (runner.py)."""
        return {
            "cpu_seconds": self.test_timeout_s,
            "wall_seconds": max(self.wall_timeout_s, self.test_timeout_s),
            "memory_bytes": self.memory_mb << 20,
            "request_memory_bytes": self.request_memory_bytes(),
            "request_cpu_seconds": self.request_cpu_seconds(tests),
            "max_file_bytes": min(self.max_file_mb, self.max_scratch_mb) << 20,
            "max_scratch_bytes": self.max_scratch_mb << 20,
            "max_scratch_files": self.max_scratch_files,
            "scratch_mounts": list(scratch_mounts),
            "request_seconds": self.request_wall_timeout_s,
            "request_bound_seconds": self.request_timeout_s,
            "max_output_bytes": self.max_output_bytes,
            # RLIMIT_NPROC counts every process of the uid in its user namespace: meaningful on a
            # uid of our own, or in a user namespace of our own.
            "max_processes": self.max_processes if dedicated_uid or own_user_namespace else 0,
            "dedicated_uid": dedicated_uid,
            "warm": warm,
            "concurrency": self.test_concurrency,
            "stdin_file": self.stdin == "file",
            "site_builtins": self.site == "on",
        }


@functools.cache
def default_config(name: str = "evaluator") -> SandboxConfig:
    return from_dict(SandboxConfig, load_config(name).get("sandbox"), source=f"{config_path(name)}: sandbox")
