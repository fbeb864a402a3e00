"""configs/*.yaml loading: ``extends`` chains, errors naming the file, and the paper configs that
are written as differences from the CPU ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from cobalt.common.config import load_config
from cobalt.common.errors import ConfigError


def test_a_child_config_changes_only_what_it_lists(tmp_path):
    (tmp_path / "base.yaml").write_text("a: 1\nnested: {x: 1, y: 2}\nkept: yes\n")
    (tmp_path / "child.yaml").write_text("extends: base\nnested: {y: 3, z: null}\na: 5\n")
    (tmp_path / "grandchild.yaml").write_text("extends: child.yaml\nnested: {x: 0}\n")
    assert load_config(tmp_path / "grandchild.yaml") == {
        "a": 5,
        "nested": {"x": 0, "y": 3, "z": None},
        "kept": True,
    }


def test_extends_errors_name_the_file(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b\n")
    (tmp_path / "b.yaml").write_text("extends: a\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "orphan.yaml").write_text("extends: missing\n")
    with pytest.raises(
        ConfigError, match=r"orphan\.yaml: extends: 'missing' names no config file \(not .*missing\.yaml"
    ):
        load_config(tmp_path / "orphan.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin1\.yaml: not UTF-8"):
        load_config(tmp_path / "latin1.yaml")


def test_a_config_of_ones_own_extends_a_shipped_one_by_name(tmp_path):
    """A name is looked up beside the file, then in configs/ (a path stays relative to the file)."""
    (tmp_path / "small.yaml").write_text("extends: paper\nmax_problems: 20\n")
    small = load_config(tmp_path / "small.yaml")
    assert small["max_problems"] == 20 and small["eval_turns"] == load_config("paper")["eval_turns"]
    (tmp_path / "paper.yaml").write_text("eval_turns: 1\n")  # beside the file: that one
    assert load_config(tmp_path / "small.yaml")["eval_turns"] == 1
    from cobalt.train.profile import load_profile  # a training profile: by name in configs/train/

    (tmp_path / "mine.yaml").write_text(
        "extends: multi_turn_qwen3_8b\noverrides: {trainer.total_epochs: 2}\n"
    )
    mine, shipped = load_profile(str(tmp_path / "mine.yaml")), load_profile("multi_turn_qwen3_8b")
    assert mine.overrides == {**shipped.overrides, "trainer.total_epochs": 2}


def test_the_paper_engine_config_builds_a_gpu_llm_config_without_the_cpu_settings():
    pytest.importorskip("ray.serve.llm")
    from cobalt.serve.engine import llm_config, load_engine_config

    llm = llm_config("Qwen/Qwen3-8B", load_engine_config("engine_paper"))
    assert llm.engine_kwargs["dtype"] == "bfloat16"
    assert "max_model_len" not in llm.engine_kwargs  # the model's own context window, as the authors' engine
    assert llm.deployment_config["autoscaling_config"]["max_replicas"] == 8
    assert "num_replicas" not in llm.deployment_config  # autoscaling instead
    env = (llm.runtime_env or {}).get("env_vars", {})
    assert not any(
        key.startswith("VLLM_CPU") or key in ("VLLM_TARGET_DEVICE", "OMP_NUM_THREADS") for key in env
    )
    assert llm.accelerator_type is None
    assert "LocalModelDir" not in str(llm.callback_config.callback_class)  # a hub id: Ray downloads it


def test_the_cpu_engine_config_gives_the_vllm_worker_every_usable_core(tmp_path):
    pytest.importorskip("ray.serve.llm")
    import os

    from cobalt.serve.engine import llm_config, load_engine_config

    assert load_engine_config("engine").llm["runtime_env"]["env_vars"]["OMP_NUM_THREADS"] == "auto"
    env = llm_config(str(tmp_path), load_engine_config("engine")).runtime_env["env_vars"]
    assert env["OMP_NUM_THREADS"] == str(len(os.sched_getaffinity(0)))


def test_the_cpu_engine_config_computes_in_bfloat16_only_where_the_cpu_does(tmp_path, monkeypatch):
    pytest.importorskip("ray.serve.llm")
    from cobalt.serve import engine

    cfg = engine.load_engine_config("engine")
    assert cfg.llm["engine_kwargs"]["dtype"] == "cpu_auto"
    for native, dtype in ((True, "bfloat16"), (False, "float32")):
        monkeypatch.setattr(engine, "cpu_computes_bfloat16", lambda native=native: native)
        assert engine.llm_config(str(tmp_path), cfg).engine_kwargs["dtype"] == dtype
    assert cfg.llm["engine_kwargs"]["dtype"] == "cpu_auto"  # the loaded config is left as it was
    assert (
        engine.llm_config("Qwen/Qwen3-8B", engine.load_engine_config("engine_paper")).engine_kwargs["dtype"]
        == "bfloat16"
    )


def test_a_local_model_dir_skips_ray_llms_node_initialisation(tmp_path):
    pytest.importorskip("ray.serve.llm")
    import asyncio

    from ray.llm._internal.common.utils.import_utils import load_class

    from cobalt.serve.engine import LocalModelDir, llm_config, load_engine_config

    llm = llm_config(str(tmp_path), load_engine_config("engine"))
    assert llm.model_loading_config.model_source == str(tmp_path.resolve())
    callback = LocalModelDir(llm_config=llm)
    assert callback.ctx.run_init_node  # what Ray does by default
    asyncio.run(callback.run_callback("on_before_node_init"))
    assert callback.ctx.run_init_node is False
    assert load_class(llm.callback_config.callback_class) is LocalModelDir


def test_the_paper_evaluator_config_keeps_the_shared_settings():
    from cobalt.serve.client import load_client_config
    from cobalt.serve.evaluator import load_evaluator_config

    sandbox, serve = load_evaluator_config("evaluator_paper")
    cpu_sandbox, _ = load_evaluator_config("evaluator")
    assert serve.num_replicas == 80 and serve.max_ongoing_requests == 1 and serve.memory_gb == 4
    assert sandbox.slots == 128 and sandbox.max_scratch_mb == cpu_sandbox.max_scratch_mb
    assert load_client_config("evaluator_paper") == load_client_config("evaluator")


def test_the_ci_quickstart_extends_the_full_one():
    full, ci = load_config("quickstart"), load_config("quickstart_ci")
    assert ci["train_profile"] == "quickstart_ci" and ci["train_problems"] < full["train_problems"]
    assert ci["warmup"]["lr"] == full["warmup"]["lr"] and ci["sampling"]["top_p"] == full["sampling"]["top_p"]


def test_an_engine_waiting_for_resources_says_what_serve_says(monkeypatch, caplog):
    """A replica that cannot be placed leaves the app DEPLOYING with no end: the wait reports
    Serve's note on it while waiting and names it in the timeout, not only "did not serve"."""
    from types import SimpleNamespace

    from ray import serve

    from cobalt.serve import engine

    pending = "has 1 replicas that have taken more than 30s to be scheduled. Resources required: {'CPU': 1}"
    app = SimpleNamespace(
        status="ApplicationStatus.DEPLOYING",
        message="",
        deployments={
            "OpenAiIngress": SimpleNamespace(message=pending),
            "LLMServer:m": SimpleNamespace(message=""),
        },
    )
    monkeypatch.setattr(serve, "status", lambda: SimpleNamespace(applications={"engine": app}))
    monkeypatch.setattr(engine, "served_models", lambda api_base: [])
    monkeypatch.setattr(engine.time, "sleep", lambda s: None)
    with caplog.at_level("INFO", logger="cobalt.serve.engine"), pytest.raises(TimeoutError) as error:
        engine.wait_until_served(
            "http://127.0.0.1:1/v1", "m", timeout_s=0.05, app_name="engine", report_every_s=0
        )
    assert f"OpenAiIngress: {pending}" in str(error.value) and "LLMServer" not in str(error.value)
    assert "still deploying 'engine': OpenAiIngress" in caplog.text


# --- typed configs: a wrong value is an error naming the file, the key and the expected type -------

WRONG_VALUES = {
    "sandbox": [
        ("warm", '"no"', "warm must be a boolean"),
        ("slots", "2.5", "slots must be an integer"),
        ("memory_mb", '"1024"', "memory_mb must be an integer"),
        ("request_memory_mb", "[1]", "request_memory_mb must be an integer or null"),
        ("test_timeout_s", "true", "test_timeout_s must be a number"),
        ("slots", "0", "sandbox.slots must be above 0"),
        ("max_processes", "-1", "sandbox.max_processes must be at least 0"),
    ],
    "serve": [
        ("num_replicas", '"2"', "num_replicas must be a number or 'auto', not '2'"),
        ("route_prefix", "7", "route_prefix must be a string or null"),
        ("num_replicas", "0", "serve.num_replicas must be at least 1"),
    ],
    "client": [
        ("retry_attempts", "1.5", "retry_attempts must be an integer"),
        ("retry_deadline_s", '"2m"', "retry_deadline_s must be a number"),
    ],
}


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [(section, *case) for section, cases in WRONG_VALUES.items() for case in cases],
)
def test_a_wrong_value_in_the_evaluator_config_names_the_file_and_key(tmp_path, section, key, value, message):
    from cobalt.serve.client import load_client_config
    from cobalt.serve.evaluator import load_evaluator_config

    path = tmp_path / "mine.yaml"
    path.write_text(f"extends: {Path('configs/evaluator.yaml').resolve()}\n{section}:\n  {key}: {value}\n")
    load = load_client_config if section == "client" else load_evaluator_config
    with pytest.raises(ConfigError) as raised:
        load(str(path))
    assert str(raised.value).startswith(f"{path}: {section}: "), raised.value
    assert message in str(raised.value), raised.value


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_think_tokens", '"4096"', "max_think_tokens must be an integer"),
        ("keywords", "[1, 2]", "keywords must be a tuple"),
        ("fallback_tokenizer", "false", "fallback_tokenizer must be a string or null"),
        ("call_timeout_s", "0", "reward.call_timeout_s must be above 0"),
    ],
)
def test_a_wrong_value_in_the_reward_config_names_the_file_and_key(tmp_path, key, value, message):
    from cobalt.reward.config import reward_config

    path = tmp_path / "reward.yaml"
    path.write_text(f"extends: {Path('configs/reward.yaml').resolve()}\n{key}: {value}\n")
    with pytest.raises(ConfigError, match=f"^{path}: ") as raised:
        reward_config(str(path))
    assert message in str(raised.value), raised.value


def test_every_shipped_config_has_the_right_types():
    from cobalt.common.config import from_dict
    from cobalt.recipes.paper.reproduce import PaperConfig
    from cobalt.recipes.quickstart.run import QuickstartConfig
    from cobalt.reward.config import reward_config
    from cobalt.serve.client import load_client_config
    from cobalt.serve.engine import load_engine_config
    from cobalt.serve.evaluator import load_evaluator_config

    for path in sorted(Path("configs").glob("evaluator*.yaml")):
        load_evaluator_config(str(path)), load_client_config(str(path))
    reward_config("reward")
    for name in ("engine", "engine_paper"):
        load_engine_config(name)
    for name in (
        "quickstart",
        "quickstart_ci",
        "learn",
        "generalize",
        "generalize_prereg",
        "generalize_smoke",
    ):
        from_dict(QuickstartConfig, load_config(name), source=name)
    for name in ("paper", "paper_rehearsal"):
        from_dict(PaperConfig, load_config(name), source=name)


def test_null_in_a_config_means_not_set(tmp_path):
    from cobalt.serve.evaluator import load_evaluator_config

    path = tmp_path / "unset.yaml"
    path.write_text("sandbox:\n  test_timeout_s: null\n  request_cpu_s: null\nserve:\n  route_prefix: null\n")
    sandbox, serve = load_evaluator_config(str(path))
    assert (sandbox.test_timeout_s, sandbox.request_cpu_s, serve.route_prefix) == (4.0, None, None)


def test_yaml_booleans_still_spell_the_sandbox_switches(tmp_path):
    from cobalt.serve.evaluator import load_evaluator_config

    path = tmp_path / "switches.yaml"
    path.write_text("sandbox:\n  cgroups: off\n  site: on\n  test_timeout_s: 3\n")
    sandbox, _ = load_evaluator_config(str(path))
    assert (sandbox.cgroups, sandbox.site, sandbox.test_timeout_s) == ("off", "on", 3)


def test_the_reward_managers_settings_take_omegaconf_lists_and_name_a_wrong_type():
    omegaconf = pytest.importorskip("omegaconf")
    from cobalt.train.reward_manager import RewardManagerSettings

    def settings(values):
        return RewardManagerSettings.from_verl_config(
            omegaconf.OmegaConf.create({"reward": {"reward_kwargs": {"cobalt": values}}})
        )

    assert settings({"val_splits": ["test"], "max_in_flight": 8}).val_splits == ("test",)
    with pytest.raises(ConfigError, match=r"cobalt: max_in_flight must be an integer, not '8'"):
        settings({"max_in_flight": "8"})


def test_a_config_name_that_names_no_file_gets_the_nearest_names():
    from cobalt.common.config import load_config
    from cobalt.common.errors import ConfigError
    from cobalt.train.profile import load_profile

    with pytest.raises(ConfigError, match=r"config file does not exist; did you mean multi_turn_qwen3_8b\?"):
        load_profile("Multi_Turn_Qwen3_8B")  # the wrong case
    with pytest.raises(ConfigError, match=r"did you mean multi_turn_qwen3_8b\?"):
        load_profile("multi_turn_qwen3")
    with pytest.raises(ConfigError, match=r"holds: .*\bpaper\b"):
        load_config("zzzz")
