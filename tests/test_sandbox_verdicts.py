"""Verdicts and feedback text of the real sandbox, one program per behaviour (reference section 2)."""

from __future__ import annotations

import json

import pytest

from cobalt.sandbox import evaluate
from cobalt.sandbox.feedback import REQUEST_TIMEOUT_FEEDBACK, trunc

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"


def cases(*pairs):
    return {"inputs": [p[0] for p in pairs], "outputs": [p[1] for p in pairs]}


def test_correct_program_passes_with_reference_feedback():
    result = evaluate(ADD, cases(("1 2\n", "3\n"), ("10 20\n", "30")))
    assert result == {
        "passing": [True, True],
        "feedback": [
            "Input:\n1 2\nProgram's Output:\n3\nExpected Output:\n3",
            "Input:\n10 20\nProgram's Output:\n30\nExpected Output:\n30",
        ],
    }


def test_test_cases_may_be_the_json_string_of_records():
    result = evaluate(ADD, json.dumps(cases(("1 2", "3"))))
    assert result["passing"] == [True]


def test_wrong_answer_and_partial_pass():
    result = evaluate(ADD, cases(("1 2", "3"), ("2 2", "5"), ("0 0", "0")))
    assert result["passing"] == [True, False, True]
    assert result["feedback"][1] == "Input:\n2 2\nProgram's Output:\n4\nExpected Output:\n5"


def test_whitespace_around_output_is_ignored_but_inside_is_not():
    program = "print('  1 2  ')\nprint()\n"
    assert evaluate(program, cases(("", "1 2"), ("", "\n1 2\n\n")))["passing"] == [True, True]
    assert evaluate(program, cases(("", "1  2")))["passing"] == [False]


def test_runtime_error_shows_the_user_traceback_only():
    program = "def f(x):\n    return 10 // x\n\nprint(f(int(input())))\n"
    result = evaluate(program, cases(("0", "1")))
    assert result["passing"] == [False]
    assert result["feedback"][0] == (
        "Input:\n0\nProgram's Output:\n\nStderr:\n"
        "Traceback (most recent call last):\n"
        '  File "solution.py", line 4, in <module>\n'
        "    print(f(int(input())))\n"
        "          ^^^^^^^^^^^^^^^\n"
        '  File "solution.py", line 2, in f\n'
        "    return 10 // x\n"
        "           ~~~^^~~\n"
        "ZeroDivisionError: integer division or modulo by zero"
    )


def test_output_before_a_crash_is_shown():
    result = evaluate("print('partial')\nraise ValueError('boom')\n", cases(("", "x")))
    assert result["feedback"][0].startswith("Input:\n\nProgram's Output:\npartial\nStderr:\nTraceback")
    assert result["feedback"][0].endswith("ValueError: boom")


def test_syntax_error_reported_for_every_test():
    result = evaluate("def f(:\n    pass\n", cases(("1", "1"), ("2", "2")))
    assert result["passing"] == [False, False]
    assert result["feedback"][0] == (
        "Input:\n1\nProgram's Output:\n\nStderr:\n"
        'File "solution.py", line 1\n    def f(:\n          ^\n'
        "SyntaxError: invalid syntax"
    )


def test_nonzero_exit_without_stderr_shows_expected_output():
    result = evaluate("import sys\nprint(7)\nsys.exit(3)\n", cases(("", "7")))
    assert result == {"passing": [False], "feedback": ["Input:\n\nProgram's Output:\n7\nExpected Output:\n7"]}


def test_sys_exit_zero_and_exit_message():
    assert evaluate("import sys\nprint(7)\nsys.exit(0)\n", cases(("", "7")))["passing"] == [True]
    result = evaluate("import sys\nsys.exit('bad input')\n", cases(("", "7")))
    assert result["feedback"][0].endswith("Stderr:\nbad input")


def test_timeout_feedback():
    result = evaluate("while True:\n    pass\n", cases(("5", "5")))
    assert result == {
        "passing": [False],
        "feedback": ["Input:\n5\nTimeoutError: Program timed out after 4 seconds."],
    }


def test_sleeping_program_is_stopped_by_the_wall_backstop():
    from dataclasses import replace

    from cobalt.sandbox import default_config

    cfg = replace(default_config(), wall_timeout_s=5)
    result = evaluate("import time\ntime.sleep(60)\n", cases(("", "")), cfg)
    assert result["feedback"] == ["Input:\n\nTimeoutError: Program timed out after 4 seconds."]


def test_huge_output_is_capped_and_truncated_in_feedback():
    result = evaluate("print('ab' * 5_000_000)\n", cases(("", "ab")))
    assert result["passing"] == [False]
    feedback = result["feedback"][0]
    assert "...(truncated) ..." in feedback and len(feedback) < 1200


def test_long_input_and_output_are_truncated_like_the_reference():
    big = "x" * 1000
    result = evaluate("print(input())\n", cases((big, big + "y")))
    assert result["feedback"][0] == (
        f"Input:\n{trunc(big)}\nProgram's Output:\n{trunc(big)}\nExpected Output:\n{trunc(big + 'y')}"
    )
    assert trunc(big) == "x" * 200 + "...(truncated) ..." + "x" * 200


def test_large_input_is_streamed_to_the_program():
    numbers = " ".join(str(i) for i in range(200_000))
    result = evaluate("print(sum(map(int, input().split())))\n", cases((numbers, str(sum(range(200_000))))))
    assert result["passing"] == [True]


def test_program_that_never_reads_stdin():
    result = evaluate("print(42)\n", cases(("1 " * 200_000, "42")))
    assert result["passing"] == [True]


def test_non_utf8_output_does_not_break_the_evaluator():
    result = evaluate("import sys\nsys.stdout.buffer.write(b'\\xff\\xfeok\\n')\n", cases(("", "ok")))
    assert result["passing"] == [False]
    assert "\ufffd" in result["feedback"][0]


def test_threaded_recursion_pattern_finishes_before_exit():
    program = (
        "import sys, threading\nsys.setrecursionlimit(100000)\nthreading.stack_size(1 << 26)\n"
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "def main():\n    print(depth(int(input())))\n"
        "threading.Thread(target=main).start()\n"
    )
    assert evaluate(program, cases(("20000", "20000")))["passing"] == [True]


def test_tests_do_not_share_files_or_state():
    program = (
        "import os\nprint(os.path.exists('seen.txt'), 'counter' in globals())\n"
        "open('seen.txt', 'w').write('1')\ncounter = 1\n"
    )
    result = evaluate(program, cases(*[("", "False False")] * 6))
    assert result["passing"] == [True] * 6


def test_destructive_functions_are_disabled():
    for call in (
        "os.remove('x')",
        "os.system('true')",
        "os.fork()",
        "shutil.rmtree('/tmp')",
        "subprocess.Popen(['true'])",
        "os.chdir('/')",
    ):
        result = evaluate(f"import os, shutil, subprocess\n{call}\n", cases(("", "")))
        assert "TypeError: 'NoneType' object is not callable" in result["feedback"][0], call
    for module in ("resource", "psutil", "tkinter", "joblib", "ipdb"):
        result = evaluate(f"import {module}\n", cases(("", "")))
        assert result["passing"] == [False]
        assert "ModuleNotFoundError" in result["feedback"][0] or "ImportError" in result["feedback"][0]


def test_request_over_its_bound_gets_the_single_reference_entry():
    from dataclasses import replace

    from cobalt.sandbox import default_config

    # Two rounds of 0.5 CPU-s loops on the reference's schedule: 1 s, over a 0.7 s bound.
    cfg = replace(default_config(), test_timeout_s=0.5, request_timeout_s=0.7)
    result = evaluate("while True:\n    pass\n", cases(*[("", "")] * 8), cfg)
    assert result == {"passing": [False], "feedback": [REQUEST_TIMEOUT_FEEDBACK]}
    assert REQUEST_TIMEOUT_FEEDBACK == (
        "TimeoutError: Program timed out because it did not finish running all test cases within 30 seconds."
    )


@pytest.mark.parametrize(
    "request_tests, reason",
    [
        ({"inputs": ["1"]}, "field 'test_cases': 'outputs' must be a list"),
        ({"inputs": "1", "outputs": ["1"]}, "field 'test_cases': 'inputs' must be a list"),
        ({"inputs": ["1", "2"], "outputs": ["1"]}, "2 inputs but 1 outputs"),
        ({"inputs": [1], "outputs": ["1"]}, "field 'test_cases': 'inputs'[0] must be a string"),
        ({"inputs": [], "outputs": []}, "field 'test_cases': has no test cases"),
        ("{not json", "field 'test_cases': not valid JSON"),
        (["1"], "field 'test_cases': expected an object"),
    ],
)
def test_malformed_test_cases_get_a_clear_failure(request_tests, reason):
    result = evaluate(ADD, request_tests)
    assert result["passing"] == [False]
    assert result["feedback"][0].startswith("Exception: invalid request: ")
    assert reason in result["feedback"][0]


def test_oversized_or_non_string_program_is_rejected_without_running():
    result = evaluate("x = 1\n" * 2_000_000, cases(("", "")))
    assert result["passing"] == [False] and "program is too large" in result["feedback"][0]
    result = evaluate(None, cases(("", "")))
    assert result["passing"] == [False] and "code must be a string" in result["feedback"][0]


def test_program_with_nul_byte_is_a_syntax_error():
    result = evaluate("print(1)\x00\n", cases(("", "1")))
    assert result["passing"] == [False]
    assert "source code string cannot contain null bytes" in result["feedback"][0]
