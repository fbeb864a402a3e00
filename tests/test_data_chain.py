"""The whole chain on the embedded set: raw → problems → synthetic trajectories → bandit prompts
→ parquet → veRL's RLHFDataset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_data_verl import load_with_verl

from cobalt.common.jsonl import load_jsonl
from cobalt.data.demo import build_demo
from cobalt.data.synthetic import SyntheticOptions

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 8
DEMO_SETTINGS = {
    "limit": LIMIT,
    "dev_ratio": 0.25,
    "synthetic": SyntheticOptions(num_samples=16, num_turns=2, seed=3),
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory, tiny_tokenizer_dir):
    out = tmp_path_factory.mktemp("demo")
    return out, build_demo(out, model_name=tiny_tokenizer_dir, **DEMO_SETTINGS)


def test_chain_counts_are_consistent(demo):
    out, counts = demo
    train, dev = load_jsonl(out / "problems/train.jsonl"), load_jsonl(out / "problems/dev.jsonl")
    assert len(train) + len(dev) == LIMIT and len(dev) == 2
    assert {p["id"] for p in train}.isdisjoint({p["id"] for p in dev})
    bandit_train = load_jsonl(out / "bandit/train.jsonl")
    bandit_test = load_jsonl(out / "bandit/test.jsonl")
    assert counts["train"] == len(bandit_train) == pq.read_metadata(out / "train.parquet").num_rows
    assert counts["test"] == len(bandit_test) == pq.read_metadata(out / "test.parquet").num_rows
    assert {p["example_id"] for p in bandit_train} <= {p["id"] for p in train}
    for pid in {p["example_id"] for p in bandit_test}:
        mine = [p for p in bandit_test if p["example_id"] == pid]
        assert len(mine) <= 4 and all(len(p["conversation"]) <= 8 for p in mine)
    assert counts["single_train"] == len(train) and counts["single_test"] == len(dev)


def test_chain_prompts_match_their_trajectories(demo):
    out, _ = demo
    trajectories = {r["id"]: r for r in load_jsonl(out / "trajectories/train.jsonl")}
    for prompt in load_jsonl(out / "bandit/train.jsonl"):
        traj = trajectories[prompt["example_id"]]
        conv = prompt["conversation"]
        assert any(c[: len(conv)] == conv for c in traj["conversations"])
        assert prompt["test_cases"] == traj["test_cases"]
        assert 0.0 <= prompt["prev_best_pass_rate"] <= 1.0


def test_chain_parquet_loads_in_rlhf_dataset(demo, tiny_tokenizer_dir, tmp_path):
    out, counts = demo
    for split in ("train", "test"):
        ds = load_with_verl(out / f"{split}.parquet", tiny_tokenizer_dir, tmp_path / split)
        assert len(ds) == counts[split]
        item = ds[0]
        assert item["data_source"] == "code_taco_verified" and item["ability"] == "code"
        assert item["raw_prompt"] == item["extra_info"]["conversation"]
        assert item["extra_info"]["split"] == split
        assert json.loads(item["reward_model"]["ground_truth"])["inputs"]
    single = load_with_verl(out / "single_turn/train.parquet", tiny_tokenizer_dir, tmp_path / "s")
    assert len(single[0]["raw_prompt"]) == 2


def test_chain_refuses_to_overwrite(demo, tiny_tokenizer_dir):
    out, _ = demo
    with pytest.raises(FileExistsError):
        build_demo(out, model_name=tiny_tokenizer_dir, limit=2)


def test_taco_cli_on_the_embedded_raw_file(tmp_path):
    from cobalt.data.embedded import load_problems, write_raw

    write_raw(tmp_path / "raw")
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "preproc/preproc_taco.py"),
            "--input_file",
            str(tmp_path / "raw/taco_embedded.jsonl"),
            "--output_dir",
            str(tmp_path / "out"),
            "--evaluator",
            "local",
            "--drop-unsolved",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    n = len(load_problems())
    assert f"read {n} raw problems, kept {n}" in proc.stdout
    assert "0 unsolved (0 dropped)" in proc.stdout
    train = load_jsonl(tmp_path / "out/taco_verified_filtered_train.jsonl")
    dev = load_jsonl(tmp_path / "out/taco_verified_filtered_dev.jsonl")
    assert len(train) + len(dev) == n and len(dev) == round(n * 0.1)


def test_an_interrupted_demo_build_finishes_on_a_rerun_of_the_same_command(tmp_path, tiny_tokenizer_dir):
    import os

    out = tmp_path / "demo"
    cmd = ["bash", str(ROOT / "scripts/build_demo_data.sh"), "--out", out, "--model_name", tiny_tokenizer_dir]
    cmd += ["--limit", "4", "--num_samples", "2", "--num_turns", "1", "--dev_ratio", "0.5"]
    env = dict(os.environ, PYTHON=sys.executable)

    def build():
        proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    build()
    single_test = out / "single_turn/test.parquet"
    finished = single_test.read_bytes()
    trajectories = (out / "trajectories/train.jsonl").stat().st_mtime_ns
    single_test.unlink()  # killed during the last stage (outputs are written atomically)
    assert "redid single_turn" in build()
    assert single_test.read_bytes() == finished
    assert (out / "trajectories/train.jsonl").stat().st_mtime_ns == trajectories  # not redone
    assert "already complete" in build()
    assert single_test.read_bytes() == finished


def test_a_demo_rerun_keeps_changed_outputs_and_refuses_other_settings(demo, tiny_tokenizer_dir, capsys):
    out, counts = demo
    bandit_test = out / "bandit/test.jsonl"
    original = bandit_test.read_text()
    bandit_test.write_text(original.splitlines()[0] + "\n")  # a finished output edited by hand
    again = build_demo(out, model_name=tiny_tokenizer_dir, **DEMO_SETTINGS)
    assert "kept as" in capsys.readouterr().out and again == counts
    assert (out / "bandit/test.jsonl.changed").read_text() == original.splitlines()[0] + "\n"
    assert bandit_test.read_text() == original
    with pytest.raises(FileExistsError, match="other settings"):
        build_demo(out, model_name=tiny_tokenizer_dir, limit=LIMIT)


def test_a_build_saved_before_a_synthetic_option_existed_is_still_complete(demo, tiny_tokenizer_dir, capsys):
    """A build_state.json written before ``turn0_correct_mix`` / ``change_wrong`` existed: the same
    command finds the build complete (the new options' defaults leave the data unchanged)."""
    out, counts = demo
    state_file = out / "build_state.json"
    state = json.loads(state_file.read_text())
    for option in ("turn0_correct_mix", "change_wrong"):
        del state["settings"]["synthetic"][option]
    state_file.write_text(json.dumps(state))
    assert build_demo(out, model_name=tiny_tokenizer_dir, **DEMO_SETTINGS) == counts
    assert "already complete" in capsys.readouterr().out
