"""The procedural problem families (cobalt/data/procedural): deterministic instances, records of
the pipeline's shape, reference solutions that pass (and wrong ones that fail) in the sandbox,
disjoint splits with whole families held out, and the command line."""

from __future__ import annotations

import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from cobalt.common.jsonl import load_jsonl
from cobalt.common.prompts import build_instruction
from cobalt.common.testcases import parse_test_cases
from cobalt.data.embedded import EASY_PROBLEMS_PATH, all_tests, problem_records
from cobalt.data.procedural import (
    FAMILIES,
    HELDOUT_FAMILIES,
    IN_FAMILIES,
    parse_id,
    problem,
    record,
    reference_solution,
)
from cobalt.data.procedural.__main__ import main as cli_main
from cobalt.data.procedural.splits import SPLITS, build_splits, check_disjoint

SEEDS = (0, 1, 2)  # per family, in the sandbox
COUNTS = {"train": 144, "dev": 36, "heldout": 36, "heldout_families": 24}


def parsed(rec: dict, field: str) -> dict:
    return parse_test_cases(rec[field], field=field)


# ------------------------------------------------------------------------------ the families
def test_there_are_enough_families_of_every_kind_and_six_are_held_out():
    assert len(FAMILIES) >= 30
    assert {f.kind for f in FAMILIES.values()} == {"nums", "list", "text"}
    assert len(HELDOUT_FAMILIES) == 6 and set(HELDOUT_FAMILIES) <= set(FAMILIES)
    assert not set(HELDOUT_FAMILIES) & set(IN_FAMILIES)
    assert set(HELDOUT_FAMILIES) | set(IN_FAMILIES) == set(FAMILIES)
    assert {FAMILIES[n].kind for n in HELDOUT_FAMILIES} == {"nums", "list", "text"}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_an_instance_is_a_function_of_its_seed(name):
    assert problem(name, 5) == problem(name, 5)
    assert record(name, 5) == record(name, 5)
    a, b = record(name, 5), record(name, 6)
    assert a["id"] == f"fam-{name}-000005" and parse_id(a["id"]) == (name, 5)
    assert a["test_cases"] != b["test_cases"] and a["question"] != b["question"]
    assert reference_solution(a["id"]) == problem(name, 5)["solutions"][0]


def test_records_have_the_fields_and_formats_of_the_embedded_sets_records():
    embedded = problem_records(path=EASY_PROBLEMS_PATH)[0]
    for name in FAMILIES:
        rec = record(name, 3)
        assert set(rec) == set(embedded), name
        assert {k: type(v) for k, v in rec.items()} == {k: type(v) for k, v in embedded.items()}, name
        public, hidden = parsed(rec, "public_test_cases"), parsed(rec, "hidden_test_cases")
        combined = parsed(rec, "test_cases")
        assert combined["inputs"] == public["inputs"] + hidden["inputs"]
        assert combined["outputs"] == public["outputs"] + hidden["outputs"]
        assert len(public["inputs"]) == 3 and len(combined["inputs"]) >= 8
        assert len(set(combined["inputs"])) == len(combined["inputs"])  # no repeated test
        assert rec["instruction"] == build_instruction(rec["question"])
        assert rec["difficulty"] == "easy" and rec["contest_id"] == "cobalt-procedural"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_statements_are_short_show_the_first_public_test_and_programs_are_short(name):
    for seed in SEEDS:
        p, rec = problem(name, seed), record(name, seed)
        example = (
            f"Example input:\n{p['public_tests']['inputs'][0].rstrip()}\n\n"
            f"Example output:\n{p['public_tests']['outputs'][0].rstrip()}"
        )
        assert rec["question"].endswith(example)
        assert len(rec["question"].split("\n\nExample input:")[0]) < 450
        assert len(p["solutions"][0]) < 200 and len(p["solutions"][0].splitlines()) <= 6


def test_instances_vary_wording_constants_and_input_layout():
    layouts = {problem("list_sum", s)["format"] for s in range(40)}
    assert layouts == {"count_line", "one_line", "count_lines"}
    assert len({problem("add_two", s)["format"] for s in range(40)}) == 3  # line, lines, cases
    openings = {record("list_sum", s)["question"].split("\n")[0] for s in range(40)}
    assert len(openings) >= 2
    assert len({problem("product_mod", s)["solutions"][0] for s in range(40)}) >= 6  # constants


def test_problem_files_load_as_the_pipeline_reads_them(tmp_path):
    from cobalt.common.jsonl import write_jsonl
    from cobalt.data.verl_rows import single_turn_row
    from cobalt.infer.records import load_problems

    path = tmp_path / "problems.jsonl"
    write_jsonl(path, [record(name, 1) for name in FAMILIES])
    loaded = load_problems(str(path))
    assert [r["id"] for r in loaded] == [f"fam-{name}-000001" for name in FAMILIES]
    row = single_turn_row(loaded[0], "train")
    assert row["reward_model"]["ground_truth"] == loaded[0]["test_cases"]


def test_single_turn_inference_runs_on_procedural_problems_unchanged(tmp_path):
    """scripts/run_single_turn.py on a file of procedural records, with a scripted model that
    answers the reference solution (or, for one problem, its wrong solution)."""
    import subprocess
    from pathlib import Path

    from infer_fixtures import answer
    from openai_stub import ScriptedEndpoint

    from cobalt.common.jsonl import write_jsonl

    ids = ["fam-list_sum-000004", "fam-reverse_words-000004", "fam-divisible-000004"]
    programs = {record(*parse_id(pid))["instruction"]: reference_solution(pid) for pid in ids[:2]}
    wrong = problem(*parse_id(ids[2]))
    programs[record(*parse_id(ids[2]))["instruction"]] = wrong["wrong_solutions"][0]["code"]
    problems, single = tmp_path / "problems.jsonl", tmp_path / "single.jsonl"
    write_jsonl(problems, [record(*parse_id(pid)) for pid in ids])
    script = Path(__file__).resolve().parents[1] / "scripts/run_single_turn.py"
    with ScriptedEndpoint(lambda messages: answer(programs.get(messages[-1]["content"], "print(0)"))) as api:
        model = ["--engine", "litellm", "--model", "openai/stub", "--api_base", api, "--max_tokens", "16"]
        args = [
            str(script),
            "-i",
            str(problems),
            "-o",
            str(single),
            "-n",
            "2",
            "--evaluator",
            "local",
            *model,
        ]
        done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    passed = {r["id"]: [all(x["passing"]) for x in r["exec_results"]] for r in load_jsonl(single)}
    assert passed == {ids[0]: [True, True], ids[1]: [True, True], ids[2]: [False, False]}


# ----------------------------------------------------------------------------- the sandbox
@pytest.fixture(scope="module")
def verdicts():
    """``(family, seed, "reference"|"wrong") -> evaluate() result``: the reference solution on all
    tests, the family's wrong solution on the hidden tests; two programs at a time."""
    from cobalt.sandbox import evaluate
    from cobalt.sandbox.config import default_config

    config = dataclasses.replace(default_config(), test_concurrency=1)
    jobs = {}
    for name in FAMILIES:
        for seed in SEEDS:
            p = problem(name, seed)
            jobs[(name, seed, "reference")] = (p["solutions"][0], all_tests(p))
            jobs[(name, seed, "wrong")] = (p["wrong_solutions"][0]["code"], p["hidden_tests"])
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {key: pool.submit(evaluate, code, tests, config) for key, (code, tests) in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_reference_solution_passes_its_public_and_hidden_tests_in_the_sandbox(verdicts, name):
    for seed in SEEDS:
        result = verdicts[(name, seed, "reference")]
        failing = [fb for ok, fb in zip(result["passing"], result["feedback"]) if not ok]
        assert len(result["passing"]) == len(all_tests(problem(name, seed))["inputs"])
        assert not failing, (seed, failing[:1])


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_wrong_solution_fails_the_hidden_tests_in_the_sandbox(verdicts, name):
    for seed in SEEDS:
        result = verdicts[(name, seed, "wrong")]
        assert not all(result["passing"]), (seed, problem(name, seed)["wrong_solutions"][0]["code"])


def test_expected_outputs_that_disagree_with_the_reference_source_are_caught(monkeypatch):
    """The generator's outputs come from ``fn``, the program from ``expr``: a family whose two
    implementations disagree yields instances its own reference solution fails."""
    from cobalt.sandbox import evaluate

    broken = dataclasses.replace(FAMILIES["list_sum"], fn=lambda a, c: sum(a) + (len(a) > 3))
    monkeypatch.setitem(FAMILIES, "list_sum", broken)
    p = problem("list_sum", 0)
    result = evaluate(p["solutions"][0], p["hidden_tests"])
    assert not all(result["passing"])


# ---------------------------------------------------------------------------------- splits
@pytest.fixture(scope="module")
def splits():
    return build_splits(COUNTS, seed=0)


def test_splits_have_the_counts_asked_for_and_are_deterministic(splits):
    assert {s: len(r) for s, r in splits.items()} == COUNTS
    assert build_splits({"dev": 36}, seed=0)["dev"] == build_splits({"dev": 36}, seed=0)["dev"]
    assert build_splits({"dev": 36}, seed=1)["dev"][0]["id"] == "fam-add_two-1200000"


def test_splits_are_disjoint_by_seed_statement_and_tests(splits):
    check_disjoint(splits)
    for field in ("question", "test_cases", "hidden_test_cases", "public_test_cases"):
        seen = {}
        for split, records in splits.items():
            for r in records:
                assert seen.setdefault(r[field], split) == split, (field, r["id"])
    seeds = {s: {parse_id(r["id"])[1] for r in records} for s, records in splits.items()}
    for i, a in enumerate(SPLITS):
        for b in SPLITS[i + 1 :]:
            assert not seeds[a] & seeds[b]


def test_held_out_families_appear_only_in_their_own_file(splits):
    for split in ("train", "dev", "heldout"):
        families = {parse_id(r["id"])[0] for r in splits[split]}
        assert not families & set(HELDOUT_FAMILIES), split
    assert {parse_id(r["id"])[0] for r in splits["train"]} == set(IN_FAMILIES)  # every one, balanced
    assert {parse_id(r["id"])[0] for r in splits["heldout_families"]} == set(HELDOUT_FAMILIES)


def test_the_disjointness_check_catches_a_leak(splits):
    leaked = {**splits, "dev": [*splits["dev"], splits["train"][0]]}
    with pytest.raises(ValueError, match="same id"):
        check_disjoint(leaked)
    same_text = dict(splits["heldout"][0], id="fam-add_two-400999", question=splits["train"][0]["question"])
    with pytest.raises(ValueError, match="same question"):
        check_disjoint({**splits, "heldout": [same_text]})
    with pytest.raises(ValueError, match="does not belong"):
        moved, *rest = splits["heldout_families"]
        check_disjoint({**splits, "train": [*splits["train"], moved], "heldout_families": rest})


# ------------------------------------------------------------------------------------- CLI
def test_cli_writes_the_files_and_refuses_to_overwrite_them(tmp_path, capsys):
    from cobalt.infer.records import load_problems

    out = tmp_path / "fam"
    args = ["--out", str(out), "--train", "40", "--dev", "8", "--heldout", "8", "--heldout_families", "6"]
    assert cli_main(args) == 0
    counts = {s: len(load_problems(str(out / f"{s}.jsonl"))) for s in SPLITS}
    assert counts == {"train": 40, "dev": 8, "heldout": 8, "heldout_families": 6}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["heldout_families"] == list(HELDOUT_FAMILIES) and manifest["counts"] == counts
    solutions = load_jsonl(out / "solutions.jsonl")  # what the SFT warm-up's --solutions reads
    assert len(solutions) == sum(counts.values())
    assert all(s["solutions"] == [reference_solution(s["id"])] for s in solutions)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    assert cli_main([*args[:3], "50", *args[4:], "--seed", "3"]) == 1
    assert "already exist" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing touched

    assert cli_main([*args, "--seed", "3", "--overwrite"]) == 0
    assert load_jsonl(out / "train.jsonl")[0]["id"] == "fam-add_two-3000000"


def test_cli_rejects_bad_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["--out", str(tmp_path), "--train", "-1", "--dev", "1", "--heldout", "1"])
    assert exit_info.value.code == 2 and "expected a count" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["--help"])
    assert exit_info.value.code == 0 and "heldout_families" in capsys.readouterr().out


def test_the_families_held_out_can_be_named_and_the_others_train(tmp_path, capsys):
    from cobalt.infer.records import load_problems

    names = "digit_sum,sum_to_n,max_minus_min,running_sum,word_count,acronym"
    out = tmp_path / "fam"
    args = ["--out", str(out), "--train", "72", "--dev", "0", "--heldout", "36", "--heldout-families", "12"]
    assert cli_main([*args, "--heldout-family-names", names]) == 0
    held = {parse_id(r["id"])[0] for r in load_problems(str(out / "heldout_families.jsonl"))}
    trained = {parse_id(r["id"])[0] for r in load_problems(str(out / "train.jsonl"))}
    assert held == set(names.split(",")) and not held & trained
    assert {"min_three", "square_sum"} <= trained  # the default's held-out families now train
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["heldout_families"] == names.split(",") and set(manifest["families"]) == trained
    splits = {s: load_jsonl(out / f"{s}.jsonl") for s in ("train", "heldout", "heldout_families")}
    check_disjoint(splits, names.split(","))
    with pytest.raises(ValueError, match="does not belong in"):
        check_disjoint(splits)  # by the default's families, the named ones are misplaced

    with pytest.raises(SystemExit):
        cli_main([*args, "--heldout-family-names", "acronym,nope", "--overwrite"])
    assert "held-out families: unknown nope" in capsys.readouterr().err
