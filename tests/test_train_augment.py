"""Perturbed-trajectory augmentation: the mixing ratio, the marks, the true tests kept."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cobalt.train.augment import main, mix, perturbed_count


def rows(n: int, tag: str) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "data_source": "code_taco_verified",
                "prompt": [{"role": "user", "content": f"{tag} {i}"}],
                "ability": "code",
                "reward_model": {
                    "style": "rule",
                    "ground_truth": json.dumps({"inputs": [f"{tag}{i}"], "outputs": ["true"]}),
                },
                "extra_info": {"split": "train", "index": i},
            }
            for i in range(n)
        ]
    )


def test_ratio_is_the_perturbed_share_of_the_output():
    assert perturbed_count(75, 100, 0.25) == 25
    assert perturbed_count(75, 10, 0.25) == 10  # never more than there are
    assert perturbed_count(75, 100, 0.0) == 0
    with pytest.raises(ValueError):
        perturbed_count(75, 100, 1.0)


def test_mix_marks_rows_keeps_true_tests_and_is_seeded():
    base, perturbed = rows(30, "base"), rows(40, "pert")
    mixed = mix(base, perturbed, ratio=0.25)
    flags = [info["perturbed"] for info in mixed["extra_info"]]
    assert len(mixed) == 40 and sum(flags) == 10
    by_prompt = {
        r["prompt"][0]["content"]: r["reward_model"]["ground_truth"] for _, r in perturbed.iterrows()
    }
    for _, row in mixed[pd.Series(flags)].iterrows():
        assert row["reward_model"]["ground_truth"] == by_prompt[row["prompt"][0]["content"]]
    assert mix(base, perturbed, 0.25).equals(mixed) and not mix(base, perturbed, 0.25, seed=1).equals(mixed)


def test_cli_writes_parquet(tmp_path, capsys):
    rows(6, "base").to_parquet(tmp_path / "base.parquet")
    rows(6, "pert").to_parquet(tmp_path / "pert.parquet")
    main(
        [
            "--base",
            str(tmp_path / "base.parquet"),
            "--perturbed",
            str(tmp_path / "pert.parquet"),
            "--ratio",
            "0.5",
            "--out",
            str(tmp_path / "out" / "train.parquet"),
        ]
    )
    assert json.loads(capsys.readouterr().out) == {
        "rows": 12,
        "perturbed": 6,
        "out": str(tmp_path / "out" / "train.parquet"),
    }
    assert len(pd.read_parquet(tmp_path / "out" / "train.parquet")) == 12
