"""Program novelty: normalization (names renamed, constants kept) and the unseen / seen split."""

import json

import pytest

from cobalt.data import exposure
from cobalt.data.novelty import (
    SEEN_GRPO,
    SEEN_SFT,
    SEEN_TRAINING,
    UNSEEN,
    config_novelty,
    counts,
    main,
    program_novelty,
    run_novelty,
    strict_novelty,
    strict_result,
)
from cobalt.data.procedural.generate import reference_solution
from cobalt.data.procedural.splits import build_splits, write_splits
from cobalt.data.program_form import normalize_program


def test_renamed_variables_functions_and_arguments_normalize_equal():
    a = "def f(xs, k):\n    total = sum(xs)\n    return total * k\nn = int(input())\nprint(f([n], 3))\n"
    b = "def solve(values, factor):\n    s = sum(values)\n    return s * factor\nq = int(input())\nprint(solve([q], 3))\n"
    assert normalize_program(a) == normalize_program(b)


def test_docstrings_comments_and_layout_are_irrelevant():
    a = '"""Read n, print n+1."""\nn = int(input())  # the number\nprint(n + 1)\n'
    b = "m=int( input() )\n\n\nprint(m+1)"
    assert normalize_program(a) == normalize_program(b)


def test_different_constants_normalize_different():
    assert normalize_program("n = int(input())\nprint(n + 1)") != normalize_program(
        "n = int(input())\nprint(n + 2)"
    )
    assert normalize_program("print(input()[::2])") != normalize_program("print(input()[::3])")


def test_builtins_and_roles_of_names_are_kept():
    # free names (builtins) are not renamed: len and sum are different programs
    assert normalize_program("a = input().split()\nprint(len(a))") != normalize_program(
        "a = input().split()\nprint(sum(a))"
    )
    # a - b and b - a, with a read first in both, are different programs
    read = "a, b = map(int, input().split())\n"
    assert normalize_program(read + "print(a - b)") != normalize_program(read + "print(b - a)")
    # but renaming both consistently is the same program
    assert normalize_program(read + "print(a - b)") == normalize_program(
        "x, y = map(int, input().split())\nprint(x - y)"
    )


def test_not_python_raises():
    with pytest.raises(SyntaxError):
        normalize_program("print(")


def test_program_novelty_sorts_by_sft_then_grpo():
    sft = ["n = int(input())\nprint(n * 2)"]
    grpo = [*sft, "n = int(input())\nprint(n * 3)"]
    evaluated = {
        "renamed-sft": "k = int(input())\nprint(k * 2)",
        "renamed-grpo": "k = int(input())\nprint(k * 3)",
        "new-constant": "k = int(input())\nprint(k * 4)",
    }
    novelty = program_novelty(evaluated, sft, grpo)
    assert novelty == {"renamed-sft": SEEN_SFT, "renamed-grpo": SEEN_GRPO, "new-constant": UNSEEN}
    assert counts(novelty) == {UNSEEN: 1, SEEN_SFT: 1, SEEN_GRPO: 1}


def test_generalize_profile_split_and_no_unseen_instance_matches_a_training_program():
    """Today's generalize configuration: 108 unseen, 142 seen in SFT, 50 seen only in GRPO (issue 41),
    and no unseen instance's program is a training program, by text or by normalized form."""
    result = config_novelty("generalize")
    assert counts(result["heldout"]) == {UNSEEN: 108, SEEN_SFT: 142, SEEN_GRPO: 50}
    assert counts(result["heldout_families"])[UNSEEN] == 60
    splits = build_splits({"train": 144, "dev": 72, "heldout": 300, "heldout_families": 60}, 0)
    train = [reference_solution(r["id"]) for r in splits["train"]]
    train_text, train_norm = set(train), {normalize_program(p) for p in train}
    sft_norm = {normalize_program(p) for p in train[:72]}
    for pid, kind in result["heldout"].items():
        norm = normalize_program(reference_solution(pid))
        if kind == UNSEEN:
            assert reference_solution(pid) not in train_text and norm not in train_norm, pid
        else:
            assert norm in (sft_norm if kind == SEEN_SFT else train_norm - sft_norm), pid


def test_run_novelty_reads_a_run_directory(tmp_path, capsys):
    proc = tmp_path / "data/procedural"
    write_splits(proc, {"train": 72, "dev": 0, "heldout": 72, "heldout_families": 6}, seed=0)
    subset = tmp_path / "data/warm_up_subset.jsonl"
    subset.write_text("".join(line for line in (proc / "train.jsonl").read_text().splitlines(True)[:36]))
    result = run_novelty(tmp_path)
    assert set(result) == {"heldout", "heldout_families"}
    seen = counts(result["heldout"])
    assert sum(seen.values()) == 72 and seen[SEEN_SFT] > 0
    assert main([str(tmp_path), "--ids", "--form_only"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[: out.rindex("}") + 1])["heldout"] == result["heldout"]


# ------------------------------------------------------------------------- by behaviour
ATTEMPT = "trajectories' attempt (wrong_operator mutant)"


def _record(tests: dict) -> dict:
    return {"test_cases": json.dumps(tests)}


MIN_OF_LINE = "xs = list(map(int, input().split()))\nprint(min(xs))\n"
MIN_TESTS = {"inputs": ["3 1 2\n", "5 9\n", "-4 0 -7\n"], "outputs": ["1\n", "5\n", "-7\n"]}


def _sandbox():
    from cobalt.serve.client import get_evaluator

    return get_evaluator("local")


def _solved(instances, programs):
    import asyncio

    return asyncio.run(exposure.solved_by_training(instances, programs, _sandbox()))


def test_a_planted_mutant_that_solves_a_heldout_instance_makes_it_seen_by_behaviour():
    """A list_max reference's max->min mutant, shown as a failed attempt, solves a list_min
    instance whose program no training program has: unseen by form, seen by behaviour."""
    list_max = "values = [int(w) for w in input().split()]\nprint(max(values))\n"
    mutant = exposure.TrainingProgram(ATTEMPT, "fam-list_max-000001", list_max.replace("max", "min"))
    reference = exposure.TrainingProgram(exposure.WARMUP, "fam-list_max-000001", list_max)
    other = _record({"inputs": ["1 2\n"], "outputs": ["3\n"]})  # solved by neither
    instances = {"fam-list_min-400001": _record(MIN_TESTS), "fam-add-400002": other}
    evaluated = {
        "fam-list_min-400001": MIN_OF_LINE,
        "fam-add-400002": "print(sum(map(int, input().split())))",
    }
    form = program_novelty(evaluated, [reference.source], [reference.source, mutant.source])
    assert form == {"fam-list_min-400001": UNSEEN, "fam-add-400002": UNSEEN}  # by form: both unseen
    solved = _solved(instances, [reference, mutant])
    assert solved == {"fam-list_min-400001": [mutant], "fam-add-400002": []}
    strict = strict_novelty(evaluated, form, solved, [reference.source, mutant.source])
    assert strict == {"fam-list_min-400001": SEEN_TRAINING, "fam-add-400002": UNSEEN}


def test_a_program_that_fails_one_later_test_does_not_solve_the_instance():
    first_only = exposure.TrainingProgram(
        exposure.CONTROL, "fam-x-000001", "input()\nprint(1)\n"
    )  # right on test 1 only
    assert _solved({"fam-list_min-400001": _record(MIN_TESTS)}, [first_only]) == {"fam-list_min-400001": []}


def test_labels_do_not_depend_on_the_order_of_the_training_inputs():
    """Two training programs of one normalized form (different origins) and one of another: every
    order gives the same solvers, named in the same order."""
    import itertools

    programs = [
        exposure.TrainingProgram(ATTEMPT, "fam-list_max-000002", MIN_OF_LINE),
        exposure.TrainingProgram(exposure.CONTROL, "fam-list_min-000001", MIN_OF_LINE.replace("xs", "ys")),
        exposure.TrainingProgram(
            exposure.WARMUP, "fam-list_min-000003", "print(min(map(int, input().split())))\n"
        ),
    ]
    instances = {"fam-list_min-400001": _record(MIN_TESTS)}
    results = [_solved(instances, list(order)) for order in itertools.permutations(programs)]
    assert all(r == results[0] for r in results)
    assert results[0]["fam-list_min-400001"] == [programs[2], programs[1], programs[0]]  # SFT targets first


def test_an_out_of_family_instance_solved_by_a_training_reference_is_reported(tmp_path, capsys):
    """square_sum is kept out of training, yet the sum_squares training reference (a warm-up and
    a control SFT target) passes every test of its first instance: that instance is seen by
    behaviour, its family is named as not held out, and so is the program."""
    proc = tmp_path / "data/procedural"
    write_splits(proc, {"train": 36, "dev": 0, "heldout": 0, "heldout_families": 6}, seed=0)
    result = strict_result(tmp_path)["heldout_families"]
    target, train_id = "fam-square_sum-600000", "fam-sum_squares-000000"
    assert {i for i, kind in result["strict"].items() if kind == SEEN_TRAINING} == {target}
    assert [(p.origin, p.instance) for p in result["solved"][target]] == [
        (exposure.WARMUP, train_id),
        (exposure.CONTROL, train_id),
    ]
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "not held out by behaviour (instances solved by a training program): square_sum 1 of 1" in out
    assert f"heldout_families {target}: solved by the warm-up SFT target of {train_id} (and 1 more)" in out
    assert (
        "heldout_families: 6 instances: unseen by form 6 (seen_sft 0, seen_grpo 0); unseen by behaviour 5"
        in out
    )
