"""Buggy first attempts mutated from reference solutions (cobalt/data/mutations.py) and the offline
trajectories made of them (python -m cobalt.data.procedural.offline): every bug class yields
compiling mutants, deterministically; equivalent mutants are dropped in the sandbox; the
trajectories validate and the bandit builder turns them into prompts that end with a failing
attempt and its feedback."""

from __future__ import annotations

import asyncio
import json

import pytest

from cobalt.common.extract import extract_code
from cobalt.common.jsonl import load_jsonl, write_jsonl
from cobalt.common.prompts import ALL_PUBLIC_PASSED_MARKER
from cobalt.data import bandit
from cobalt.data.mutations import BUG_CLASSES, Survival, mutants, pick_candidates, surviving_mutants
from cobalt.data.procedural import record, reference_solution
from cobalt.data.procedural.offline import main as offline_main
from cobalt.data.procedural.offline import manifest_path
from cobalt.data.trajectories import read_trajectories

# one instance each; between them every bug class has mutants that fail
FAMILIES = ("count_greater", "sort_asc", "add_two")


def evaluator():
    from cobalt.serve.client import get_evaluator

    return get_evaluator("local")


def by_class(source: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {bug: [] for bug in BUG_CLASSES}
    for bug, mutated in mutants(source):
        out[bug].append(mutated)
    return out


# ------------------------------------------------------------------------------------ mutations
@pytest.mark.parametrize("name", FAMILIES)
def test_every_mutant_compiles_and_differs_from_the_reference(name):
    source = reference_solution(record(name, 0)["id"])
    found = mutants(source)
    assert found and len({m for _, m in found}) == len(found)  # deduplicated
    for bug, mutated in found:
        assert bug in BUG_CLASSES
        compile(mutated, "<mutant>", "exec")
        assert mutated.strip() != source.strip()


def test_each_bug_class_makes_the_bug_it_names():
    loop = "n = int(input())\nprint(sum(i for i in range(1, n + 1)))\n"
    assert "n = int(input())\nprint(sum(i for i in range(1, n)))\n" in by_class(loop)["off_by_one"]
    pair = "a, b = map(int, input().split())\nprint(a + b)\n"
    assert "a, b = map(int, input().split())\nprint(a - b)\n" in by_class(pair)["wrong_operator"]
    assert "a = int(input())\nb = int(input())\nprint(a + b)\n" in by_class(pair)["wrong_input_reading"]
    listing = "n = int(input())\na = list(map(int, input().split()))\nprint(*sorted(a))\n"
    formats = by_class(listing)["wrong_output_format"]
    assert (
        "n = int(input())\na = list(map(int, input().split()))\nprint(sorted(a))\n" in formats
    )  # a list repr
    assert any("sep='\\n'" in m for m in formats) and any("sep=', '" in m for m in formats)
    reading = by_class(listing)["wrong_input_reading"]
    assert (
        "a = list(map(int, input().split()))\nprint(*sorted(a))\n" in reading
    )  # the count line taken for data
    assert "n = int(input())\na = input().split()\nprint(*sorted(a))\n" in reading  # strings, not numbers
    answer = 's = input()\nprint("YES" if s == s[::-1] else "NO")\n'
    assert 's = input()\nprint("yes" if s == s[::-1] else "NO")\n' in by_class(answer)["wrong_output_format"]
    assert (
        's = input().split()[0]\nprint("YES" if s == s[::-1] else "NO")\n'
        in by_class(answer)["wrong_input_reading"]
    )
    cases = "for _ in range(int(input())):\n    n = int(input())\n    print(n * 2)\n"
    assert (
        "input()\nn = int(input())\nprint(n * 2)\n" in by_class(cases)["wrong_input_reading"]
    )  # first case only


def test_every_bug_class_has_mutants_on_the_chosen_families():
    found = {bug for name in FAMILIES for bug, _ in mutants(reference_solution(record(name, 0)["id"]))}
    assert found == set(BUG_CLASSES)


def test_candidates_are_deterministic_per_seed_and_alternate_the_classes():
    source = reference_solution(record("count_greater", 0)["id"])
    first = pick_candidates(source, seed=1)
    assert first == pick_candidates(source, seed=1)
    assert sorted(first) == sorted(mutants(source))
    assert any(pick_candidates(source, seed=s) != first for s in range(2, 6))
    head = [bug for bug, _ in first[:4]]
    assert sorted(head) == sorted(BUG_CLASSES)  # one of each class before any second
    assert pick_candidates(source, seed=1, limit=3) == first[:3]


def test_a_mutant_that_passes_every_test_is_dropped_as_equivalent():
    """A mutant that only adds a trailing space to a one-line answer is equivalent: it passes
    every test, so it is tried but never kept."""
    source = "a = list(map(int, input().split()))\nprint(sum(a))\n"
    problem = record("list_sum", 0)
    assert reference_solution(problem["id"]) == source  # the one-line layout of list_sum
    equivalent = "a = list(map(int, input().split()))\nprint(sum(a), end=' ')\n"
    assert ("wrong_output_format", equivalent) in mutants(source)
    survival = Survival()
    kept = asyncio.run(
        surviving_mutants([problem], {problem["id"]: source}, evaluator(), per_problem=10, survival=survival)
    )[problem["id"]]
    assert kept and equivalent not in [m for _, m in kept]
    table = survival.table()
    assert table["wrong_output_format"]["tried"] == 1 and table["wrong_output_format"]["survived"] == 0
    assert sum(row["tried"] for row in table.values()) == len(mutants(source))
    from cobalt.data.execute import run_jobs

    results = asyncio.run(run_jobs(evaluator(), [(m, problem["hidden_test_cases"]) for _, m in kept]))
    assert all(not all(r["passing"]) for r in results)  # every survivor fails a hidden test


# --------------------------------------------------------------------------- offline trajectories
@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    """The command line on three problems: (trajectories path, manifest, problems, stdout)."""
    out = tmp_path_factory.mktemp("offline")
    problems = [record(name, 0) for name in FAMILIES]
    write_jsonl(out / "problems.jsonl", problems)
    argv = ["--problems", str(out / "problems.jsonl"), "--out", str(out / "offline.jsonl")]
    argv += ["--per_problem", "3", "--tries", "6", "--num_samples", "6", "--seed", "3"]
    offline_main(argv)
    manifest = json.loads(manifest_path(out / "offline.jsonl").read_text())
    return out / "offline.jsonl", manifest, problems, argv


def test_offline_trajectories_validate_and_open_with_a_failing_mutant(offline):
    path, _, problems, _ = offline
    records = [r for _, r in read_trajectories(path, need_hidden=True)]
    assert [r["id"] for r in records] == [p["id"] for p in problems]
    for r in records:
        assert len(r["conversations"]) == 6 and len(r["responses"][0]) == 3
        assert all(not all(res["passing"]) for res in r["turn0_results"])  # turn 0 always fails
        assert all(row[0] in BUG_CLASSES for row in r["bug_classes"])
        assert all(rate < 1.0 for row in r["all_pass_rates"] for rate in row[:1])
        for row, rates in zip(r["bug_classes"], r["all_pass_rates"]):
            for bug, rate in zip(row, rates):
                assert (bug == "reference") == (rate == 1.0)  # the fix passes, a mutant fails
        for row, bugs in zip(r["responses"], r["bug_classes"]):  # a failing turn after a failing
            codes = list(map(extract_code, row))  # one is another mutant (3 kept per problem)
            assert all(a != b for a, b, bug in zip(codes, codes[1:], bugs[1:]) if bug != "reference")


def test_the_manifest_counts_survivors_per_bug_class_and_family(offline):
    _, manifest, problems, _ = offline
    assert set(manifest["bug_classes"]) == set(BUG_CLASSES)
    assert set(manifest["by_family"]) == set(FAMILIES)
    tried = sum(row["tried"] for row in manifest["bug_classes"].values())
    assert tried == 6 * len(problems)
    for row in manifest["bug_classes"].values():
        assert row["tried"] >= row["survived"] >= row["kept"] and row["survived"] >= row["fail_public"]
    assert sum(row["kept"] for row in manifest["bug_classes"].values()) == 3 * len(problems)


def test_offline_trajectories_are_deterministic(offline, tmp_path):
    path, _, _, argv = offline
    again = tmp_path / "again.jsonl"
    offline_main([*argv[:3], str(again), *argv[4:]])
    assert load_jsonl(again) == load_jsonl(path)


def test_the_command_refuses_an_existing_output(offline, capsys):
    _, _, _, argv = offline
    with pytest.raises(FileExistsError):
        offline_main(argv)
    with pytest.raises(SystemExit):
        offline_main(["--help"])
    assert "mutants" in capsys.readouterr().out


def test_the_bandit_builder_makes_prompts_that_end_with_a_failing_attempt(offline):
    path, _, problems, _ = offline
    records = [r for _, r in read_trajectories(path, need_hidden=True)]
    prompts, counts = bandit.build_bandit_prompts(
        records, lambda msgs: sum(len(m["content"]) for m in msgs) // 4
    )
    assert counts.skipped == 0 and counts.kept == len(problems)
    mutants_of = {r["id"]: {c for row in r["responses"] for c in map(extract_code, row)} for r in records}
    for p in problems:
        mutants_of[p["id"]].discard(reference_solution(p["id"]).strip())
        partial = [q for q in prompts if q["example_id"] == p["id"] and len(q["conversation"]) >= 4]
        for q in partial:
            assert [m["role"] for m in q["conversation"][-2:]] == ["assistant", "user"]
        failing = [
            q for q in partial if extract_code(q["conversation"][-2]["content"]) in mutants_of[p["id"]]
        ]
        assert failing, p["id"]  # a context that ends with a buggy attempt ...
        # ... and the evaluator's feedback on the public tests it fails
        assert any(ALL_PUBLIC_PASSED_MARKER not in q["conversation"][-1]["content"] for q in failing)
