"""Shared builders for the data-pipeline tests: hand-made records and a tiny offline tokenizer."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cobalt.common.prompts import ALL_PUBLIC_PASSED_MARKER, SYSTEM_PROMPT


def tests_json(n: int, prefix: str = "") -> str:
    return json.dumps(
        {"inputs": [f"{prefix}{i}" for i in range(n)], "outputs": [f"{prefix}{2 * i}" for i in range(n)]}
    )


def result(passing: list[bool]) -> dict:
    return {"passing": list(passing), "feedback": [f"fb{i}" for i in range(len(passing))]}


def conversation(k: int, n_turns: int, passed_public: list[bool] | None = None) -> list[dict]:
    """system, user, then (assistant, feedback) × n_turns; contents unique to conversation ``k``.

    ``passed_public[t]`` puts the all-public-passed marker in the feedback after turn ``t``.
    """
    passed_public = passed_public or [False] * n_turns
    conv = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Solve the problem."}]
    for t in range(n_turns):
        conv.append({"role": "assistant", "content": f"conv {k} turn {t}\n```python\nprint({t})\n```"})
        text = (
            ALL_PUBLIC_PASSED_MARKER + "." if passed_public[t] else f"Your code failed (conv {k} turn {t})."
        )
        conv.append({"role": "user", "content": text})
    return conv


def trajectory(
    pid,
    rates: list[list[float]],
    *,
    n_tests: int = 10,
    turn0_pass: bool | list = False,
    markers: list[list[bool]] | None = None,
    public_rates=None,
) -> dict:
    """A valid trajectory record with ``rates`` as both hidden and public pass rates (so the
    combined rate equals ``rates``)."""
    k, n_turns = len(rates), len(rates[0])
    flags = turn0_pass if isinstance(turn0_pass, list) else [turn0_pass] * k
    return {
        "id": pid,
        "difficulty": "EASY",
        "test_cases": tests_json(n_tests),
        "public_test_cases": tests_json(4),
        "hidden_test_cases": tests_json(n_tests - 4, "h"),
        "conversations": [conversation(i, n_turns, markers[i] if markers else None) for i in range(k)],
        "responses": [[f"<think>x</think>r{i}{t}" for t in range(n_turns)] for i in range(k)],
        "turn0_results": [result([f] * 3) for f in flags],
        "public_pass_rates": public_rates if public_rates is not None else [list(r) for r in rates],
        "all_pass_rates": [list(r) for r in rates],
    }


def apps_problems(directory) -> list[dict]:
    """The real APPS problems of ``directory`` (``../shared/data/apps-samples``: statement, tests,
    accepted solutions) as problems of the embedded set's shape. They carry 1 to 3 tests each: the
    tests are repeated to 8, TACO-verified's least (the filters drop a problem with fewer), which
    leaves hidden tests after TACO's 4 public and LiveCodeBench's 1; the first test is public."""
    problems = []
    for folder in sorted(p for p in Path(directory).iterdir() if (p / "question.txt").is_file()):
        tests = with_single_queries(json.loads((folder / "input_output.json").read_text()))
        repeat = -(-8 // len(tests["inputs"]))
        tests = {key: (tests[key] * repeat)[: max(8, len(tests[key]))] for key in ("inputs", "outputs")}
        meta = json.loads((folder / "metadata.json").read_text())
        problems.append({
            "id": f"apps-{folder.name}",
            "title": meta.get("url", folder.name).rsplit("/", 1)[-1],
            "question": (folder / "question.txt").read_text(),
            "difficulty": {"interview": "MEDIUM", "competition": "HARD"}.get(meta.get("difficulty"), "EASY"),
            "solutions": json.loads((folder / "solutions.json").read_text()),
            "public_tests": {"inputs": tests["inputs"][:1], "outputs": tests["outputs"][:1]},
            "hidden_tests": {"inputs": tests["inputs"][1:], "outputs": tests["outputs"][1:]},
        })  # fmt: skip
    return problems


def with_single_queries(tests: dict) -> dict:
    """A test of ``q`` one-line queries (its first line ``q``, one output line each: Codeforces
    1036B among the APPS samples) gives each query as a test of its own too, so that its public
    tests have distinct outputs (the perturbation needs two)."""
    inputs, outputs = list(tests["inputs"]), list(tests["outputs"])
    for given, expected in zip(tests["inputs"], tests["outputs"]):
        lines, answers = given.splitlines(), expected.splitlines()
        if lines and lines[0].strip().isdigit() and int(lines[0]) == len(lines) - 1 == len(answers) > 1:
            inputs += [f"1\n{line}\n" for line in lines[1:]]
            outputs += [f"{answer}\n" for answer in answers]
    return {"inputs": inputs, "outputs": outputs}


def taco_file(path, limit: int | None = None, id_prefix: str = "taco-", problems: list[dict] | None = None):
    """The embedded problems (or ``problems``) as a TACO-verified file: one JSON array as the
    dataset ships when ``path`` ends in ``.json``, parquet for ``.parquet``, else JSONL; under ids of
    their own: nothing can look their solutions up by id."""
    import pandas as pd

    from cobalt.data.embedded import load_problems, to_taco_records

    rows = to_taco_records((load_problems() if problems is None else problems)[:limit])
    for i, row in enumerate(rows):
        row["id"] = f"{id_prefix}{i:05d}"
    if str(path).endswith(".parquet"):
        pd.DataFrame(rows).to_parquet(path)
    elif str(path).endswith(".json"):
        path.write_text(json.dumps(rows))
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def lcb_file(path, limit: int | None = None, id_prefix: str = "lcb-", start: int = 0, problems=None):
    """The embedded problems (or ``problems``), from the ``start``-th, as LiveCodeBench
    ``test6.jsonl`` rows (private tests compressed)."""
    from cobalt.data.embedded import load_problems, to_lcb_records

    rows = to_lcb_records((load_problems() if problems is None else problems)[start:][:limit])
    for i, row in enumerate(rows):
        row["question_id"] = f"{id_prefix}{i:04d}"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def lcb_layout(question: str) -> str:
    """A TACO/APPS statement laid out as LiveCodeBench ships AtCoder's: ``-----Input-----``
    headers become ``Input`` lines, ``-----Sample Input-----`` (or ``-----Example-----``) becomes
    ``Sample Input 1`` and so on (another sample section than the original's)."""
    samples = 0

    def header(match) -> str:
        nonlocal samples
        name = match.group(1).strip()
        if name.lower().startswith(("sample input", "example")):
            samples += 1
        if name.lower().startswith(("sample", "example")):
            name = f"{'Sample Output' if 'output' in name.lower() else 'Sample Input'} {samples}"
        return f"\n{name}\n\n"

    return re.sub(r"-----(.+?)-----\n?", header, question)


def respaced(text: str) -> str:
    """``text`` with every run of spaces doubled and every line break a blank line."""
    return re.sub(r"\s+", lambda m: "\n\n" if "\n" in m.group() else "  ", text)


REWORDED_CLOCK = (
    "A wall clock uses 24-hour time written as HH:MM (hours 00-23, minutes 00-59) and wraps from "
    "23:59 to 00:00. You know the time it shows now and an amount of minutes k. Which time will it "
    "show after k more minutes? Read the time on line one and k on line two; print the answer as "
    "HH:MM with leading zeros. k is between 0 and one billion."
)


def plant_lcb_copies(directory: Path, lcb_ids=("cobalt-003", "cobalt-009", "cobalt-005")) -> list[str]:
    """``directory/test6.jsonl``: four embedded problems as LiveCodeBench ships them (statements
    with their ``Sample Input 1`` sections, private tests compressed); ``directory/taco.jsonl``:
    a TACO-verified file carrying the first three as shipped, under ids of their own, each in the
    part the chain's seeded split trains on (rehearsal: half dev): the first statement verbatim,
    the second re-spaced (both with 3 of their tests only), the third (``cobalt-005``: 26 tests,
    more than the evaluation's 20 hidden) reworded with every test LiveCodeBench ships. Returns
    the LiveCodeBench ids planted."""
    from cobalt.data.embedded import load_problems, to_taco_records
    from cobalt.data.embedded.problems import all_tests
    from cobalt.data.taco import split_train_dev

    problems = {p["id"]: p for p in load_problems()}
    shipped = [problems[i] for i in lcb_ids] + [problems["cobalt-020"]]
    lcb_file(directory / "test6.jsonl", problems=shipped)

    def three_tests(p):
        tests = all_tests(p)
        return {
            **p,
            "public_tests": {k: v[:3] * 3 for k, v in tests.items()},
            "hidden_tests": {"inputs": [], "outputs": []},
        }

    verbatim, spaced, reworded = (problems[i] for i in lcb_ids)
    copies = [three_tests(verbatim), {**three_tests(spaced), "question": respaced(spaced["question"])},
              {**reworded, "question": REWORDED_CLOCK}]  # fmt: skip
    fillers = [p for p in problems.values() if p not in shipped][:7]
    trained = sorted(split_train_dev(list(range(10)), 0.5, seed=42)[0])[:3]
    rows = to_taco_records([copies.pop(0) if i in trained else fillers.pop(0) for i in range(10)])
    for i, row in enumerate(rows):
        row["id"] = f"taco-{i:05d}"
    (directory / "taco.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ["lcb-0000", "lcb-0001", "lcb-0002"]
