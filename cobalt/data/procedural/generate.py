"""Instances of the procedural families: seed → problem (statement, tests, reference solution).

``problem(name, seed)`` is a dict in the embedded set's shape (``id, title, difficulty, question,
public_tests, hidden_tests, solutions, wrong_solutions``); ``record(name, seed)`` is the problem
record the pipeline reads, made by the same conversion as the embedded set's
(:func:`cobalt.data.embedded.problem_records`). Everything is a function of ``(name, seed)``: the
id ``fam-<name>-<seed>`` is enough to rebuild an instance (:func:`reference_solution`).
"""

from __future__ import annotations

import random
import re
from textwrap import indent

from cobalt.data.procedural.families import FAMILIES, LETTERS, WORDS, Family

SOURCE = "cobalt-procedural"
ID_PATTERN = re.compile(r"fam-(\w+)-(\d+)")
PUBLIC_CASES = ("small", "small", "random")  # the first is the statement's example
HIDDEN_CASES = ("min", "equal", "extreme", "small", "random", "random", "random", "large", "large")
MIN_TESTS = 8
MAX_N = 25
ATTEMPTS = 30  # tries for a test input not used yet in the instance

# layout name -> (description, reader source); "cases" wraps the reader and the print in a loop
LIST_FORMATS = {
    "count_line": (
        "The first line contains n. The second line contains the n integers, separated by spaces.",
        "n = int(input())\na = list(map(int, input().split()))\n",
    ),
    "one_line": ("One line with the integers, separated by spaces.", "a = list(map(int, input().split()))\n"),
    "count_lines": (
        "The first line contains n. Each of the next n lines contains one integer.",
        "n = int(input())\na = [int(input()) for _ in range(n)]\n",
    ),
}
KIND_FORMATS = {"nums": ("line", "lines", "cases"), "list": tuple(LIST_FORMATS), "text": ("line", "cases")}
PRINTERS = {"value": "print({})", "space": "print(*{})", "lines": 'print(*{}, sep="\\n")'}
SEPARATORS = {"space": " ", "lines": "\n"}
COUNT_WORDS = {1: "an integer", 2: "two integers", 3: "three integers"}
LINE_COUNTS = {2: "Two", 3: "Three"}


def formats(fam: Family) -> tuple[str, ...]:
    allowed = fam.formats or KIND_FORMATS[fam.kind]
    if fam.kind == "nums" and len(fam.names) == 1:
        allowed = tuple(f for f in allowed if f != "lines")  # the same as "line" for one number
    return allowed


def problem_id(name: str, seed: int) -> str:
    return f"fam-{name}-{seed:06d}"


def parse_id(pid: str) -> tuple[str, int]:
    """``fam-<name>-<seed>`` → ``(name, seed)``; ValueError for anything else."""
    m = ID_PATTERN.fullmatch(pid)
    if not m or m.group(1) not in FAMILIES:
        raise ValueError(f"{pid!r} is not the id of a procedural problem (fam-<family>-<seed>)")
    return m.group(1), int(m.group(2))


# ----------------------------------------------------------------------------------- programs
def _names(fam: Family) -> str:
    *first, last = fam.names
    return f"{', '.join(first)} and {last}" if first else last


def reader(fam: Family, fmt: str) -> str:
    if fam.kind == "list":
        return LIST_FORMATS[fmt][1]
    if fam.kind == "text":
        return "s = input()\n"
    if fmt == "lines":
        return "".join(f"{v} = int(input())\n" for v in fam.names)
    if len(fam.names) == 1:
        return f"{fam.names[0]} = int(input())\n"
    return f"{', '.join(fam.names)} = map(int, input().split())\n"


def program(fam: Family, fmt: str, style: str, consts: dict, expr: str | None = None) -> str:
    """The solution's source: read the input in layout ``fmt``, print ``expr`` (default the
    family's) in ``style``."""
    body = reader(fam, fmt) + fam.setup.format(**consts)
    body += PRINTERS[style].format((expr or fam.expr).format(**consts)) + "\n"
    if fmt == "cases":
        return "for _ in range(int(input())):\n" + indent(body, "    ")
    return body


# ------------------------------------------------------------------------------------- inputs
def datum(fam: Family, rng: random.Random, case: str, consts: dict):
    """One input value of the family (a tuple of ints, a list of ints, or a string)."""
    if fam.make:
        return fam.make(rng, case, consts)
    return {"nums": _nums, "list": _list, "text": _text}[fam.kind](fam, rng, case)


def _value(fam: Family, rng: random.Random, case: str) -> int:
    if case == "min":
        return fam.lo
    if case == "extreme":
        return rng.choice((fam.lo, fam.hi))
    if case == "small":
        return rng.randint(max(fam.lo, -99), min(fam.hi, 99))
    return rng.randint(fam.lo, fam.hi)


def _nums(fam: Family, rng: random.Random, case: str) -> tuple[int, ...]:
    if case == "equal":
        return (_value(fam, rng, "random"),) * len(fam.names)
    return tuple(_value(fam, rng, case) for _ in fam.names)


def _list(fam: Family, rng: random.Random, case: str) -> list[int]:
    n = {"min": 1, "small": rng.randint(3, 5), "large": rng.randint(15, MAX_N)}.get(case, rng.randint(2, 10))
    if case == "equal":
        return [_value(fam, rng, "random")] * n
    return [_value(fam, rng, case) for _ in range(n)]


def _text(fam: Family, rng: random.Random, case: str) -> str:
    if case == "min":
        return rng.choice(LETTERS)
    if fam.word:
        if case == "equal":
            return rng.choice(LETTERS) * rng.randint(2, 6)
        return rng.choice(WORDS)
    if case == "equal":
        return " ".join([rng.choice(WORDS)] * rng.randint(2, 4))
    if case == "extreme":
        return " ".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 6)))
    n = {"small": rng.randint(1, 3), "large": rng.randint(8, 12)}.get(case, rng.randint(3, 6))
    return " ".join(rng.choice(WORDS) for _ in range(n))


def render_input(fam: Family, fmt: str, data: list) -> str:
    """The stdin text of one test: one datum, or several after their count (layout "cases")."""
    if fmt == "cases":
        return f"{len(data)}\n" + "".join(render_input(fam, "line", [d]) for d in data)
    (d,) = data
    if fam.kind == "text":
        return d + "\n"
    if fam.kind == "nums":
        return "".join(f"{v}\n" for v in d) if fmt == "lines" else " ".join(map(str, d)) + "\n"
    numbers = " ".join(map(str, d))
    return {
        "count_line": f"{len(d)}\n{numbers}\n",
        "one_line": numbers + "\n",
        "count_lines": "".join(f"{v}\n" for v in [len(d), *d]),
    }[fmt]


def render_output(fam: Family, style: str, consts: dict, data: list) -> str:
    """What the reference prints: the family's ``fn`` answer per datum, in ``style``."""
    lines = []
    for d in data:
        answer = fam.fn(d, consts)
        lines.append(SEPARATORS[style].join(map(str, answer)) if isinstance(answer, list) else str(answer))
    return "".join(line + "\n" for line in lines)


def make_tests(fam: Family, rng: random.Random, fmt: str, style: str, consts: dict, cases, used: set) -> dict:
    """``{"inputs", "outputs"}`` of one test per case kind, each input new to ``used`` (the
    instance's inputs so far; a case is skipped when no new input turns up)."""
    inputs, outputs = [], []
    for case in cases:
        for _ in range(ATTEMPTS):
            count = 1 if fmt != "cases" or case == "min" else (5 if case == "large" else rng.randint(2, 4))
            data = [datum(fam, rng, case, consts) for _ in range(count)]
            text = render_input(fam, fmt, data)
            if text not in used:
                used.add(text)
                inputs.append(text)
                outputs.append(render_output(fam, style, consts, data))
                break
    return {"inputs": inputs, "outputs": outputs}


# ---------------------------------------------------------------------------------- statement
def statement(fam: Family, rng: random.Random, fmt: str, style: str, consts: dict, example) -> str:
    task = rng.choice(fam.templates).format(**consts)
    return "\n\n".join(
        [
            f"{_intro(fam)} {task}",
            f"Input: {_input_description(fam, fmt)} {_limits(fam, fmt)}",
            f"Output: {_output_description(fam, fmt, style)}",
            f"Example input:\n{example[0].rstrip()}",
            f"Example output:\n{example[1].rstrip()}",
        ]
    )


def _intro(fam: Family) -> str:
    if fam.kind == "nums":
        return f"You are given {COUNT_WORDS[len(fam.names)]} {_names(fam)}."
    if fam.kind == "list":
        return "You are given a list of n integers."
    if fam.word:
        return "You are given a word s of lowercase letters."
    return "You are given a line of text s: lowercase words separated by single spaces."


def _one(fam: Family) -> str:
    """One case's input, as the layouts describe it."""
    if fam.kind == "text":
        return "the string s"
    return f"the integers {_names(fam)}, separated by spaces" if len(fam.names) > 1 else "the integer n"


def _input_description(fam: Family, fmt: str) -> str:
    if fam.kind == "list":
        return LIST_FORMATS[fmt][0]
    if fmt == "cases":
        return (
            "The first line contains t, the number of test cases. "
            f"Each of the next t lines contains {_one(fam)}."
        )
    if fmt == "lines":
        return f"{LINE_COUNTS[len(fam.names)]} lines with one integer each: {_names(fam)}, in this order."
    return f"One line with {_one(fam)}."


def _limits(fam: Family, fmt: str) -> str:
    if fam.limits:
        text = fam.limits
    elif fam.kind == "nums":
        text = f"{fam.lo} <= {', '.join(fam.names)} <= {fam.hi}."
    elif fam.kind == "list":
        text = f"1 <= n <= {MAX_N}, and {fam.lo} <= each number <= {fam.hi}."
    else:
        text = "s has at most 20 letters." if fam.word else "s has at most 100 characters."
    return text + (" 1 <= t <= 5." if fmt == "cases" else "")


def _output_description(fam: Family, fmt: str, style: str) -> str:
    answer = fam.answer or ("one integer" if style == "value" else "the resulting numbers")
    if fmt == "cases":
        return f"For each test case, print {answer} on a line of its own."
    if style == "space":
        return f"Print {answer} on one line, separated by spaces."
    if style == "lines":
        return f"Print {answer}, one per line."
    return f"Print {answer}."


# ----------------------------------------------------------------------------------- problems
def problem(name: str, seed: int) -> dict:
    """Instance ``seed`` of family ``name``, in the embedded set's shape (with ``family``,
    ``seed`` and ``format`` beside). Deterministic: the same arguments give the same dict."""
    if name not in FAMILIES:
        raise KeyError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}")
    fam = FAMILIES[name]
    rng = random.Random(f"{name}:{seed}")
    consts = fam.consts(rng)
    fmt = rng.choice(formats(fam))
    style = rng.choice(("space", "lines")) if fam.out == "list" else fam.out
    used: set[str] = set()
    public = make_tests(fam, rng, fmt, style, consts, PUBLIC_CASES, used)
    hidden = make_tests(fam, rng, fmt, style, consts, HIDDEN_CASES, used)
    if len(public["inputs"]) < 2 or len(public["inputs"]) + len(hidden["inputs"]) < MIN_TESTS:
        raise ValueError(f"{problem_id(name, seed)}: too few distinct tests")
    wrong = program(fam, fmt, style, consts, fam.wrong)
    return {
        "id": problem_id(name, seed),
        "title": fam.title,
        "difficulty": "EASY",
        "question": statement(fam, rng, fmt, style, consts, (public["inputs"][0], public["outputs"][0])),
        "public_tests": public,
        "hidden_tests": hidden,
        "solutions": [program(fam, fmt, style, consts)],
        "wrong_solutions": [{"code": wrong, "bug": f"computes {fam.wrong.format(**consts)} instead"}],
        "family": name,
        "seed": seed,
        "format": fmt,
    }


def to_record(prob: dict) -> dict:
    """The problem record of a :func:`problem` dict: the embedded set's conversion (LiveCodeBench
    row → record), so the fields and their formats are those of every other problem record."""
    from cobalt.data.embedded import to_lcb_records
    from cobalt.data.livecodebench import convert_record

    record = convert_record(to_lcb_records([prob])[0])
    record["contest_id"] = SOURCE
    return record


def record(name: str, seed: int) -> dict:
    return to_record(problem(name, seed))


def reference_solution(pid: str) -> str:
    """The reference solution of the procedural problem with id ``pid`` (rebuilt from the id)."""
    return problem(*parse_id(pid))["solutions"][0]
