"""A program runs in the sandbox as it runs under ``python3 solution.py``: the same output and the
same exit status, for the idioms of real accepted competitive-programming solutions (fast-output
templates, closed streams, atexit handlers, deep recursion, threads with a big stack)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from sandbox_fixtures import backend_config

from cobalt.sandbox.runner import run_in_sandbox

PYTHON = "/usr/bin/python3"

PROGRAMS = {
    # The fast-output template: stdout swapped for a buffer, written out by an atexit handler.
    "atexit_buffered_output": (
        "import atexit, io, os, sys\n"
        "buffer = io.StringIO()\nsys.stdout = buffer\n"
        "atexit.register(lambda: os.write(1, buffer.getvalue().encode()))\n"
        "print(int(input()) * 2)\n"
    ),
    "closed_stdout_after_the_answer": "import sys\nwith sys.stdout as out:\n    print(int(input()) * 2, file=out)\n",
    "exit_inside_finally": "import sys\ntry:\n    print(int(input()) * 2)\nfinally:\n    sys.exit(0)\n",
    "exit_nonzero_inside_finally": "import sys\ntry:\n    print(int(input()) * 2)\nfinally:\n    sys.exit(3)\n",
    "thread_with_a_raised_stack": (
        "import sys, threading\nsys.setrecursionlimit(10 ** 6)\nthreading.stack_size(1 << 26)\n"
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "t = threading.Thread(target=lambda: print(depth(int(input()) * 1000)))\nt.start()\nt.join()\n"
    ),
    "deep_recursion_in_the_main_thread": (
        "import sys\nsys.setrecursionlimit(10 ** 5)\n"
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "print(depth(int(input()) * 1000))\n"
    ),
    "stdin_buffer_readline": "import sys\ninput = sys.stdin.buffer.readline\nprint(int(input()) * 2)\n",
    "os_write_to_fd_1": "import os\nos.write(1, b'%d\\n' % (int(input()) * 2))\n",
    "mixed_print_and_os_write": "import os, sys\nprint('a')\nsys.stdout.flush()\nos.write(1, b'b\\n')\nprint('c')\n",
    "print_then_swap_stdout": (
        "import io, sys\nprint(int(input()) * 2)\nsys.stdout = io.StringIO()\nprint('hidden')\n"
        "sys.__stdout__.write('restored\\n')\n"
    ),
    "stdout_buffer_write": "import sys\nsys.stdout.buffer.write(b'%d\\n' % (int(input()) * 2))\n",
    "print_then_os_exit_1": "import os, sys\nprint(int(input()) * 2)\nsys.stdout.flush()\nos._exit(1)\n",
    "unflushed_print_then_os_exit_0": "import os\nprint(int(input()) * 2)\nos._exit(0)\n",
    "exit_with_a_message": "import sys\nprint(int(input()) * 2)\nsys.exit('bye')\n",
    "atexit_handler_raises": (
        "import atexit\nprint(int(input()) * 2)\n"
        "def boom():\n    raise ValueError('late')\natexit.register(boom)\n"
    ),
    "stderr_closed": "import sys\nsys.stderr.close()\nprint(int(input()) * 2)\n",
    "answer_padded_with_whitespace": "print('\\n\\n   %d   \\n\\n' % (int(input()) * 2))\n",
    "non_daemon_thread_prints_last": (
        "import threading, time\n"
        "def late():\n    time.sleep(0.2)\n    print(int(x) * 2)\n"
        "x = input()\nthreading.Thread(target=late).start()\n"
    ),
    # python3 waits for non-daemon threads however the main thread ends
    "non_daemon_thread_prints_after_sys_exit": (
        "import sys, threading, time\n"
        "def late():\n    time.sleep(0.2)\n    print(int(x) * 2)\n"
        "x = input()\nthreading.Thread(target=late).start()\nsys.exit(0)\n"
    ),
    "non_daemon_thread_prints_after_an_uncaught_error": (
        "import threading, time\n"
        "def late():\n    time.sleep(0.2)\n    print(int(x) * 2)\n"
        "x = input()\nthreading.Thread(target=late).start()\nraise ValueError('main ends')\n"
    ),
}


def as_python3(code: str, stdin: str, tmp_path) -> tuple[str, int]:
    """What ``python3 solution.py`` prints on stdout and its exit status (not sandboxed: these are
    the test's own trusted programs)."""
    path = tmp_path / "solution.py"
    path.write_text(code)
    done = subprocess.run(
        [PYTHON, "-S", str(path)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},  # as in the sandbox: no PYTHONUNBUFFERED
    )
    return done.stdout, done.returncode


@pytest.fixture(params=["bwrap", "landlock"], scope="module")
def cfg(request):
    return backend_config(request.param, uid_base={"bwrap": 62400, "landlock": 62500}[request.param], slots=4)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux-only")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_runs_as_under_python3(name, cfg, tmp_path):
    code, stdin = PROGRAMS[name], "21\n"
    expected_stdout, expected_rc = as_python3(code, stdin, tmp_path)
    [result] = run_in_sandbox(code, [stdin], cfg)
    assert (result["stdout"], result["rc"]) == (expected_stdout, expected_rc), result


def test_each_test_seeds_its_own_random_numbers(cfg):
    # Modules are preloaded before the tests fork only when they hold no state a test could see:
    # `random` seeds itself at import, so every test must import it afresh, as python3 does.
    program = "import random, re, collections\nprint(random.random(), re.sub('a', 'b', input()))\n"
    runs = run_in_sandbox(program, ["aa"] * 4, cfg)
    numbers = [r["stdout"].split()[0] for r in runs]
    assert len(set(numbers)) == 4 and all(r["stdout"].split()[1] == "bb" for r in runs), runs
