"""No traceback for a user's mistake, at any entry point (issue 59): every command line that
tests/test_cli_style.py finds is run with a missing file, a wrong config name and a bad value,
where it takes one, and must refuse it (a non-zero exit) in words, without a Python traceback.

Each case names what the command needs besides the mistake, so that the mistake is what stops it:
none of them may start a cluster, an engine or a benchmark. A command that is still running after
``TIMEOUT_S`` took the mistake for valid input, which fails too."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_cli_style import command, entry_points

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 120
MISSING = "{tmp}/absent/input.jsonl"  # inside the case's scratch: a command that wrongly creates it
MISSING_DIR = "{tmp}/absent/dir"  # writes nowhere else
CONFIG = "no_such_config"
TRACEBACK = "Traceback (most recent call last)"

# {entry point: {mistake: argv}}; "{tmp}" is the case's scratch directory, "{file}" an existing
# empty file in it. A mistake a command cannot make (it reads no file, names no config) is absent.
QUICKSTART = {
    "missing file": ["--run-dir", "{tmp}/run", "--problems", MISSING, "--dry-run"],
    "wrong config": ["--run-dir", "{tmp}/run", "--profile", CONFIG, "--dry-run"],
    "bad value": ["--run-dir", "{tmp}/run", "--train-seed", "two", "--dry-run"],
}
PAPER = {
    "missing file": ["--profile", "multi_turn_qwen3_8b", "--taco", MISSING, "--lcb", MISSING, "--dry-run"],
    "wrong config": ["--profile", CONFIG, "--taco", "{file}", "--lcb", "{file}", "--dry-run"],
    "bad value": ["--profile", "multi_turn_qwen3_8b", "--taco", "{file}", "--lcb", "{file}", "--dry-run",
                  "--", "trainer.total_epochs=two"],
}  # fmt: skip
DESIGN = {
    "missing file": ["--report", "--root", MISSING_DIR],
    "wrong config": ["--config", CONFIG, "--plan"],
    "bad value": ["--config", "generalize_prereg", "--plan"],  # a run's profile, not a design
}
ENGINE_CLIENT = {  # the self-debugging and evaluation commands
    "missing file": ["-i", MISSING, "-o", "{tmp}/out.jsonl", "--model", "m", "--evaluator", "local"],
    "wrong config": ["-i", "{file}", "-o", "{tmp}/out.jsonl", "--model", "m", "--engine-config", CONFIG],
    "bad value": ["-i", "{file}", "-o", "{tmp}/out.jsonl", "--model", "m", "--concurrency", "two"],
}
VERL_PREPROC = {
    "missing file": ["--local-dir", "{tmp}/out", "--train-data-file", MISSING],
    "bad value": ["--local-dir", "{file}"],  # a file where a directory is wanted
}

CASES: dict[str, dict[str, list[str]]] = {
    "bench/bench_ci_load.py": {
        "missing file": ["--per-test", f"{MISSING_DIR}/table.json", "--", "true"],
        "bad value": ["--interval", "two", "--", "true"],
    },
    "bench/bench_checks_side_by_side.py": {"bad value": ["--out", "{file}"]},
    "bench/bench_cpu_logprobs.py": {"bad value": ["--tokens", "two"]},
    "bench/bench_engine_batch.py": {
        "missing file": ["--model", MISSING_DIR],
        "bad value": ["--max-tokens", "two"],
    },
    "bench/bench_idle_cluster.py": {"bad value": ["--seconds", "two"]},
    "bench/bench_judging.py": {"missing file": ["--apps", MISSING_DIR]},
    "bench/bench_load_verdicts.py": {"missing file": ["--apps", MISSING_DIR], "bad value": ["--load", "two"]},
    "bench/bench_methods.py": {
        "wrong config": ["--out", "{tmp}/out", "--profile", "huge"],
        "bad value": ["--out", "{tmp}/out", "--methods", "ppo"],
    },
    "bench/bench_multi_turn.py": {
        "missing file": ["--model", MISSING_DIR],
        "bad value": ["--problems", "two"],
    },
    "bench/bench_overlap.py": {"missing file": ["--train", MISSING], "bad value": ["--words", "two"]},
    "bench/bench_quickstart_hugepages.py": {
        "wrong config": ["--profile", CONFIG, "--out", "{tmp}/out"],
        "bad value": ["--repeats", "two"],
    },
    "bench/bench_rehearsal.py": {
        "wrong config": ["--profiles", CONFIG],
        "bad value": ["--workdir", "{file}"],
    },
    "bench/bench_rehearsal_malloc.py": {
        "missing file": ["--rehearse-prompts", MISSING, "--workdir", "{tmp}/w"],
        "wrong config": ["--profile", CONFIG, "--workdir", "{tmp}/w"],
        "bad value": ["--variants", "nope", "--workdir", "{tmp}/w"],
    },
    "bench/bench_repetition.py": {"bad value": ["--chars", "two"]},
    "bench/bench_reward_manager.py": {
        "wrong config": ["--evaluator-config", CONFIG],
        "bad value": ["--responses", "two"],
    },
    "bench/bench_sandbox.py": {"missing file": ["--apps", MISSING_DIR], "bad value": ["--programs", "two"]},
    "bench/bench_update_dtype.py": {"missing file": ["--model", MISSING_DIR], "bad value": ["--rows", "two"]},
    "bench/calibrate_learning_check.py": {
        "missing file": ["--out", MISSING_DIR, "--summary-only"],
        "bad value": ["--out", "{tmp}/out", "--seeds", "one"],
    },
    "cobalt/data/demo.py": {
        "wrong config": ["--out", "{tmp}/demo", "--evaluator", "remote"],
        "bad value": ["--out", "{tmp}/demo", "--dev-ratio", "1.5"],
    },
    "cobalt/data/embedded/__main__.py": {
        "wrong config": ["--out", "{tmp}/p.jsonl", "--set", "hard"],
        "bad value": ["--out", "{file}"],  # exists, and no --overwrite
    },
    "cobalt/data/fetch.py": {"missing file": ["--from", MISSING_DIR, "--out", "{tmp}/data"]},
    "cobalt/data/novelty.py": {"missing file": [MISSING_DIR], "wrong config": ["--config", CONFIG, "{tmp}"]},
    "cobalt/data/procedural/__main__.py": {
        "bad value": ["--out", "{tmp}/p", "--train", "two", "--dev", "1", "--heldout", "1"],
    },
    "cobalt/data/procedural/offline.py": {
        "missing file": ["--problems", MISSING, "--out", "{tmp}/o.jsonl", "--evaluator", "local"],
        "bad value": [
            "--problems",
            "{file}",
            "--out",
            "{tmp}/o.jsonl",
            "--p-fix",
            "1.5",
            "--evaluator",
            "local",
        ],
    },
    "cobalt/design.py": DESIGN,
    "cobalt/eval/repair_run.py": ENGINE_CLIENT,
    "cobalt/eval/significance.py": {
        "missing file": ["--better", MISSING, "--worse", MISSING],
        "bad value": ["--better", "{file}", "--worse", "{file}", "--alpha", "two"],
    },
    "cobalt/eval/training_curves.py": {"missing file": [MISSING, "-o", "{tmp}/c.png"]},
    "cobalt/quickstart.py": QUICKSTART,
    "cobalt/recipes/design/design.py": DESIGN,
    "cobalt/recipes/paper/reproduce.py": PAPER,
    "cobalt/recipes/quickstart/run.py": QUICKSTART,
    "cobalt/reproduce.py": PAPER,
    "cobalt/serve/cluster.py": {
        "missing file": ["stop", "--temp-dir", MISSING_DIR],
        "bad value": ["start", "--nodes", "two"],
    },
    "cobalt/train/augment.py": {
        "missing file": [
            "--base",
            MISSING,
            "--perturbed",
            MISSING,
            "--ratio",
            "0.25",
            "--out",
            "{tmp}/a.jsonl",
        ],
        "bad value": [
            "--base",
            "{file}",
            "--perturbed",
            "{file}",
            "--ratio",
            "1.5",
            "--out",
            "{tmp}/a.jsonl",
        ],
    },
    "cobalt/train/launch.py": {
        "missing file": ["--profile", "cpu_smoke", "--dry-run", "--rehearse", "--rehearse-prompts", MISSING],
        "wrong config": ["--profile", CONFIG, "--dry-run"],
        "bad value": ["--profile", "cpu_smoke", "--dry-run", "data.train_batch_size=0"],
    },
    "cobalt/train/learning_check.py": {"missing file": [MISSING], "bad value": ["{file}", "--window", "two"]},
    "cobalt/train/sft.py": {
        "missing file": ["--model", MISSING_DIR, "--problems", MISSING, "--out", "{tmp}/m"],
        "bad value": ["--model", MISSING_DIR, "--problems", MISSING, "--out", "{tmp}/m", "--epochs", "two"],
    },
    "cobalt/train/tiny_policy.py": {
        "missing file": ["warm", "--data", MISSING, "--out", "{tmp}/p"],
        "bad value": ["random", "--out", "{tmp}/p", "--layers", "two"],
    },
    "preproc/preproc_lcb_test6.py": {
        "missing file": ["--input-file", MISSING, "--output-file", "{tmp}/o.jsonl"],
        "bad value": ["--input-file", "{file}", "--output-file", "{tmp}/o.jsonl", "--max-hidden", "two"],
    },
    "preproc/preproc_taco.py": {
        "missing file": ["--input-file", MISSING, "--output-dir", "{tmp}/o", "--evaluator", "none"],
        "bad value": ["--input-file", MISSING, "--output-dir", "{tmp}/o", "--dev-ratio", "1.5"],
    },
    "preproc/process_multi_turn_taco.py": {
        "missing file": ["--input-file", MISSING, "--output-file", "{tmp}/o.jsonl"],
        "bad value": ["--input-file", "{file}", "--output-file", "{tmp}/o.jsonl", "--num-turns", "two"],
    },
    "preproc/run_perturbation.py": {
        "missing file": ["--input-file", MISSING, "--output-file", "{tmp}/o.jsonl"],
        "bad value": ["--input-file", "{file}", "--output-file", "{tmp}/o.jsonl", "--seed", "two"],
    },
    "preproc/verl_preproc_multi_turn.py": VERL_PREPROC,
    "preproc/verl_preproc_online.py": VERL_PREPROC,
    "preproc/verl_preproc_single_turn.py": VERL_PREPROC,
    "remote_reward_server.py": {"wrong config": ["--config", CONFIG]},
    "scripts/eval_multi_turn.py": {
        "missing file": ["-i", MISSING, "-o", "{tmp}/e.jsonl", "--evaluator", "local"],
        "wrong config": ["-i", "{file}", "-o", "{tmp}/e.jsonl", "--evaluator-config", CONFIG],
        "bad value": ["-i", "{file}", "-o", "{tmp}/e.jsonl", "--concurrency", "two"],
    },
    "scripts/extract_turn_level_errors.py": {
        "missing file": ["-d", MISSING, "-i", MISSING, "-o", "{tmp}/o.jsonl"],
    },
    "scripts/run_llm_judge.py": {
        "missing file": ["-i", MISSING, "-o", "{tmp}/j.jsonl", "--model", "m"],
        "bad value": ["-i", "{file}", "-o", "{tmp}/j.jsonl", "--model", "m", "--concurrency", "two"],
    },
    "scripts/run_multi_turn.py": ENGINE_CLIENT,
    "scripts/run_single_turn.py": ENGINE_CLIENT,
}


def test_every_entry_point_has_its_cases():
    assert sorted(CASES) == entry_points()
    assert all(cases for cases in CASES.values())


def sweep_cases():
    return [pytest.param(path, mistake, id=f"{path}:{mistake}") for path in CASES for mistake in CASES[path]]


@pytest.mark.parametrize("path, mistake", sweep_cases())
def test_a_users_mistake_is_refused_in_words(path, mistake, tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    argv = [
        a.replace("{tmp}", str(tmp_path)).replace("{file}", str(tmp_path / "empty.jsonl"))
        for a in CASES[path][mistake]
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env |= {"HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    try:
        done = subprocess.run([*command(path), *argv], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"{path} {argv}: still running after {TIMEOUT_S} s: the mistake was taken for valid input"
        )
    output = done.stdout + done.stderr
    assert TRACEBACK not in output, f"{path} {argv}:\n{output[-3000:]}"
    assert done.returncode != 0, f"{path} {argv} exited 0:\n{output[-2000:]}"
    assert done.stderr.strip() or done.stdout.strip(), f"{path} {argv}: refused without a word"
