"""Unit tests of the reward manager on hand-built veRL batches, with stand-in reward functions
(the code around the reward; the real reward and evaluator run in test_train_grpo.py)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("verl")
from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402

from cobalt.common.errors import ConfigError  # noqa: E402
from cobalt.train.reward_manager import (  # noqa: E402
    EXTRA_KEYS,
    CobaltRewardManager,
    RewardManagerSettings,
    per_worker_limit,
)

PAD = 0
SPECIAL = 99  # an "end of sequence" id the fake tokenizer renders unless told to skip it


class FakeTokenizer:
    def __init__(self):
        self.calls = []

    def decode(self, ids, skip_special_tokens=False):
        self.calls.append(skip_special_tokens)
        ids = [int(i) for i in ids]
        return " ".join(
            "<eos>" if i == SPECIAL else f"t{i}" for i in ids if not (skip_special_tokens and i == SPECIAL)
        )


def make_batch(valid_lengths, prompt_len=3, response_len=6, splits=None, sources=None):
    """Left-padded prompts, right-padded responses, as veRL's agent loop builds them."""
    n = len(valid_lengths)
    prompts = torch.full((n, prompt_len), 5)
    responses = torch.full((n, response_len), PAD)
    response_mask = torch.zeros((n, response_len), dtype=torch.long)
    for row, length in enumerate(valid_lengths):
        responses[row, :length] = torch.arange(10, 10 + length)
        responses[row, length - 1] = SPECIAL
        response_mask[row, :length] = 1
    attention_mask = torch.cat([torch.ones((n, prompt_len), dtype=torch.long), response_mask], dim=1)
    splits = splits or ["train"] * n
    extra = np.array(
        [{"split": s, "index": i, "prev_best_pass_rate": 0.25} for i, s in enumerate(splits)], dtype=object
    )
    gts = np.array(
        [
            {"style": "rule", "ground_truth": json.dumps({"inputs": ["1"], "outputs": [str(i)]})}
            for i in range(n)
        ],
        dtype=object,
    )
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": attention_mask},
        non_tensors={
            "data_source": np.array(sources or ["code_taco_verified"] * n, dtype=object),
            "reward_model": gts,
            "extra_info": extra,
        },
    )


def make_manager(compute_score, num_workers=1, **settings):
    config = OmegaConf.create(
        {
            "reward": {"num_workers": num_workers, "reward_kwargs": {"cobalt": settings}},
            "data": {"train_batch_size": 2},
            "actor_rollout_ref": {"rollout": {"n": 2}},
        }
    )
    return CobaltRewardManager(config, FakeTokenizer(), compute_score)


def score(manager, batch):
    return asyncio.run(manager.score_batch(batch))


def test_score_sits_at_the_last_valid_response_token():
    async def by_length(data_source, solution_str, ground_truth, extra_info):
        return 0.1 * len(solution_str.split())

    batch = make_batch([2, 6, 4])
    rewards, extras = score(make_manager(by_length), batch)
    assert rewards.shape == batch.batch["responses"].shape
    # special tokens are not decoded: 1, 5 and 3 visible tokens
    expected = {0: (1, 0.1), 1: (5, 0.5), 2: (3, 0.3)}
    for row, (last, value) in expected.items():
        assert rewards[row, last].item() == pytest.approx(value)
        assert rewards[row].count_nonzero() == 1
    assert extras["acc"] == pytest.approx([0.1, 0.5, 0.3])
    assert set(extras) == set(EXTRA_KEYS)


def test_decodes_without_special_tokens():
    seen = []

    def record(data_source, solution_str, ground_truth, extra_info):
        seen.append(solution_str)
        return 0.0

    manager = make_manager(record)
    score(manager, make_batch([3]))
    assert seen == ["t10 t11"] and manager.tokenizer.calls == [True]


def test_validation_items_get_is_val_and_the_batch_is_not_mutated():
    seen = {}

    async def record(data_source, solution_str, ground_truth, extra_info):
        seen[extra_info["index"]] = extra_info["is_val"]
        return 1.0 if extra_info["is_val"] else -0.1

    batch = make_batch([2, 2, 2], splits=["train", "test", "val"])
    _, extras = score(make_manager(record), batch)
    assert seen == {0: False, 1: True, 2: True}
    assert extras["acc"] == [-0.1, 1.0, 1.0]
    assert all("is_val" not in info for info in batch.non_tensor_batch["extra_info"])


def test_a_timeout_scores_minus_one_and_is_counted():
    async def slow_on_first(data_source, solution_str, ground_truth, extra_info):
        if extra_info["index"] == 0:
            await asyncio.sleep(30)
        return 0.5

    manager = make_manager(slow_on_first, timeout_s=0.2)
    rewards, extras = score(manager, make_batch([2, 3]))
    assert rewards[0, 1].item() == -1.0 and rewards[1, 2].item() == 0.5
    assert extras["evaluator_timeout"] == [1.0, 0.0] and extras["evaluator_failure"] == [1.0, 0.0]
    assert manager.counts["timeouts"] == 1 and manager.counts["scored"] == 1


def test_an_evaluator_failure_scores_minus_one_and_never_raises():
    def flaky(data_source, solution_str, ground_truth, extra_info):  # sync functions are supported
        if extra_info["index"] == 1:
            raise ConnectionError("evaluator replica died")
        return 1.0

    manager = make_manager(flaky)
    _rewards, extras = score(manager, make_batch([2, 2, 2]))
    assert extras["acc"] == [1.0, -1.0, 1.0]
    assert extras["evaluator_failure"] == [0.0, 1.0, 0.0] and extras["evaluator_timeout"] == [0.0] * 3
    assert manager.counts["failures"] == 1


def test_in_flight_scores_are_bounded_over_all_workers():
    state = {"now": 0, "peak": 0}

    async def busy(data_source, solution_str, ground_truth, extra_info):
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.02)
        state["now"] -= 1
        return 0.0

    manager = make_manager(busy, num_workers=2, max_in_flight=6)
    score(manager, make_batch([2] * 20))
    assert manager.slots_per_worker == 3 and state["peak"] == 3
    assert per_worker_limit(64, 1) == 64 and per_worker_limit(64, 8) == 8 and per_worker_limit(4, 8) == 1


def test_tuple_and_dict_results_and_their_details():
    async def detailed(data_source, solution_str, ground_truth, extra_info):
        if extra_info["index"] == 0:
            return (0.2, {"ignored": True})
        return {
            "score": -0.4,
            "pass_rate": 0.5,
            "correctness": 0.25,
            "improvement": 0.25,
            "format_reward": -0.9,
        }

    _, extras = score(make_manager(detailed), make_batch([2, 2]))
    assert extras["acc"] == [0.2, -0.4]
    assert extras["pass_rate"] == [0.0, 0.5] and extras["improvement"] == [0.0, 0.25]
    assert extras["correctness"] == [0.0, 0.25] and extras["format_reward"] == [0.0, -0.9]
    assert extras["format_penalized"] == [0.0, 1.0]


def test_one_example_is_printed_per_data_source_per_batch(capsys):
    async def zero(**kwargs):
        return 0.0

    manager = make_manager(zero)  # 2 prompts x n 2 = 4 responses per batch, one worker
    score(manager, make_batch([2] * 8, sources=["a", "b"] * 4))
    printed = capsys.readouterr().out
    assert printed.count("data source a") == 1 and printed.count("data source b") == 1
    score(manager, make_batch([2] * 4, sources=["a"] * 4))
    assert capsys.readouterr().out.count("data source a") == 1


def test_settings_come_from_reward_kwargs_and_unknown_keys_are_rejected():
    config = OmegaConf.create(
        {"reward": {"reward_kwargs": {"cobalt": {"timeout_s": 5, "val_splits": ["dev"]}}}}
    )
    settings = RewardManagerSettings.from_verl_config(config)
    assert settings.timeout_s == 5 and settings.val_splits == ("dev",) and settings.max_in_flight == 64
    assert RewardManagerSettings.from_verl_config(OmegaConf.create({"reward": {}})) == RewardManagerSettings()
    with pytest.raises(ConfigError, match=r"reward\.reward_kwargs\.cobalt: unknown key\(s\) \['timeout'\]"):
        RewardManagerSettings.from_verl_config(
            OmegaConf.create({"reward": {"reward_kwargs": {"cobalt": {"timeout": 1}}}})
        )


def test_training_step_metrics_average_the_reward_extras():
    pytest.importorskip("transfer_queue")
    from cobalt.train.trainer import reward_extra_metrics

    infos = [
        {
            "acc": 1.0,
            "pass_rate": 1.0,
            "improvement": 0.0,
            "format_penalized": 0.0,
            "evaluator_failure": 0.0,
            "evaluator_timeout": 0.0,
        },
        {
            "acc": -1.0,
            "pass_rate": 0.0,
            "improvement": 0.0,
            "format_penalized": 1.0,
            "evaluator_failure": 1.0,
            "evaluator_timeout": 1.0,
        },
        {},
    ]
    infos[0]["evaluator_requests"], infos[1]["evaluator_requests"] = 3.0, 1.0
    metrics = reward_extra_metrics(infos)
    assert metrics["reward/pass_rate/mean"] == 0.5 and metrics["reward/acc/mean"] == 0.0
    assert metrics["reward/format_penalized/mean"] == 0.5
    assert metrics["reward/evaluator_failure/count"] == 1.0
    assert metrics["reward/evaluator_requests/count"] == 4.0  # the step's, one info per episode


def test_training_step_metrics_say_what_the_rollout_cost():
    """Per-episode agent-loop timings (a loop sets only some) and the policy's tokens: the feedback
    tokens of a multi-turn episode (response_mask 0) are not generated tokens."""
    pytest.importorskip("transfer_queue")
    import torch

    from cobalt.train.trainer import rollout_metrics, row_sums

    single_turn = {"generate_sequences": 2.0, "compute_score": 1.0}  # veRL's single-turn loop
    episode = {"generate_sequences": 4.0, "tool_calls": 3.0, "compute_score": 2.0, "num_preempted": -1}
    mask = torch.nested.as_nested_tensor(
        [torch.tensor([1, 1, 1]), torch.tensor([1, 1, 0, 0, 0, 1, 1])], layout=torch.jagged
    )
    assert row_sums(mask) == [3, 4]
    assert row_sums(torch.tensor([[1, 1, 0], [1, 0, 0]])) == [2, 1]  # padded
    metrics = rollout_metrics([single_turn, episode], row_sums(mask))
    assert metrics["rollout/episodes"] == 2 and metrics["rollout/generated_tokens"] == 7
    assert metrics["rollout/generate_s/mean"] == 3.0 and metrics["rollout/public_tests_s/mean"] == 1.5
    assert metrics["rollout/reward_s/mean"] == 1.5 and metrics["rollout/evaluator_wait_s/mean"] == 3.0
    assert rollout_metrics([], [])["rollout/generate_s/mean"] == 0.0


def test_a_dict_field_read_back_from_transfer_queue_becomes_plain_dicts():
    """TransferQueue hands a dict field (the agent loop's metrics) back as a LinkedList of
    TensorDicts, which has no ``tolist``: the step's metrics once failed on it."""
    pytest.importorskip("transfer_queue")
    import torch
    from tensordict import TensorDict
    from tensordict.utils import LinkedList

    from cobalt.train.trainer import as_list, rollout_metrics

    td = TensorDict({"generate_sequences": torch.tensor([2.0, 4.0])}, batch_size=[2])
    rows = as_list(LinkedList([td[0], td[1]], td=td))
    assert rollout_metrics(rows, [1, 1])["rollout/generate_s/mean"] == 3.0
    assert as_list(["a", "b"]) == ["a", "b"]


def test_a_broken_ground_truth_is_counted_as_an_evaluator_failure():
    import functools

    from cobalt.reward import score_details

    class PassesAll:  # stands in for the evaluator around the real reward
        calls = 0

        async def evaluate(self, code, test_cases):
            self.calls += 1
            return {"passing": [True], "feedback": [""]}

    evaluator = PassesAll()
    batch = make_batch([2, 2, 2])
    batch.non_tensor_batch["reward_model"][1] = {"style": "rule", "ground_truth": "{}"}
    batch.non_tensor_batch["reward_model"][2] = {"style": "rule", "ground_truth": None}
    manager = make_manager(functools.partial(score_details, evaluator=evaluator))
    manager.tokenizer.decode = lambda ids, skip_special_tokens: "ok</think>\n```python\nprint(1)\n```\n"
    _, extras = score(manager, batch)
    assert extras["evaluator_failure"] == [0.0, 1.0, 1.0] and evaluator.calls == 1
    assert extras["acc"][0] > 0.9 and extras["pass_rate"] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("asynchronous", [True, False], ids=["async", "sync"])
def test_each_item_reports_the_evaluator_requests_it_sent(monkeypatch, asynchronous):
    """Counted by the evaluator client as each request leaves (the real sandbox here), also when a
    synchronous reward function runs in a thread: a program is one request, a response without
    one none, and concurrent items never count each other's."""
    from cobalt.reward import score_details

    monkeypatch.setenv("COBALT_EVALUATOR", "local")

    async def scored(**kwargs):
        return await score_details(**kwargs)

    def scored_in_a_thread(**kwargs):
        return asyncio.run(score_details(**kwargs))

    batch = make_batch([2, 3, 4])  # each item's text by its length: decoding runs in threads, any order
    for row in range(3):
        batch.non_tensor_batch["reward_model"][row] = {
            "style": "rule",
            "ground_truth": json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]}),
        }
    texts = {
        2: "ok</think>\n```python\nprint(1)\n```\n",
        3: "ok</think>\nno program",
        4: "ok</think>\n```python\nprint(2)\n```\n",
    }
    manager = make_manager(scored if asynchronous else scored_in_a_thread)
    manager.tokenizer.decode = lambda ids, skip_special_tokens: texts[len(ids)]
    _, extras = score(manager, batch)
    assert extras["evaluator_requests"] == [1.0, 0.0, 1.0], extras
