"""The evaluator sized to its node (issue 59): ``num_replicas: auto`` (configs/evaluator_node.yaml,
the paper recipe's default) takes the node's CPUs beyond what training holds, between a floor and
a cap; the estimate's hours and the preflight use that size, and a run fixes it in its own
``evaluator.yaml``."""

from __future__ import annotations

import dataclasses
import os

import pytest

from cobalt.common.config import from_dict, load_config
from cobalt.common.errors import ConfigError
from cobalt.recipes.paper import preflight
from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, with_sized_evaluator
from cobalt.serve.evaluator import load_evaluator_config, serve_config
from cobalt.train.profile import load_profile

PROFILE = "multi_turn_qwen3_8b"  # 4 GPUs per node


def training_cpus() -> int:
    return preflight.training_cpus(load_profile(PROFILE).overrides, [])


def test_what_training_holds_on_a_node():
    # veRL's 3 per GPU, 8 agent-loop and 8 reward workers (veRL's defaults), 4 for the drivers
    assert training_cpus() == 3 * 4 + 8 + 8 + 4
    fewer = [
        "actor_rollout_ref.rollout.agent.num_workers=2",
        "reward.num_workers=1",
        "trainer.n_gpus_per_node=8",
    ]
    assert preflight.training_cpus(load_profile(PROFILE).overrides, fewer) == 24 + 2 + 1 + 4


@pytest.mark.parametrize("cpus, replicas", [(64, 64 - 32), (8, 2), (256, 80), (33, 2), (35, 3)])
def test_the_replicas_follow_the_nodes_cpus_between_floor_and_cap(cpus, replicas):
    opts = load_evaluator_config("evaluator_node", cpus=cpus, reserve_cpus=training_cpus())[1]
    assert opts.num_replicas == replicas and opts.capacity == replicas  # one sandbox each
    assert opts.num_cpus == 1 and opts.sandboxes_per_replica == 1  # the reference's layout


def test_a_fixed_layout_ignores_the_node():
    for cpus in (8, 256):
        assert load_evaluator_config("evaluator", cpus=cpus)[1].num_replicas == 2
        assert load_evaluator_config("evaluator_paper", cpus=cpus)[1].num_replicas == 80


def test_a_replica_count_that_is_neither_a_number_nor_auto_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "evaluator_bad.yaml"
    bad.write_text("extends: evaluator\nserve:\n  num_replicas: many\n")
    with pytest.raises(ConfigError, match=f"{bad}: serve.*num_replicas must be a number or 'auto'"):
        serve_config(str(bad))


def paper_cost(monkeypatch, tmp_path, cpus: int) -> dict:
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    taco, lcb = tmp_path / "taco.jsonl", tmp_path / "lcb.jsonl"
    taco.write_text("{}\n" * 1111)
    lcb.write_text("{}\n" * 200)
    cfg = from_dict(PaperConfig, load_config("paper"))
    assert cfg.evaluator_config == "evaluator_node"  # the default
    inputs = Inputs(PROFILE, taco=str(taco), lcb=str(lcb))
    return preflight.estimate(cfg, inputs, load_profile(PROFILE).overrides, False)


@pytest.mark.parametrize("cpus, replicas", [(64, 32), (8, 2)])
def test_the_estimates_evaluator_hours_use_the_nodes_size(monkeypatch, tmp_path, cpus, replicas):
    cost = paper_cost(monkeypatch, tmp_path, cpus)
    steps = cost["stages"]["GRPO"]["steps_at_most"]
    core_s = cost["evaluator_per_grpo_step"]["core_seconds"]
    assert cost["total"]["evaluator_hours"] == pytest.approx(steps * core_s / replicas / 3600, abs=0.1)
    assert cost["evaluator_per_grpo_step"]["evaluator"].startswith(f"evaluator_node: {replicas} CPUs")
    check = preflight.check_evaluator(
        "evaluator_node", cost["evaluator_per_grpo_step"], cpus, training_cpus()
    )
    assert (
        f"evaluator_node holds {replicas} CPUs ({replicas} replicas of 1 CPU: {cpus} CPUs on the node, "
        in check.line
    )
    if check.level == "warn":  # ~29 min a step on 2 CPUs: the advice, in --help's flag style
        assert "a node with more CPUs gives it one replica per CPU beyond training's; or join" in check.line
        assert "--evaluator-config evaluator_paper" in check.line and "--evaluator_config" not in check.line
    assert check.level == ("ok" if cpus == 64 else "warn")


def test_a_run_fixes_the_size_in_its_own_config_and_keeps_it_on_resume(monkeypatch, tmp_path, capsys):
    cfg = from_dict(PaperConfig, load_config("paper"))
    inputs = Inputs(PROFILE, taco="taco.json", lcb="test6.jsonl")
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    run_cfg = with_sized_evaluator(cfg, inputs, tmp_path)
    assert run_cfg == dataclasses.replace(cfg, evaluator_config=str(tmp_path / "evaluator.yaml"))
    assert (
        "[paper] the evaluator: 32 replicas of 1 CPU: 64 CPUs on the node, 32 left" in capsys.readouterr().out
    )
    monkeypatch.setattr(os, "cpu_count", lambda: 256)  # every stage, wherever it loads it
    assert load_evaluator_config(run_cfg.evaluator_config)[1].num_replicas == 32
    assert with_sized_evaluator(cfg, inputs, tmp_path) == run_cfg  # resumed: the file is kept
    assert load_evaluator_config(run_cfg.evaluator_config)[1].num_replicas == 32
    fixed = dataclasses.replace(cfg, evaluator_config="evaluator_paper")
    assert with_sized_evaluator(fixed, inputs, tmp_path / "other") == fixed  # nothing to size
    assert not (tmp_path / "other").exists()
