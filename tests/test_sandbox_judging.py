"""Contest-site judging, off by default: LiveCodeBench's output comparison (``judge: lcb``), the
input as a seekable file (``stdin: file``) and ``exit()`` / ``quit()`` defined (``site: on``). Each
option passes an accepted-style program that the reference's judging fails, and only when set."""

from __future__ import annotations

import dataclasses

import pytest
from sandbox_fixtures import backend_config

from cobalt.sandbox import evaluate
from cobalt.sandbox.config import SandboxConfig
from cobalt.sandbox.feedback import lcb_match

SUM_OF_INPUT = {"inputs": ["3\n1 2 3\n"], "outputs": ["6\n"]}


@pytest.fixture(params=["bwrap", "landlock"], scope="module")
def cfg(request):
    uid_base = {"bwrap": 63200, "landlock": 63300}[request.param]
    return backend_config(request.param, uid_base=uid_base, slots=4)


def passes(code: str, tests: dict, cfg, **options) -> bool:
    return evaluate(code, tests, dataclasses.replace(cfg, **options))["passing"] == [True]


def test_input_read_by_its_size_needs_a_file(cfg):
    code = "import os\ndata = os.read(0, os.fstat(0).st_size)\nprint(sum(map(int, data.split()[1:])))\n"
    assert passes(code, SUM_OF_INPUT, cfg, stdin="file")
    assert not passes(code, SUM_OF_INPUT, cfg)  # a pipe's st_size is 0: the program reads nothing


def test_a_file_stdin_reads_as_a_pipe_does(cfg):
    code = "import sys\nn = int(input())\nprint(sum(map(int, sys.stdin.read().split())))\n"
    assert passes(code, SUM_OF_INPUT, cfg, stdin="file") and passes(code, SUM_OF_INPUT, cfg)


@pytest.mark.parametrize("call", ["exit()", "quit()", "exit(0)"])
def test_exit_after_the_answer_needs_site(cfg, call):
    code = f"input()\nprint(sum(map(int, input().split())))\n{call}\n"
    assert passes(code, SUM_OF_INPUT, cfg, site="on")
    assert not passes(code, SUM_OF_INPUT, cfg)  # python3 -S: NameError after the answer


def test_exit_with_a_nonzero_code_still_fails_with_site(cfg):
    assert not passes("input()\nprint(6)\nexit(1)\n", SUM_OF_INPUT, cfg, site="on")


def test_decimal_answers_are_judged_as_livecodebench_does(cfg):
    tests = {"inputs": [""], "outputs": ["1.0\n2 3\n"]}
    assert passes("print('1.00')\nprint('2.0 3')\n", tests, cfg, judge="lcb")
    assert not passes("print('1.00')\nprint('2.0 3')\n", tests, cfg)  # the reference: texts differ
    assert not passes("print('1.000000001')\nprint('2 3')\n", tests, cfg, judge="lcb")


@pytest.mark.parametrize(
    "output, expected, same",
    [
        ("1.0\n", "1.00", True),
        ("1.0", "1.000000001", False),
        (" 3 \n\n", "3", True),  # stripped, as a whole and line by line
        ("1e0", "1", True),  # decimals, as LiveCodeBench parses them
        ("a b", "a  b", False),  # not numbers: the stripped lines must be equal
        ("1 2", "1 2 3", False),
        ("1\n2", "1 2", False),  # line by line
        ("sNaN", "1", False),
    ],
)
def test_lcb_match_on_hand_made_cases(output, expected, same):
    assert lcb_match(output, expected) is same


def test_options_are_checked_and_default_to_the_references_judging():
    default = SandboxConfig()
    assert (default.judge, default.stdin, default.site) == ("reference", "pipe", "off")
    assert SandboxConfig(site=True).site == "on"  # YAML's bare `on`
    for bad in ({"judge": "codeforces"}, {"stdin": "tty"}, {"site": "yes"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            SandboxConfig(**bad)
