"""The easy embedded set (``easy_problems.json``, the learn profile's problems): its shape, the
sandbox verdicts of every program, and the learn profile's disjoint train / held-out split."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import pytest

from cobalt.common.jsonl import load_jsonl
from cobalt.data import embedded

PROBLEMS = embedded.load_problems(embedded.EASY_PROBLEMS_PATH)
BY_ID = {p["id"]: p for p in PROBLEMS}


def test_easy_set_has_the_required_shape_and_its_own_ids():
    assert 60 <= len(PROBLEMS) <= 80 and len(BY_ID) == len(PROBLEMS)
    assert {p["difficulty"] for p in PROBLEMS} == {"EASY"}
    assert all(pid.startswith("easy-") for pid in BY_ID)
    assert not set(BY_ID) & {p["id"] for p in embedded.load_problems()}  # the warm-up looks up both
    assert all(p["solutions"] and p["wrong_solutions"] for p in PROBLEMS)
    for p in PROBLEMS:
        example = (
            f"\nSample Input 1\n\n{p['public_tests']['inputs'][0].rstrip()}\n\n"
            f"Sample Output 1\n\n{p['public_tests']['outputs'][0].rstrip()}\n"
        )
        assert p["question"].endswith(example), p["id"]


@pytest.fixture(scope="module")
def verdicts():
    """``(problem id, "solution"|"wrong", index) -> evaluate() result``, two programs at a time."""
    from cobalt.sandbox import evaluate
    from cobalt.sandbox.config import default_config

    config = dataclasses.replace(default_config(), test_concurrency=1)
    jobs = {}
    for p in PROBLEMS:
        jobs.update({(p["id"], "solution", i): code for i, code in enumerate(p["solutions"])})
        jobs.update({(p["id"], "wrong", i): w["code"] for i, w in enumerate(p["wrong_solutions"])})
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            key: pool.submit(evaluate, code, embedded.all_tests(BY_ID[key[0]]), config)
            for key, code in jobs.items()
        }
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.parametrize("pid", sorted(BY_ID))
def test_easy_solutions_pass_and_wrong_solutions_fail_in_the_sandbox(verdicts, pid):
    problem = BY_ID[pid]
    total = len(embedded.all_tests(problem)["inputs"])
    for i in range(len(problem["solutions"])):
        result = verdicts[(pid, "solution", i)]
        failing = [fb for ok, fb in zip(result["passing"], result["feedback"]) if not ok]
        assert len(result["passing"]) == total and not failing, failing[:1]
    for i, wrong in enumerate(problem["wrong_solutions"]):
        result = verdicts[(pid, "wrong", i)]
        assert len(result["passing"]) == total
        assert not all(result["passing"]), f"wrong solution {i} ({wrong['bug']}) passes every test"


def test_learn_profile_splits_the_easy_set_into_disjoint_train_and_heldout(tmp_path):
    """The quickstart's split (seeded shuffle; the first N train, the last M held out) on the learn
    profile: disjoint, every problem from the easy set."""
    from cobalt.common.config import from_dict, load_config
    from cobalt.recipes.quickstart.run import QuickstartConfig, Run, split_problems

    cfg = from_dict(QuickstartConfig, load_config("learn"), source="configs/learn")
    assert cfg.problems == "embedded_easy"
    assert cfg.train_problems + cfg.heldout_problems <= len(PROBLEMS)
    train, heldout = split_problems(Run(tmp_path, cfg, "learn"))
    train_ids = [r["id"] for r in load_jsonl(train)]
    heldout_ids = [r["id"] for r in load_jsonl(heldout)]
    assert len(train_ids) == cfg.train_problems and len(heldout_ids) == cfg.heldout_problems
    assert not set(train_ids) & set(heldout_ids)
    assert set(train_ids) | set(heldout_ids) <= set(BY_ID)


def test_cli_writes_the_easy_set_under_its_own_names(tmp_path):
    from cobalt.data.embedded.__main__ import main

    assert main(["--out", str(tmp_path), "--set", "easy"]) == 0
    lcb = load_jsonl(tmp_path / "lcb_test6_embedded_easy.jsonl")
    assert [r["question_id"] for r in lcb] == list(BY_ID)
    assert len(load_jsonl(tmp_path / "taco_embedded_easy.jsonl")) == len(PROBLEMS)
