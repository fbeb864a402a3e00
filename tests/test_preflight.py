"""The paper run's preflight (cobalt/recipes/paper/preflight.py): one line per check, a failure naming what to
change; the dry run prints it with an estimate, ``--preflight`` exits 1 on a failure; a real run stops
on a failure before its first stage, in seconds. And a small first GPU run: ``--max_problems N``, the
engine's context (``--max_model_len``), a chain config of one's own that starts from ``paper``."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from cobalt.common.config import from_dict, load_config
from cobalt.recipes.paper import preflight
from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, with_engine_context
from cobalt.train.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]


def test_gpus_are_checked_against_the_count_and_cuda_13s_driver():
    h100 = ("NVIDIA H100 80GB HBM3", "580.65.06")
    assert preflight.check_gpus(4, False, None, gpus=[h100] * 4).level == "ok"
    old = preflight.check_gpus(4, False, None, gpus=[("NVIDIA A100", "550.54.15")] * 4)
    assert old.level == "fail" and "driver 550.54.15 is older than CUDA 13's minimum 580.65.06" in old.line
    few = preflight.check_gpus(4, False, None, gpus=[h100] * 2)
    assert few.level == "fail" and "2 here" in few.line and "needs 4" in few.line
    assert preflight.check_gpus(4, False, None, gpus=[]).level == "fail"
    assert preflight.check_gpus(4, True, None, gpus=[]).level == "ok"  # a rehearsal needs none


def test_the_model_is_a_local_directory_or_a_hub_id_it_can_reach(tmp_path, monkeypatch):
    model = tmp_path / "qwen3-8b"
    model.mkdir()
    empty = preflight.check_model(str(model), False)
    assert empty.level == "fail" and "no config.json" in empty.line
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\0" * 1000)
    assert preflight.check_model(str(model), False).level == "ok"
    assert preflight.check_model(str(tmp_path / "missing"), False).level == "fail"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    offline = preflight.check_model("Qwen/Qwen3-8B", False)
    assert (
        offline.level == "fail" and "not in the hub cache" in offline.line and "--model DIR" in offline.line
    )


def test_a_model_directory_without_all_its_weights_fails(tmp_path):
    """A half-finished download: no weight file, an empty one, or a shard its index names missing."""
    model = tmp_path / "qwen3-8b"
    model.mkdir()
    (model / "config.json").write_text("{}")

    def line():
        check = preflight.check_model(str(model), False)
        return check.line if check.level == "fail" else None

    assert "no weights (no *.safetensors nor *.bin file)" in line() and "hf download" in line()
    (model / "model-00001-of-00002.safetensors").write_bytes(b"")
    assert "1 empty weight file(s) (model-00001-of-00002.safetensors)" in line()
    (model / "model-00001-of-00002.safetensors").write_bytes(b"\0" * 1000)
    shards = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
    (model / "model.safetensors.index.json").write_text(json.dumps({"weight_map": shards}))
    assert (
        "model.safetensors.index.json names 1 shard(s) not here (model-00002-of-00002.safetensors)" in line()
    )
    (model / "model-00002-of-00002.safetensors").write_bytes(b"\0" * 1000)
    assert line() is None


QWEN3_8B = {  # config.json of Qwen3-8B (16.4 GB of bf16 weights)
    "hidden_size": 4096,
    "num_hidden_layers": 36,
    "vocab_size": 151936,
    "intermediate_size": 12288,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def test_a_model_directory_whose_weights_are_far_smaller_than_its_config_says_fails(tmp_path):
    """A download stopped early, or the wrong files: 0.0 GB where the config's model takes ~18 GB."""
    model = tmp_path / "qwen3-8b"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(QWEN3_8B))
    (model / "model.safetensors").write_bytes(b"\0" * 1000)
    check = preflight.check_model(str(model), False)
    assert (
        check.level == "fail"
        and "0.00 GB of weights where its config.json's model takes about 18.2 GB" in check.line
    )
    assert preflight.expected_weights_gb(model) / 2 < 16.4  # the real model's weights pass


def test_a_mistyped_model_directory_is_not_looked_up_on_the_hub(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    check = preflight.check_model("models/qwen3-8b", False)
    assert check.level == "fail" and check.line.startswith(
        "models/qwen3-8b: no such directory (models/ is here)"
    )
    assert "hf download" not in check.line


def test_the_estimate_counts_the_files_and_a_grpo_steps_evaluator_load(tmp_path):
    cfg = from_dict(PaperConfig, load_config("paper"))
    taco, lcb = tmp_path / "taco.jsonl", tmp_path / "lcb.jsonl"
    taco.write_text("{}\n" * 50)
    lcb.write_text("{}\n" * 20)
    overrides = load_profile("multi_turn_qwen3_8b").overrides
    cost = preflight.estimate(cfg, Inputs("multi_turn_qwen3_8b", str(taco), str(lcb)), overrides, False)
    assert cost["problems"] == {"train": 45, "dev": 5, "lcb": 20}
    step = cost["evaluator_per_grpo_step"]
    assert (step["programs"], step["tests"]) == (128 * 16, 128 * 16 * 50)  # ~2,000 programs, ~50 tests each
    assert step["core_seconds"] == round(102_400 / (470 / 16))  # 29 tests/s a core, measured
    trajectories = cost["stages"]["trajectories (true and perturbed feedback)"]
    assert (
        trajectories["answers"] == 2 * 45 * 16 * 3
        and trajectories["tokens_at_most"] == 2 * 45 * 16 * 3 * 6144
    )
    assert cost["total"]["disk_gb"] > cost["stages"]["GRPO"]["disk_gb"] > 0


def reproduce(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CUDA_VISIBLE", "COBALT_PROFILE"))
    }
    paper = ["--profile", "multi_turn_qwen3_8b", "--taco", "taco.jsonl", "--lcb", "lcb.jsonl"]
    cmd = ["bash", str(ROOT / "scripts/reproduce_paper.sh"), *paper, *args]
    return subprocess.run(
        cmd, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def files(tmp_path):
    from data_fixtures import lcb_file, taco_file

    taco_file(tmp_path / "taco.jsonl", limit=4)
    lcb_file(tmp_path / "lcb.jsonl", limit=3)
    return tmp_path


def test_the_dry_run_prints_the_preflight_and_the_estimate(files):
    proc = reproduce(files, "--dry-run", env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(files / "hf")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    end = proc.stdout.index("\n}\n") + 2
    plan, lines = json.loads(proc.stdout[:end]), proc.stdout[end:].strip().splitlines()
    checks = [line.split(":")[0].split()[-1] for line in lines if line.startswith("preflight ")]
    assert checks == ["GPUs", "attention", "overrides", "batch", "model", "disk", "evaluator", "context"]
    assert any(line.startswith("preflight fail model: Qwen/Qwen3-8B: HF_HUB_OFFLINE=1") for line in lines)
    assert plan["estimate"]["evaluator_per_grpo_step"]["programs"] == 2048
    assert set(plan["estimate"]["stages"]) >= {"GRPO", "trajectories (true and perturbed feedback)"}


def test_a_relative_model_is_the_callers_directory(files):
    """The stages run in the checkout: a --model relative to the caller's directory is made absolute
    (as --taco and --lcb are), and the preflight checks that directory."""
    model = files / "models/qwen3-8b"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\0" * 1000)
    proc = reproduce(files, "--dry-run", "--model", "models/qwen3-8b")
    plan = plan_of(proc)
    assert plan["base_model"] == str(model)
    assert f"actor_rollout_ref.model.path={model}" in plan["grpo_command"]
    assert f"preflight ok   model: local directory {model} (0.0 GB of weights)" in proc.stdout


def test_the_preflight_flag_gates_a_job_on_the_checks(files):
    """--preflight prints the checks only and exits 1 on any failed one (this machine has no GPU);
    --dry-run keeps exiting 0 (the test above); a rehearsal's checks pass."""
    proc = reproduce(files, "--preflight", env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(files / "hf")})
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines and all(line.startswith("preflight ") for line in lines), proc.stdout[-2000:]
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith("error: the preflight failed: none here (no nvidia-smi)")
    )
    rehearsal = reproduce(files, "--preflight", "--rehearse")
    assert rehearsal.returncode == 0, rehearsal.stdout[-2000:] + rehearsal.stderr[-2000:]
    assert "preflight fail" not in rehearsal.stdout


@pytest.mark.timing  # asserts wall-clock times: never beside a training run
def test_a_real_run_stops_on_a_failed_check_before_its_first_stage_in_seconds(files, tmp_path):
    """--num_gpus 4 gets past the GPU count; the preflight still finds no NVIDIA driver here and a
    model it cannot fetch, and stops before any run directory exists."""
    model = tmp_path / "model"
    model.mkdir()
    run_dir = tmp_path / "run"
    started = time.monotonic()
    proc = reproduce(files, "--num_gpus", "4", "--model", str(model), "--run_dir", str(run_dir))
    took = time.monotonic() - started
    assert proc.returncode == 2 and took < 60
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("error: the preflight failed: none here (no nvidia-smi)")
    assert f"{model} has no config.json" in error  # --model: the local copy, checked
    assert not run_dir.exists()


# ------------------------------------------------------------------------------ a small first GPU run
def plan_of(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout[: proc.stdout.index("\n}\n") + 2])


def test_problems_and_the_engines_context_by_flag(files):
    plan = plan_of(reproduce(files, "--dry-run", "--max_problems", "3", "--max_model_len", "16384"))
    assert (plan["chain"]["max_problems"], plan["chain"]["max_model_len"]) == (3, 16384)
    assert plan["context_budget"]["context"] == 16384  # the turns that fit, at that context


def test_a_config_of_ones_own_extends_paper_by_name_and_a_missing_parent_is_one_line(files):
    (files / "small.yaml").write_text("extends: paper\nmax_problems: 2\nmax_model_len: 32768\n")
    chain = plan_of(reproduce(files, "--dry-run", "--config", "small.yaml"))["chain"]
    assert (chain["max_problems"], chain["max_model_len"], chain["eval_turns"]) == (2, 32768, 8)
    (files / "bad.yaml").write_text("extends: papr\n")
    proc = reproduce(files, "--dry-run", "--config", "bad.yaml")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        f"error: bad.yaml: extends: 'papr' names no config file (not papr.yaml nor {ROOT}/configs/papr.yaml)"
    )


def test_the_engine_of_every_stage_gets_the_context(tmp_path):
    from cobalt.serve.engine import load_engine_config

    cfg = from_dict(PaperConfig, load_config("paper"))
    assert with_engine_context(cfg, tmp_path) == cfg  # not set: the engine config as it is
    run_cfg = with_engine_context(dataclasses.replace(cfg, max_model_len=16384), tmp_path / "run")
    assert run_cfg.engine_config == str(tmp_path / "run/engine.yaml")
    engine = load_engine_config(run_cfg.engine_config).llm["engine_kwargs"]
    paper = load_engine_config("engine_paper").llm["engine_kwargs"]
    assert engine == {**paper, "max_model_len": 16384}


def paper_cost(tmp_path, grpo_overrides=(), num_gpus=None, evaluator_config="evaluator", **files):
    cfg = dataclasses.replace(
        from_dict(PaperConfig, load_config("paper")),
        grpo_overrides=list(grpo_overrides),
        evaluator_config=evaluator_config,
    )
    inputs = Inputs("multi_turn_qwen3_8b", num_gpus=num_gpus, **{k: str(v) for k, v in files.items()})
    return preflight.estimate(cfg, inputs, load_profile("multi_turn_qwen3_8b").overrides, False)


def test_the_estimate_counts_every_row_of_the_files_as_they_ship(tmp_path):
    """TACO-verified ships as one JSON array (taco_verified.json); the authors' released train and
    perturbed dev files are counted as given (nothing split off)."""
    taco, lcb, dev = tmp_path / "taco_verified.json", tmp_path / "test6.jsonl", tmp_path / "ptb.jsonl"
    taco.write_text(json.dumps([{"id": i} for i in range(2000)]))  # one line
    lcb.write_text("{}\n" * 175)
    assert paper_cost(tmp_path, taco=taco, lcb=lcb)["problems"] == {"train": 1800, "dev": 200, "lcb": 175}
    released = tmp_path / "train.jsonl"
    released.write_text(json.dumps({"id": "a", "instruction": "x", "test_cases": "{}"}) + "\n" * 1)
    released.write_text(released.read_text() * 30)
    dev.write_text("{}\n" * 7)
    cost = paper_cost(tmp_path, taco=released, lcb=lcb, taco_dev=dev)
    assert cost["problems"] == {"train": 30, "dev": 7, "lcb": 175}


def test_a_missing_input_file_stops_the_dry_run_naming_it(tmp_path, capsys):
    from cobalt.recipes.paper.reproduce import main

    lcb = tmp_path / "test6.jsonl"
    lcb.write_text("{}\n")
    with pytest.raises(SystemExit) as stop:
        main(
            [
                "--profile",
                "multi_turn_qwen3_8b",
                "--taco",
                str(tmp_path / "nowhere.parquet"),
                "--lcb",
                str(lcb),
                "--dry-run",
            ]
        )
    assert stop.value.code != 0
    assert f"{tmp_path / 'nowhere.parquet'}: no such file" in capsys.readouterr().err


def test_the_gpu_count_follows_the_overrides_and_inference_uses_every_gpu(tmp_path):
    taco, lcb = tmp_path / "taco.jsonl", tmp_path / "lcb.jsonl"
    taco.write_text("{}\n" * 100)
    lcb.write_text("{}\n" * 20)

    def hours(cost, *names):
        return sum(s["gpu_hours"] for name, s in cost["stages"].items() if name.startswith(names))

    def gpu_wall(cost):  # the wall hours without the evaluator's (the test below)
        return cost["total"]["wall_hours"] - cost["total"]["evaluator_hours"]

    four = paper_cost(tmp_path, taco=taco, lcb=lcb)  # the profile's 4 GPUs, and no more here
    assert four["total"]["gpus"] == {"training": 4, "inference": 4}
    assert gpu_wall(four) == pytest.approx(four["total"]["gpu_hours"] / 4, abs=0.1)
    eight = paper_cost(tmp_path, ["trainer.n_gpus_per_node=8"], taco=taco, lcb=lcb)
    assert eight["total"]["gpus"] == {"training": 8, "inference": 8}
    assert gpu_wall(eight) == pytest.approx(eight["total"]["gpu_hours"] / 8, abs=0.1)
    nodes = paper_cost(tmp_path, ["trainer.n_gpus_per_node=8", "trainer.nnodes=2"], taco=taco, lcb=lcb)
    assert nodes["total"]["gpus"]["training"] == 16
    # the profile's 4 GPUs train; a node of 8 (--num_gpus) runs inference on all 8
    node = paper_cost(tmp_path, num_gpus=8, taco=taco, lcb=lcb)
    inference = hours(node, "trajectories", "evaluation")
    assert node["total"]["gpus"] == {"training": 4, "inference": 8}
    assert gpu_wall(node) == pytest.approx(hours(node, "GRPO") / 4 + inference / 8, abs=0.1)
    assert preflight.gpus_needed(load_profile("multi_turn_qwen3_8b").overrides, ["trainer.nnodes=2"]) == (
        4,
        2,
    )


def test_the_dry_runs_gpus_follow_the_overrides(tmp_path, monkeypatch):
    from cobalt.recipes.paper.reproduce import dry_run_plan

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    taco, lcb = tmp_path / "taco.jsonl", tmp_path / "lcb.jsonl"
    taco.write_text("{}\n" * 10)
    lcb.write_text("{}\n" * 2)
    cfg = dataclasses.replace(
        from_dict(PaperConfig, load_config("paper")), grpo_overrides=["trainer.nnodes=2"]
    )
    plan = dry_run_plan(cfg, Inputs("multi_turn_qwen3_8b", str(taco), str(lcb)))
    assert (plan["gpus"]["per_node"], plan["gpus"]["nodes"], plan["gpus"]["total"]) == (4, 2, 8)
    assert plan["grpo"]["trainer.nnodes"] == "2" and plan["estimate"]["total"]["gpus"]["training"] == 8


def online(*args: str) -> list[str]:
    return ["--profile", "grpo_mt_qwen3_8b", "--method", "grpo_mt", *args]


def batch_line(proc) -> str:
    (line,) = [
        line for line in proc.stdout.splitlines() if line.startswith("preflight") and " batch: " in line
    ]
    return line


def test_rows_that_cannot_fill_one_batch_fail_the_preflight_naming_the_batch_that_would(files):
    """veRL's dataloader drops an incomplete batch, then stops on an empty one (issue 59): 4
    training problems give GRPO-MT 4 rows, and COBALT at most 4 bandit prompts each (plus the
    perturbed share), against the paper's batch of 128."""
    proc = reproduce(files, "--preflight")  # COBALT
    assert proc.returncode == 1
    line = batch_line(proc)
    assert line.startswith(
        "preflight fail batch: 4 training problems, at most 5 bandit prompts each: at most 20"
    )
    assert "data.train_batch_size 128" in line and "a batch of at most 20" in line
    proc = reproduce(files, "--preflight", *online())
    assert batch_line(proc).startswith("preflight fail batch: 4 training problems, one row each: at most 4")
    small = ["--", "data.train_batch_size=4", "actor_rollout_ref.actor.ppo_mini_batch_size=4"]
    fits = reproduce(files, "--preflight", *online(*small))
    assert (
        batch_line(fits)
        == "preflight ok   batch: 4 training problems, one row each: up to 4 training rows fill batches of 4"
    )
    rehearsal = reproduce(files, "--preflight", "--rehearse", *online())
    assert batch_line(rehearsal).startswith("preflight ok   batch: a rehearsal fills")


@pytest.mark.parametrize("batch", [8, 10, 16])
def test_a_batch_the_preflight_passes_is_one_veRLs_own_dataloader_fills(tmp_path, tiny_tokenizer_dir, batch):
    """``--max-problems 10`` for GRPO-MT: the preflight counts 10 training rows. veRL's trainer
    builds its dataloader from those rows (RayPPOTrainer._create_dataloader, on veRL's config as
    the profile and the user's overrides compose it) and stops on an empty one exactly when the
    preflight fails the batch (issue 59)."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    from cobalt.data.embedded.problems import problem_records
    from cobalt.data.verl_rows import online_row, write_parquet
    from cobalt.train.profile import override, verl_config

    (tmp_path / "taco.jsonl").write_text("{}\n" * 20)  # 18 training problems before the cut
    (tmp_path / "lcb.jsonl").write_text("{}\n" * 5)
    user = [f"data.train_batch_size={batch}", f"actor_rollout_ref.actor.ppo_mini_batch_size={batch}"]
    cfg = dataclasses.replace(
        from_dict(PaperConfig, load_config("paper")), max_problems=10, grpo_overrides=user
    )
    inputs = Inputs("grpo_mt_qwen3_8b", str(tmp_path / "taco.jsonl"), str(tmp_path / "lcb.jsonl"))
    profile = load_profile("grpo_mt_qwen3_8b").overrides
    check = preflight.check_batch(cfg, inputs, profile, False, "grpo_mt")
    rows = preflight.training_rows(cfg, inputs, False, "grpo_mt")[0]
    assert rows == 10

    train = tmp_path / "train.parquet"
    write_parquet([online_row(p, "train") for p in problem_records()[:rows]], train)
    data = [f"data.train_files={train}", f"data.val_files={train}", "data.dataloader_num_workers=0"]
    config = verl_config([*(override(k, v) for k, v in profile.items()), *user, *data])
    trainer = type("Trainer", (), {})()  # what _create_dataloader reads of the trainer
    trainer.config, trainer.processor = config, None
    trainer.tokenizer = __import__("transformers").AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    OmegaConf.set_struct(config, False)
    try:
        RayPPOTrainer._create_dataloader(trainer, None, None, None, None)
        filled = len(trainer.train_dataloader) >= 1
    except AssertionError as error:
        assert "Train dataloader is empty" in str(error)
        filled = False
    assert filled == (batch <= rows) == (check.level == "ok"), check.line


def test_swapped_problem_files_are_refused_naming_both(files):
    for flag in ("--dry-run", "--preflight"):
        proc = reproduce(files, flag, "--taco", "lcb.jsonl", "--lcb", "taco.jsonl")
        assert proc.returncode == 2 and not proc.stdout, proc.stdout[-2000:]
        assert proc.stderr.strip() == (
            f"error: --taco {files / 'lcb.jsonl'} holds LiveCodeBench rows and --lcb {files / 'taco.jsonl'} "
            f"TACO-verified ones: swapped? pass --taco {files / 'taco.jsonl'} --lcb {files / 'lcb.jsonl'}"
        )
    wrong = reproduce(files, "--dry-run", "--lcb", "taco.jsonl")
    assert wrong.returncode == 2 and "--lcb" in wrong.stderr and "holds TACO-verified rows" in wrong.stderr


def test_the_dry_run_reads_the_checks_and_ends_with_the_wall_hours_and_json_is_one_document(files):
    """A dry run reports failed checks on stdout and exits 0 without an ``error:`` line (only a
    gate prints one); ``--json`` prints one JSON document and nothing else (issue 59)."""
    human = reproduce(files, "--dry-run")
    assert human.returncode == 0 and "error:" not in human.stderr, human.stderr[-2000:]
    assert "preflight fail GPUs" in human.stdout
    plan = json.loads(human.stdout[: human.stdout.index("\n}\n") + 2])
    total = plan["estimate"]["total"]
    assert human.stdout.strip().splitlines()[-1] == (
        f"estimate: {total['wall_hours']} wall hours, {total['gpu_hours']} GPU-hours (the estimate above)"
    )
    machine = reproduce(files, "--dry-run", "--json")
    assert machine.returncode == 0 and "error:" not in machine.stderr
    document = json.loads(machine.stdout)  # the whole of stdout
    assert document["estimate"]["total"] == total
    levels = {check["what"]: check["level"] for check in document["preflight"]}
    assert levels["GPUs"] == "fail" and levels["attention"] == "ok" and "batch" in levels


def test_the_hubs_error_is_shown_in_whole_words(monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    message = (
        "Cannot reach https://huggingface.co/api/models/Qwen/Qwen3-8B: " + "connection refused by proxy " * 4
    )

    def refuse(self, *args, **kwargs):
        raise OSError(message.strip())

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", refuse)
    check = preflight.check_model("Qwen/Qwen3-8B", False)
    reason = check.line.split("(", 1)[1].split("): ", 1)[0]
    assert check.level == "fail" and reason == message.strip()  # 174 characters, whole


def test_the_wall_hours_include_the_evaluators_time_at_its_size(tmp_path):
    """A GRPO step waits for its rewards: its steps times the step's core-seconds over the
    evaluator's CPUs add to the wall hours (issue 59)."""
    taco, lcb = tmp_path / "taco.jsonl", tmp_path / "lcb.jsonl"
    taco.write_text("{}\n" * 1111)
    lcb.write_text("{}\n" * 200)
    small = paper_cost(tmp_path, taco=taco, lcb=lcb)  # configs/evaluator.yaml: 2 CPUs
    steps = small["stages"]["GRPO"]["steps_at_most"]
    core_s = small["evaluator_per_grpo_step"]["core_seconds"]
    assert small["total"]["evaluator_hours"] == pytest.approx(steps * core_s / 2 / 3600, abs=0.1)
    assert small["total"]["evaluator_hours"] > 30  # 80 steps of ~29 min
    big = paper_cost(tmp_path, taco=taco, lcb=lcb, evaluator_config="evaluator_paper")  # 80 CPUs
    assert big["total"]["evaluator_hours"] == pytest.approx(steps * core_s / 80 / 3600, abs=0.1)
    assert small["total"]["wall_hours"] - big["total"]["wall_hours"] == pytest.approx(
        small["total"]["evaluator_hours"] - big["total"]["evaluator_hours"], abs=0.1
    )
