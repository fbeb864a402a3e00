"""The design's plan (python -m cobalt.design --plan): runs, their state and the wall-time estimate."""

from __future__ import annotations

import pytest

from cobalt.recipes.design.design import load_design, main, plan, sizes


def test_the_plan_has_every_arm_and_seed_with_estimates_from_the_cost_coefficients(tmp_path):
    design = load_design("generalize_design")
    p = plan(design, tmp_path)
    cost = design["cost"]
    assert p["evaluated_instances"] == 600 + 180
    assert p["optimizer_steps"] == {"trained": 30, "control": 30}  # comparable steps
    names = [r["run"] for r in p["runs"]]
    assert names == [f"{arm}-seed{s}" for arm in ("trained", "control", "repair") for s in (0, 1, 2)]
    evaluation = 780 * cost["eval_instance_s"]
    by_name = {r["run"]: r for r in p["runs"]}
    trained, control = by_name["trained-seed1"], by_name["control-seed0"]
    assert trained["seconds"] == round(cost["per_run_s"] + 30 * cost["grpo_step_s"] + evaluation)
    assert control["seconds"] == round(cost["per_run_s"] + 30 * cost["sft_step_s"] + evaluation)
    # trained seed 0 makes the base (warm-up, offline trajectories, base evaluation) once
    assert by_name["trained-seed0"]["seconds"] == pytest.approx(
        trained["seconds"] + cost["warmup_s"] + cost["offline_s"] + evaluation, abs=1
    )  # (each rounded to the second)
    assert p["total_s"] == round(cost["setup_s"] + sum(p["arms_s"].values()))
    assert p["remaining_s"] == p["total_s"] - cost["setup_s"] == sum(r["seconds"] for r in p["runs"])
    # every run but the one that makes the base takes it (--base-run): all arms compare with one base
    quickstart = "bash scripts/quickstart.sh --profile generalize_prereg"
    base = tmp_path / "runs/design/trained-seed0"
    assert by_name["trained-seed0"]["command"] == (
        f"{quickstart} --arm trained --train-seed 0 --run-dir {base}"
    )
    assert trained["command"] == (
        f"{quickstart} --arm trained --train-seed 1 --base-run {base} --run-dir {tmp_path}/runs/design/trained-seed1"
    )
    assert control["command"] == (
        f"{quickstart} --arm control --train-seed 0 --base-run {base} --run-dir {tmp_path}/runs/design/control-seed0"
    )


def test_the_plans_quickstart_commands_parse_with_their_arm_seed_and_base(tmp_path, monkeypatch, capsys):
    """Each printed command is one the quickstart accepts, with the arm, seed and base it names."""
    import json
    import shlex

    from cobalt.recipes.quickstart import run as quickstart

    for r in plan(load_design("generalize_design"), tmp_path)["runs"]:
        if r["arm"] == "repair":
            continue
        words = shlex.split(r["command"])
        assert words[:2] == ["bash", "scripts/quickstart.sh"]
        run_dir = words.index("--run-dir")
        assert quickstart.main([*words[2:run_dir], "--dry-run"]) == 0
        settings = json.loads(capsys.readouterr().out)["settings"]
        assert (settings["arm"], settings["train_seed"]) == (r["arm"], int(r["run"][-1]))
        shared = None if r["run"] == "trained-seed0" else str(tmp_path / "runs/design/trained-seed0")
        assert settings["base_run"] == shared


def test_each_trained_seed_has_its_placebo_repair_command(tmp_path):
    """The repair's command reads the trained seed's held-out and out-of-family evaluations and its
    GRPO model, and samples at the profile's settings, repair.samples per failure and arm."""
    import shlex

    from cobalt.eval.repair_run import parser
    from cobalt.recipes.design.design import run_profile_config

    design = load_design("generalize_design")
    cfg = run_profile_config(design)
    repair = next(r for r in plan(design, tmp_path)["runs"] if r["run"] == "repair-seed2")
    assert not repair["done"]
    words = shlex.split(repair["command"])
    assert words[:3] == ["python", "-m", "cobalt.eval.repair_run"]
    args = parser().parse_args(words[3:])
    trained = tmp_path / "runs/design/trained-seed2"
    assert args.input_file == [
        str(trained / "eval_trained/eval.jsonl"),
        str(trained / "eval_trained_families/eval.jsonl"),
    ]
    assert args.output_file == str(tmp_path / "runs/design/repair-seed2/repair.jsonl")
    assert args.model == str(trained / f"checkpoints/global_step_{cfg.grpo_steps}/actor/huggingface")
    assert args.samples == design["repair"]["samples"] == 4
    s = cfg.sampling
    assert (args.temperature, args.top_p, args.max_tokens) == (s["temperature"], s["top_p"], s["max_tokens"])
    assert args.engine_config == cfg.engine_config
    # started: the time left shrinks with the failures already written
    output = tmp_path / "runs/design/repair-seed2/repair.jsonl"
    output.parent.mkdir(parents=True)
    failures = 780 * design["repair"]["failure_share"]
    output.write_text('{"id": "a"}\n' * round(failures / 4))
    repair = next(r for r in plan(design, tmp_path)["runs"] if r["run"] == "repair-seed2")
    assert repair["state"] == "started"
    assert repair["remaining_s"] == pytest.approx(repair["seconds"] * 0.75, rel=0.01)
    # done once the runner has written its summary (after the last problem)
    (tmp_path / "runs/design/repair-seed2/repair.summary.json").write_text("{}")
    repair = next(r for r in plan(design, tmp_path)["runs"] if r["run"] == "repair-seed2")
    assert repair["done"]


def test_the_runs_profile_is_the_designs_profile_with_its_overrides_and_control(tmp_path):
    """The commands' profile (run_profile) must be the design: checked, and a difference named."""
    from cobalt.recipes.design.design import run_profile_config

    design = load_design("generalize_design")
    cfg = run_profile_config(design)
    assert cfg.heldout_problems == 600 and cfg.procedural["heldout_families"] == 180
    assert cfg.control == design["control"] and cfg.arm == "trained" and cfg.train_seed is None
    changed = {**design, "control": {**design["control"], "epochs": 2}}
    with pytest.raises(ValueError, match=r"generalize_prereg.yaml: control differ from the design's profile"):
        run_profile_config(changed)
    changed = {**design, "overrides": {**design["overrides"], "heldout_problems": 300}}
    with pytest.raises(ValueError, match=r"generalize_prereg.yaml: heldout_problems differ"):
        plan(changed, tmp_path)


def test_a_finished_run_is_done_and_leaves_the_remaining_time(tmp_path):
    """A run is done once its report's Markdown, written last, exists (as the quickstart's resume
    decides): a report.json alone is a report interrupted half-way."""
    design = load_design("generalize_design")
    before = plan(design, tmp_path)
    report = tmp_path / design["runs_dir"] / "control-seed1/report/report.json"
    report.parent.mkdir(parents=True)
    report.write_text("{}")
    assert not [r for r in plan(design, tmp_path)["runs"] if r["done"]]
    report.with_name("report.md").write_text("")
    after = plan(design, tmp_path)
    done = [r for r in after["runs"] if r["done"]]
    assert [r["run"] for r in done] == ["control-seed1"]
    assert after["remaining_s"] == before["remaining_s"] - done[0]["seconds"]


def test_a_started_run_is_shown_and_a_made_base_leaves_only_the_rest_of_its_run(tmp_path, capsys):
    design = load_design("generalize_design")
    before = {r["run"]: r for r in plan(design, tmp_path)["runs"]}
    assert {r["state"] for r in before.values()} == {"to run"}
    base_run = tmp_path / design["runs_dir"] / "trained-seed0"
    base_run.mkdir(parents=True)
    (tmp_path / design["runs_dir"] / "control-seed0").mkdir()
    (base_run / "base.json").write_text("{}")
    p = plan(design, tmp_path)
    after = {r["run"]: r for r in p["runs"]}
    assert after["control-seed0"]["state"] == after["trained-seed0"]["state"] == "started"
    assert after["control-seed0"]["remaining_s"] == before["control-seed0"]["seconds"]
    # the base is made: trained seed 0 has as much left as a seed that takes the base
    assert after["trained-seed0"]["remaining_s"] == after["trained-seed1"]["seconds"]
    assert p["remaining_s"] == sum(r["remaining_s"] for r in after.values())
    assert main(["--plan", "--root", str(tmp_path)]) == 0
    assert (
        f"trained-seed0    started  {after['trained-seed0']['seconds'] / 3600:.2f} h"
        in capsys.readouterr().out
    )


def test_a_started_base_is_credited_with_its_sft_start_and_its_evaluation_answers(tmp_path):
    design = load_design("design_ft")
    z = sizes(design, tmp_path)
    run = tmp_path / design["runs_dir"] / "cobalt-seed0"
    run.mkdir(parents=True)
    left = lambda: {r["run"]: r for r in plan(design, tmp_path)["runs"]}["cobalt-seed0"]["remaining_s"]  # noqa: E731
    whole = left()
    (run / "models/warm").mkdir(parents=True)
    (run / "models/warm/warm_up.json").write_text("{}")
    assert whole - left() == pytest.approx(z.cost["warmup_s"], abs=1)
    (run / "eval_base").mkdir()
    (run / "eval_base/single.jsonl").write_text("{}\n" * z.instances)  # half the answers written
    assert whole - left() == pytest.approx(z.cost["warmup_s"] + (z.base_s - z.cost["warmup_s"]) / 2, abs=1)


def test_the_command_line_only_plans(tmp_path, capsys):
    assert main(["--plan", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "whole design" in out and "trained-seed2" in out
    assert not (tmp_path / "runs").exists()  # nothing written
    with pytest.raises(SystemExit):
        main([])  # --plan or --report: there is no run mode


def test_the_report_command_names_the_runs_still_missing_before_any_verdict(tmp_path, capsys):
    assert main(["--report", "--root", str(tmp_path)]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert (
        first_line.startswith("No verdict")
        and "trained-seed0" in first_line
        and "control-seed2" in first_line
    )
    written = tmp_path / "runs/design/design_report.md"
    assert written.read_text().splitlines()[0] == first_line


def test_the_smoke_design_is_the_designs_chain_at_a_small_size(tmp_path):
    """configs/design_smoke.yaml: the same arms, shared base and repair on generalize_smoke."""
    p = plan(load_design("design_smoke"), tmp_path)
    assert [r["run"] for r in p["runs"]] == [
        "trained-seed0",
        "trained-seed1",
        "control-seed0",
        "control-seed1",
        "repair-seed0",
    ]
    assert p["evaluated_instances"] == 24 + 12 and p["optimizer_steps"]["control"] == 3
    assert all("--base-run" in r["command"] for r in p["runs"][1:4])


def test_a_design_with_fewer_repair_samples_than_the_runner_takes_is_refused(tmp_path):
    import yaml

    design = load_design("design_smoke")
    design["repair"]["samples"] = 2
    (tmp_path / "few.yaml").write_text(yaml.safe_dump(design))
    with pytest.raises(
        ValueError, match=r"few\.yaml: repair\.samples: 2; the repair runner takes at least 4"
    ):
        load_design(tmp_path / "few.yaml")


def test_a_run_profile_given_as_the_design_is_one_line_not_a_traceback(capsys):
    """``--config generalize_prereg`` names a run's profile, not a design (issue 59)."""
    assert main(["--config", "generalize_prereg", "--plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and err.endswith(
        "generalize_prereg.yaml is not a design (it has no profile, run_profile, seeds, runs_dir, repair, cost): "
        "--config takes a design such as generalize_design, design_ft or design_smoke"
    )
    assert main(["--config", "no_such_design", "--plan"]) == 2
    assert "config file does not exist" in capsys.readouterr().err


# ------------------------------------------------------------------ the second design (design_ft)
def ft_plan(tmp_path, **changes) -> dict:
    import yaml

    design = {**load_design("design_ft"), "budget_h": 100, **changes}
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(design))
    return plan(load_design(path), tmp_path)


def test_each_seed_starts_from_its_own_sft_model_which_every_arm_of_that_seed_takes(tmp_path, capsys):
    """start: per_seed: the cobalt run of seed k makes that seed's start (SFT seeded by k, its
    evaluation, its trajectories); GRPO-MT seed k takes it with --base-run; the commands parse."""
    import json
    import shlex

    from cobalt.recipes.quickstart import run as quickstart

    p = ft_plan(tmp_path)
    names = [r["run"] for r in p["runs"]]
    assert names == [
        *[f"{arm}-seed{s}" for arm in ("cobalt", "grpo_mt") for s in (0, 1, 2)],
        *[f"repair_{arm}-seed{s}" for arm in ("cobalt", "grpo_mt") for s in (0, 1, 2)],
    ]
    assert p["optimizer_steps"] == {"cobalt": 30, "grpo_mt": 30}  # the same dose
    by_name = {r["run"]: r for r in p["runs"]}
    for s in (0, 1, 2):
        cobalt, grpo_mt = by_name[f"cobalt-seed{s}"], by_name[f"grpo_mt-seed{s}"]
        assert "--base-run" not in cobalt["command"]
        assert f"--base-run {tmp_path}/runs/design_ft/cobalt-seed{s} " in grpo_mt["command"]
        settings = {}
        for r in (cobalt, grpo_mt):
            words = shlex.split(r["command"])
            assert quickstart.main([*words[2 : words.index("--run-dir")], "--dry-run"]) == 0
            printed = json.loads(capsys.readouterr().out)
            settings[r["run"]] = printed
            assert printed["training"]["warm_up_seed"] == s == printed["settings"]["train_seed"]
        first, second = settings.values()
        assert first["settings"]["train_profile"] == "generalize"
        assert second["settings"]["train_profile"] == "grpo_mt_generalize"
        assert by_name[f"repair_grpo_mt-seed{s}"]["command"].startswith(
            f"python -m cobalt.eval.repair_run -i {tmp_path}/runs/design_ft/grpo_mt-seed{s}/eval_trained/eval.jsonl"
        )
    cost = load_design("design_ft")["cost"]
    base = cost["warmup_s"] + cost["trajectories_s"] + p["evaluated_instances"] * cost["eval_instance_s"]
    assert by_name["cobalt-seed1"]["seconds"] - round(base) == pytest.approx(
        by_name["grpo_mt-seed1"]["seconds"] + 30 * (cost["grpo_step_s"] - cost["grpo_mt_step_s"]), abs=1
    )


def test_cobalt_and_grpo_mt_share_training_problems_decoding_and_evaluation_instances():
    """Everything that decides the data, the start, the decoding and the evaluation is one setting
    for both arms (the base they share): only what follows the base may differ."""
    import dataclasses

    from cobalt.recipes.quickstart.base import AFTER_THE_BASE, base_settings
    from cobalt.recipes.quickstart.run import with_method

    cfg = dataclasses.replace(sizes(load_design("design_ft"), ".").cfg, train_seed=1)
    cobalt, grpo_mt = with_method(cfg, "cobalt", False), with_method(cfg, "grpo_mt", False)
    assert base_settings(cobalt) == base_settings(grpo_mt)
    differ = {f.name for f in dataclasses.fields(cfg) if getattr(cobalt, f.name) != getattr(grpo_mt, f.name)}
    assert differ == {"train_profile"} and differ <= AFTER_THE_BASE
    for key in (
        "procedural",
        "train_problems",
        "heldout_problems",
        "sampling",
        "eval_turns",
        "eval_temperature",
    ):
        assert key in base_settings(cobalt)


@pytest.mark.parametrize("design", ["design_ft", "generalize_design"])
def test_each_runs_report_quotes_its_own_designs_preregistration(design):
    """A run's report prints its profile's ``preregistration`` block; the second design's profile
    inherited the first's ("60 problems of 6 held-out families", "300 problems give power 0.97")."""
    from cobalt.recipes.quickstart.report import preregistered_section

    cfg = sizes(load_design(design), ".").cfg
    result = {"problem_set": "heldout", "turn": 3, "alpha": 0.05, "improved": False}
    result["difference"] = {"mean": 0.1, "low": 0.0, "high": 0.2, "p_value": 0.5, "problems": 9}
    text = "\n".join(
        preregistered_section({"config": {"preregistration": cfg.preregistration}, "preregistered": result})
    )
    document = {"design_ft": "preregistration_ft.md", "generalize_design": "preregistration.md"}[design]
    assert f"docs/{document}" in text
    first_designs_figures = ("60 problems", "300 problems")
    assert design == "generalize_design" or not any(figure in text for figure in first_designs_figures)


def test_the_plan_refuses_a_design_over_its_budget_unless_the_design_raises_it(tmp_path, capsys):
    import yaml

    design = load_design("design_ft")
    design["arms"] = {**design["arms"], "verpo_mt": "verpo_mt"}
    design["cost"] = {**design["cost"], "verpo_mt_step_s": 400}
    (tmp_path / "big.yaml").write_text(yaml.safe_dump({**design, "budget_h": 12}))
    assert main(["--plan", "--config", str(tmp_path / "big.yaml"), "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "big.yaml: the design's estimate is" in err and "over its budget of 12 h" in err
    assert "cut an arm (VeRPO-MT first)" in err
    (tmp_path / "raised.yaml").write_text(yaml.safe_dump({**design, "budget_h": 40}))
    assert main(["--plan", "--config", str(tmp_path / "raised.yaml"), "--root", str(tmp_path)]) == 0
    assert "verpo_mt-seed2" in capsys.readouterr().out


def test_the_pilot_is_printed_beside_the_budget_not_counted_in_it(tmp_path, capsys):
    # the pilot is spent before the plan exists: no cut of the plan could pay for it
    import yaml

    design = load_design("design_ft")
    fits = plan(design, tmp_path)
    design["cost"] = {**design["cost"], "pilot_s": fits["budget_h"] * 3600}
    (tmp_path / "long_pilot.yaml").write_text(yaml.safe_dump(design))
    assert main(["--plan", "--config", str(tmp_path / "long_pilot.yaml"), "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert plan(design, tmp_path)["total_s"] == fits["total_s"] <= fits["budget_h"] * 3600
    machine_h = (fits["total_s"] + design["cost"]["pilot_s"]) / 3600
    assert f"outside its budget: with it, {machine_h:.2f} h of machine time" in out


def test_a_design_arm_of_an_unknown_method_or_without_its_steps_cost_is_named(tmp_path):
    import yaml

    design = load_design("design_ft")
    for arms, message in (
        ({"cobalt": "cobalt", "ppo": "ppo"}, r"arms\.ppo: 'ppo'; expected one of"),
        ({"cobalt": "cobalt", "verpo_mt": "verpo_mt"}, r"cost: no 'verpo_mt_step_s' for arm verpo_mt"),
    ):
        (tmp_path / "bad.yaml").write_text(yaml.safe_dump({**design, "arms": arms}))
        with pytest.raises(ValueError, match=message):
            load_design(tmp_path / "bad.yaml")


# ------------------------------------------------------------------ the second design's pilot
def write_eval(path, last_turn_passes: list[bool]):
    """An evaluation file of one greedy sample per problem over 4 turns, solved at the last turn or not."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": f"fam-add_two-20000{i}", "all_pass_rates": [[0.0, 0.0, 0.0, 1.0 if ok else 0.5]]}
        for i, ok in enumerate(last_turn_passes)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_pilot_reads_dev_pass_at_1_by_step_and_chooses_the_best_mean_dose(tmp_path, capsys):
    from cobalt.recipes.design.pilot import choose_dose, dose_curve

    design = load_design("design_ft")
    runs = tmp_path / design["pilot"]["runs_dir"]
    solved = {  # arm: problems solved of 4 at steps 0, 10, 20, 30, 40
        "cobalt": {0: 1, 10: 2, 20: 3, 30: 3, 40: 2},
        "grpo_mt": {0: 1, 10: 1, 20: 2, 30: 3, 40: 4},
    }
    for arm, by_step in solved.items():
        for step, n in by_step.items():
            tag = {0: "eval_base", 40: "eval_trained"}.get(step, f"eval_trained_step{step}")
            write_eval(runs / arm / tag / "eval.jsonl", [i < n for i in range(4)])
    curve = dose_curve(design, tmp_path)
    assert curve["cobalt"] == {0: 25.0, 10: 50.0, 20: 75.0, 30: 75.0, 40: 50.0}
    # means over the arms: 10: 37.5, 20: 62.5, 30: 75, 40: 75: the tie goes to fewer steps
    assert choose_dose(curve, [10, 20, 30, 40]) == 30
    assert main(["--pilot", "--config", "design_ft", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| cobalt | 25.0 | 50.0 | 75.0 | 75.0 | 50.0 |" in out and "dose: 30 steps" in out
    (runs / "grpo_mt/eval_trained/eval.jsonl").unlink()
    assert choose_dose(dose_curve(design, tmp_path), [10, 20, 30, 40]) is None  # every arm, every step


def test_a_pilot_that_would_evaluate_held_out_data_is_refused(tmp_path):
    import yaml

    from cobalt.recipes.design.pilot import pilot_settings

    (tmp_path / "peek.yaml").write_text(
        yaml.safe_dump({"extends": "generalize_ft_pilot", "procedural": {"evaluate": "heldout"}})
    )
    design = {
        **load_design("design_ft"),
        "pilot": {"profile": str(tmp_path / "peek.yaml"), "seed": 9, "runs_dir": "p"},
    }
    with pytest.raises(
        ValueError, match=r"a pilot evaluates procedural\.evaluate: dev and no held-out family"
    ):
        pilot_settings(design)
    assert pilot_settings(load_design("design_ft")).eval_steps == [10, 20, 30]


def test_the_paper_scale_design_plans_in_gpu_hours_with_the_gpu_profiles_and_engine(tmp_path, capsys):
    """configs/design_ft_paper.yaml: a dry run of the same design at the paper's scale; each command
    names the method's GPU profile and the paper's engine, and the quickstart accepts it."""
    import json
    import shlex

    from cobalt.recipes.quickstart import run as quickstart

    p = plan(load_design("design_ft_paper"), tmp_path)
    assert p["gpus"] == 8 and p["start"] == "shared"
    by_name = {r["run"]: r for r in p["runs"]}
    assert f"--base-run {tmp_path}/runs/design_ft_paper/cobalt-seed0 " in by_name["cobalt-seed2"]["command"]
    taco = tmp_path / "taco.json"
    taco.write_text("[]")
    for arm, profile in (("cobalt", "multi_turn_qwen3_8b"), ("grpo_mt", "grpo_mt_qwen3_8b")):
        words = shlex.split(by_name[f"{arm}-seed1"]["command"])
        assert f"--train-profile {profile} --engine-config engine_paper" in by_name[f"{arm}-seed1"]["command"]
        args = [*words[2 : words.index("--run-dir")], "--problems", str(taco), "--dry-run"]
        assert quickstart.main(args) == 0
        settings = json.loads(capsys.readouterr().out)["settings"]
        assert (settings["train_profile"], settings["engine_config"]) == (profile, "engine_paper")
    assert main(["--plan", "--config", "design_ft_paper", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    gpu_hours = round(p["total_s"] * 8 / 3600)
    assert f"whole design {p['total_s'] / 3600:.2f} h ({gpu_hours:,} GPU-h) with set-up" in out
