"""Program novelty: normalization (names renamed, constants kept) and the unseen / seen split."""

import json

import pytest

from cobalt.data.novelty import (
    SEEN_GRPO,
    SEEN_SFT,
    UNSEEN,
    config_novelty,
    counts,
    main,
    normalize_program,
    program_novelty,
    run_novelty,
)
from cobalt.data.procedural.generate import reference_solution
from cobalt.data.procedural.splits import build_splits, write_splits


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
    assert main([str(tmp_path), "--ids"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[: out.rindex("}") + 1])["heldout"] == result["heldout"]
