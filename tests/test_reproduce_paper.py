"""``scripts/reproduce_paper.sh``: every command of docs/paper.md runs here as written (the input
files being small TACO-verified and LiveCodeBench files made by the test): the dry runs print the
paper's settings, the GPU run stops at once in one line on this GPU-less machine, and the CPU
rehearsal runs the whole chain to a report beside the paper's figures."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import APPS_SAMPLES
from data_fixtures import apps_problems, lcb_file, taco_file

from cobalt.common.jsonl import load_jsonl

ROOT = Path(__file__).resolve().parents[1]
PAPER_DOC = ROOT / "docs/paper.md"
PROFILES = ["multi_turn_qwen3_8b", "multi_turn_r1_distill_llama_8b", "single_turn_r1_distill_llama_8b"]


def documented_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", PAPER_DOC.read_text(), re.S)
    return [
        line for block in blocks for line in block.splitlines() if line.strip() and not line.startswith("#")
    ]


@pytest.fixture
def inputs(tmp_path):
    """The documented file names, as small files of each dataset's own format, in the caller's
    directory (``tmp_path``, where the documented commands run)."""
    taco_file(tmp_path / "taco_verified.json", limit=4)
    lcb_file(tmp_path / "test6.jsonl", limit=3, start=4)  # other problems than TACO's: no overlap
    return tmp_path


def run(
    command: str, cwd: Path, home: Path, timeout: float, extra: list[str] = ()
) -> subprocess.CompletedProcess:
    """A documented command from ``cwd``: ``scripts/...`` is the checkout's, ``COBALT_PROFILE=...``
    a variable of the command, as a shell would read them."""
    words = shlex.split(command)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "CUDA_VISIBLE"))}
    env["HOME"] = str(home)
    while "=" in words[0]:
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    words = [str(ROOT / w) if w.startswith("scripts/") else w for w in words] + list(extra)
    return subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def rehearsal_argv(tmp_path: Path, run_dir: Path) -> list[str]:
    """The rehearsal's command line on tmp_path's taco.jsonl and test6.jsonl."""
    files = ["--taco", str(tmp_path / "taco.jsonl"), "--lcb", str(tmp_path / "test6.jsonl")]
    return ["--rehearse", "--profile", "multi_turn_qwen3_8b", *files, "--run-dir", str(run_dir)]


def test_every_command_of_the_guide_is_one_these_tests_run():
    commands = documented_commands()
    kinds = [classify(c) for c in commands]
    assert None not in kinds, [c for c, k in zip(commands, kinds, strict=True) if k is None]
    assert {"setup dry run", "dry run", "gpu run", "rehearsal"} <= set(kinds)


def classify(command: str) -> str | None:
    """Which test below runs ``command``."""
    if command == "COBALT_PROFILE=gpu bash scripts/setup.sh --dry-run":
        return "setup dry run"
    paper = "bash scripts/reproduce_paper.sh"
    files = "--taco taco_verified.json --lcb test6.jsonl"
    for kind, pattern in (
        ("dry run", f"{paper} --profile (\\S+) {files} --dry-run"),
        ("gpu run", f"{paper} --profile (\\S+) {files}"),
        ("rehearsal", f"{paper} --rehearse --profile (\\S+) {files}"),
    ):
        match = re.fullmatch(pattern, command)
        if match and match.group(1) in PROFILES:
            return kind
    return None


def commands_of(kind: str) -> list[str]:
    return [c for c in documented_commands() if classify(c) == kind]


def test_the_dry_run_prints_the_papers_settings_and_the_gpus_it_needs(inputs, tmp_path):
    (command,) = commands_of("dry run")
    for profile in PROFILES:
        proc = run(command.replace("multi_turn_qwen3_8b", profile), inputs, tmp_path, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        text, last = proc.stdout.rsplit("\n}\n", 1)
        plan = json.loads(text + "\n}")
        chain, grpo = plan["chain"], plan["grpo"]
        assert (chain["trajectory_samples"], chain["trajectory_turns"], chain["bandit_turns"]) == (16, 2, 3)
        assert (chain["eval_samples"], chain["eval_turns"], chain["sampling"]["max_tokens"]) == (16, 8, 6144)
        assert grpo["data.train_batch_size"] == 128 and grpo["actor_rollout_ref.rollout.n"] == 16
        assert grpo["actor_rollout_ref.actor.optim.lr"] == 1e-6 and grpo["algorithm.kl_ctrl.kl_coef"] == 1e-4
        assert grpo["data.max_response_length"] == 6144
        assert plan["gpus"] == {**plan["gpus"], "per_node": 4, "nodes": 1, "total": 4, "detected_here": 0}
        assert plan["single_turn"] == profile.startswith("single_turn")
        # how many of the 8 turns fit: the engine takes the model's own window (not known here: a
        # hub model), so the dry run gives the tokens the last turn needs, from these files' prompts
        budget = plan["context_budget"]
        assert budget["context"] is None and budget["answer_budget"] == 6144 and budget["turns"] == 8
        assert budget["files"]["LiveCodeBench"]["problems"] == 3
        assert budget["files"]["TACO"]["needed_at_last_turn"]["max"] > 8 * budget["per_turn_tokens"] + 6144
        first_line = last.strip().splitlines()[0]  # the preflight's lines follow
        assert first_line == "no GPU here: this run needs 4 (--rehearse runs the chain on CPU)"


def test_the_gpu_run_stops_at_once_in_one_line_without_gpus(inputs, tmp_path):
    (command,) = commands_of("gpu run")
    runs = ROOT / "runs/paper/multi_turn_qwen3_8b"
    before = sorted(runs.iterdir()) if runs.exists() else []
    proc = run(command, inputs, tmp_path, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: multi_turn_qwen3_8b trains on 4 GPUs and this machine offers 0 (detected: no nvidia-smi and no "
        "CUDA_VISIBLE_DEVICES); run on a GPU node, join a cluster with --address, or rehearse on CPU with --rehearse"
    ]
    assert (sorted(runs.iterdir()) if runs.exists() else []) == before  # no run directory made


def test_the_gpu_setup_dry_run_names_the_cuda_stack_and_changes_nothing(tmp_path):
    (command,) = commands_of("setup dry run")
    venv = ROOT / ".venv"
    before = {p.name: p.stat().st_mtime for p in venv.glob(".cobalt-setup-*")}
    proc = run(command, ROOT, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "constraints/gpu.txt" in proc.stdout and "vllm==0.32.0" in proc.stdout
    assert {p.name: p.stat().st_mtime for p in venv.glob(".cobalt-setup-*")} == before


def test_the_papers_figures_in_the_guide_are_the_reports(tmp_path):
    """docs/paper.md's table and configs/paper.yaml (which the report reads) say the same."""
    paper = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())["paper"]
    rows = re.findall(r"^\| `(\w+)` \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", PAPER_DOC.read_text(), re.M)
    assert len(rows) == 2
    for profile, base, cobalt, taco_dev in rows:
        assert paper[profile] == {
            "lcb_base": float(base),
            "lcb_cobalt": float(cobalt),
            "taco_dev": float(taco_dev),
        }


@pytest.fixture
def real_inputs(tmp_path):
    """The documented file names made of the real APPS problems beside the checkout (statements of
    1,500 to 2,200 characters, real tests): two in the TACO-verified file (one trains, one is
    TACO-dev), the third in LiveCodeBench's, so that no training problem is evaluated."""
    if not APPS_SAMPLES.is_dir():
        pytest.skip(f"no real problems at {APPS_SAMPLES}")
    problems = apps_problems(APPS_SAMPLES)
    assert len(problems) >= 3 and min(len(p["question"]) for p in problems) > 1000
    taco_file(tmp_path / "taco_verified.json", problems=[problems[0], problems[2]])
    lcb_file(tmp_path / "test6.jsonl", problems=[problems[1]])
    return tmp_path


@pytest.mark.slow
@pytest.mark.train
@pytest.mark.memory_heavy
@pytest.mark.timeout(3600)  # two chains: COBALT's, then GRPO-MT's from its base; VeRPO-MT's step
def test_the_rehearsal_runs_the_whole_chain_on_real_problems_to_a_report_beside_the_papers_figures(
    real_inputs, tmp_path
):
    """COBALT's chain rehearsed, then GRPO-MT's from its base (check_online_rehearsal), then
    VeRPO-MT's step on GRPO-MT's online rows (check_verpo_mt_step)."""
    (command,) = commands_of("rehearsal")
    run_dir, home = tmp_path / "run", tmp_path / "home"
    home.mkdir()
    proc = run(command, real_inputs, home, timeout=3000, extra=["--run-dir", str(run_dir)])
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    report = json.loads((run_dir / "report/report.json").read_text())
    cfg = yaml.safe_load((ROOT / "configs/paper_rehearsal.yaml").read_text())
    stages = report["stages"]
    for stage in (
        "TACO-verified → problems",
        "LiveCodeBench → problems",
        "perturbed public tests (train)",
        "bandit prompts (trajectories)",
        "bandit prompts (trajectories_perturbed)",
        "perturbed rows mixed in",
        "GRPO",
    ):
        assert stage in stages, sorted(stages)
    commands = report["commands"]
    assert "--rehearse" in commands["grpo"] and "--rehearse-prompts" in commands["grpo"]
    assert "--public_field perturbed_public_test_cases" in commands["trajectories_perturbed_multi"]
    assert f"--turns {cfg['eval_turns']}" in commands["eval_trained_multi"]
    # every problem set evaluated for base and trained, a curve of 1 + eval_turns points each
    lcb = load_jsonl(run_dir / "data/lcb_test6.jsonl")
    assert report["livecodebench"]["pass_at_1"]["base"]["problems"] == len(lcb) == 1
    for key in ("livecodebench", "taco_dev"):
        for model in ("base", "trained"):
            assert len(report[key]["pass_at_1"][model]["pass_at_1"]) == 1 + cfg["eval_turns"]
    # the trained model is the rehearsal step's checkpoint, trained on this run's own prompts
    assert "checkpoints/global_step_1/actor/huggingface" in commands["eval_trained_single"]
    # the step's metrics reached the launcher through the joined cluster: the profile's 4 ranks and
    # 4 rollout replicas, or as many as this machine's memory and cores step well
    ranks = rehearsed_ranks(4)
    step = (run_dir / "logs/grpo.log").read_text(errors="replace").rsplit("rehearsal step: ", 1)[1]
    assert f'"world_size": {ranks}' in step and f'"rollout_replicas": {ranks}' in step, step[:600]
    md = (run_dir / "report/report.md").read_text()
    assert "A rehearsal on CPU" in md and "## Comparability" in md
    # the real statements do not fit the rehearsal's 384 prompt tokens: the length came from the data
    assert "GRPO's step: rehearsal prompt length set from the data" in md, md[:2000]
    # what the rehearsal's step trained on, and what it left out
    assert re.search(r"GRPO's step: rehearsal prompts: \d+ rows of \d+ distinct prompts of \d+", md), md[
        :2000
    ]
    # a rehearsal's setting is not the paper's: its figures are not set beside the rehearsal's numbers
    assert (
        "| LiveCodeBench (test6) | trained | — (model, " in md and "38.5" not in md.split("## Stage times")[0]
    )
    assert report["setting"]["split"] == "deterministic" and report["setting"]["perturbed_mix"] is True
    assert not (home / ".ray").exists()
    # GRPO-MT beside it (issue 47), from this run's problems and base evaluation (--base-run): the
    # check costs its online rows, its GRPO step and the trained model's evaluation only
    check_online_rehearsal(real_inputs, home, tmp_path / "grpo_mt", base_run=run_dir)
    check_verpo_mt_step(home, tmp_path / "grpo_mt/data/verl_online/train.parquet", tmp_path / "verpo_mt")


@pytest.mark.slow
@pytest.mark.train
@pytest.mark.memory_heavy
@pytest.mark.skipif(
    os.environ.get("COBALT_REHEARSE_GRPO_MT_ALONE") != "1",
    reason="CI checks GRPO-MT beside COBALT's rehearsal, from its base; COBALT_REHEARSE_GRPO_MT_ALONE=1 runs "
    "each online method's alone",
)
@pytest.mark.parametrize("method", ["grpo_mt", "verpo_mt"])
def test_an_online_rehearsal_alone_makes_its_own_base(real_inputs, tmp_path, method):
    """An online method's chain from scratch (its own problems and base evaluation): ~15 min on 2 cores."""
    home = tmp_path / "home"
    home.mkdir()
    check_online_rehearsal(real_inputs, home, tmp_path / "run", method=method)


def check_online_rehearsal(
    real_inputs: Path, home: Path, run_dir: Path, base_run: Path | None = None, method: str = "grpo_mt"
):
    """``--rehearse --method grpo_mt`` (or ``verpo_mt``) on the real APPS problems (with ``base_run``:
    taking that run's problems and base evaluation): no trajectories, one online row per training
    problem, one step at its profile's 8 ranks (fewer where memory or cores are short), the same
    evaluation of the trained model as COBALT's."""
    from cobalt.recipes.paper.report import NOT_KNOWN
    from cobalt.train.profile import METHOD_NAMES

    profile = f"{method}_qwen3_8b"
    command = (
        f"bash scripts/reproduce_paper.sh --rehearse --method {method} --profile {profile} "
        "--taco taco_verified.json --lcb test6.jsonl"
    )
    extra = ["--run-dir", str(run_dir), *(["--base-run", str(base_run)] if base_run else [])]
    proc = run(command, real_inputs, home, timeout=3000, extra=extra)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    report = json.loads((run_dir / "report/report.json").read_text())
    stages = report["stages"]
    assert "veRL parquet (online rows, one per problem)" in stages and "GRPO" in stages, sorted(stages)
    assert not [s for s in stages if s.startswith(("bandit prompts", "perturbed public tests (train)"))]
    if base_run:  # taken, not made again: those stages were done already
        assert stages["TACO-verified → problems"] == 0.0, stages  # seconds
    assert not (run_dir / "trajectories").exists()
    commands = report["commands"]
    assert f"--profile {profile}" in commands["grpo"] and "--rehearse-prompts" in commands["grpo"]
    assert "verl_online/train.parquet" in commands["grpo"]
    # 8 ranks where memory and cores hold them (configs/rehearsal.yaml), else fewer after veRL checked the 8
    ranks = rehearsed_ranks(8)
    log = (run_dir / "logs/grpo.log").read_text(errors="replace")
    step = log.rsplit("rehearsal step: ", 1)[1]
    assert f'"world_size": {ranks}' in step and f'"rollout_replicas": {ranks}' in step, step[:600]
    assert ranks == 8 or f"accepts the profile's numbers at its 8 ranks; the step runs on {ranks}" in log
    check_online_step_metrics(run_dir / "checkpoints", method)
    for key in ("livecodebench", "taco_dev"):
        assert len(report[key]["pass_at_1"]["trained"]["pass_at_1"]) == 1 + report["setting"]["eval_turns"]
    md = (run_dir / "report/report.md").read_text()
    assert md.startswith(f"# {METHOD_NAMES[method]}, the paper's chain") and NOT_KNOWN in md
    assert report["setting"]["method"] == method and report["setting"]["perturbed_mix"] is None
    assert not (home / ".ray").exists()


def check_online_step_metrics(checkpoints: Path, method: str) -> dict:
    """The last step's metrics of an online method's rehearsal, as the reward manager logs them."""
    metrics = json.loads((checkpoints / "metrics.jsonl").read_text().splitlines()[-1])["data"]
    assert 1 <= metrics["reward/turns/mean"] <= 3 and "reward/context_cut/mean" in metrics, sorted(metrics)
    assert "reward/evaluator_requests/count" in metrics  # counted as sent (bench/bench_methods.py reads it)
    if method == "verpo_mt":  # the per-turn advantages of the whole batch (the cobalt_sync trainer)
        assert "reward/dense/mean" in metrics and "reward/outcome/mean" in metrics, sorted(metrics)
    return metrics


def check_verpo_mt_step(home: Path, online_rows: Path, out: Path):
    """VeRPO-MT's rehearsal step (issue 58) on the real problems' online rows of GRPO-MT's chain:
    the same loop as GRPO-MT's, its per-turn advantages over the whole batch at its profile's
    shape. The step only: its trained model's evaluation is the same code as GRPO-MT's above."""
    checkpoints = out / "checkpoints"
    command = (
        "bash scripts/train_grpo_multi_turn.sh --profile verpo_mt_qwen3_8b --rehearse "
        f"--rehearse-prompts {online_rows} trainer.default_local_dir={checkpoints}"
    )
    proc = run(command, out.parent, home, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    metrics = check_online_step_metrics(checkpoints, "verpo_mt")
    ranks = rehearsed_ranks(8)
    assert metrics["trainer/world_size"] == metrics["trainer/rollout_replicas"] == ranks, metrics
    assert (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == "1"
    assert (checkpoints / "global_step_1/actor/huggingface/config.json").is_file()
    assert not (home / ".ray").exists()


def rehearsed_ranks(profile_ranks: int) -> int:
    """The ranks a rehearsal of a profile of ``profile_ranks`` steps on, on this machine."""
    from cobalt.common.config import load_config
    from cobalt.train.rehearsal import machine_cores, machine_memory_gib, ranks_that_fit

    per_rank = load_config("rehearsal")["memory_per_rank_gib"]
    return ranks_that_fit(profile_ranks, machine_memory_gib(), per_rank, machine_cores())


def test_the_chains_head_is_sized_for_the_profile_and_a_gpu_run_checks_the_gpus_first(monkeypatch):
    from cobalt.common.config import from_dict, load_config
    from cobalt.pipeline.stages import Run
    from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, head_size, missing_gpus
    from cobalt.train import rehearsal as rehearsal_plan

    monkeypatch.setattr(rehearsal_plan, "machine_memory_gib", lambda: 24.0)
    monkeypatch.setattr(rehearsal_plan, "machine_cores", lambda: 8)

    rehearsal = from_dict(PaperConfig, load_config("paper_rehearsal"))
    gpu = from_dict(PaperConfig, load_config("paper"))
    inputs = Inputs("multi_turn_qwen3_8b", "t", "l")
    # a rehearsal's head: the fake GPUs and CPUs the launcher's own head would have (4 ranks)
    assert head_size(Run(Path("unused"), rehearsal, inputs.profile), inputs)[:2] == (24 + 3 * 4, 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert missing_gpus(gpu, inputs) is None
    assert head_size(Run(Path("unused"), gpu, inputs.profile), inputs)[1] == 4
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert "trains on 4 GPUs and this machine offers 2" in missing_gpus(gpu, inputs)
    assert missing_gpus(rehearsal, inputs) is None  # a rehearsal needs none
    assert missing_gpus(gpu, Inputs("multi_turn_qwen3_8b", "t", "l", address="127.0.0.1:1")) is None


def test_released_processed_files_enter_the_chain_without_reprocessing(tmp_path):
    """The authors' released layout: TACO already processed into problem records (split as
    preproc_taco.py splits) and a perturbed validation set used as TACO-dev as it is."""
    from cobalt.common.config import from_dict, load_config
    from cobalt.common.jsonl import load_jsonl, write_jsonl
    from cobalt.data.embedded import problem_records
    from cobalt.data.perturb import perturb_records
    from cobalt.pipeline.stages import Run
    from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, problems, refuse_overlap, split_of

    records = problem_records()
    write_jsonl(tmp_path / "taco_cobalt.jsonl", records[:12])
    ptb, _ = perturb_records(enumerate(records[12:15], start=1))
    write_jsonl(tmp_path / "taco_cobalt_ptb.jsonl", ptb)
    lcb_file(tmp_path / "test6.jsonl", limit=2, start=20)
    cfg = dataclasses.replace(from_dict(PaperConfig, load_config("paper_rehearsal")), max_problems=None)
    run = Run(tmp_path / "run", cfg, "multi_turn_qwen3_8b")
    inputs = Inputs(
        "multi_turn_qwen3_8b",
        str(tmp_path / "taco_cobalt.jsonl"),
        str(tmp_path / "test6.jsonl"),
        taco_dev=str(tmp_path / "taco_cobalt_ptb.jsonl"),
    )
    files = problems(run, inputs)
    assert "TACO-verified → problems" not in run.state and "processed TACO → train / dev" not in run.state
    # the released train file as given: every problem, in its order, none moved to dev
    assert [r["id"] for r in load_jsonl(files["train"])] == [r["id"] for r in records[:12]]
    assert [r["id"] for r in load_jsonl(files["dev"])] == [r["id"] for r in ptb]
    assert split_of(inputs) == "released"
    assert refuse_overlap(run, inputs) == []  # none of the evaluation problems is trained on
    assert_checked_problems_are_the_chains(cfg, inputs, files)
    assert files["dev_perturbed"] == tmp_path / "taco_cobalt_ptb.jsonl"  # used as released
    assert "perturbed public tests (dev)" not in run.state and "perturbed public tests (train)" in run.state
    assert all("perturbed_public_test_cases" in r for r in load_jsonl(files["train_perturbed"]))


def assert_checked_problems_are_the_chains(cfg, inputs, files: dict) -> None:
    """The overlap check, which reads the input files before any stage, compares the very
    problems the stages then train on and evaluate, in their order."""
    from cobalt.data.overlap import chain_problems

    train, evaluations = chain_problems(
        inputs.taco,
        inputs.lcb,
        taco_dev=inputs.taco_dev,
        dev_ratio=cfg.taco_dev_ratio,
        max_problems=cfg.max_problems,
    )
    checked = {"train": train, "dev": evaluations["TACO-dev"], "lcb": evaluations["LiveCodeBench"]}
    for name, problems in checked.items():
        assert [p.id for p in problems] == [str(r["id"]) for r in load_jsonl(files[name])], name


def test_the_overlap_check_reads_the_problems_raw_taco_verified_gives_the_chain(tmp_path):
    """Raw TACO-verified (one problem the filters drop) cut to 3 problems a set: the check's
    training and evaluation problems are those the TACO stage's split and the cut give."""
    from cobalt.common.config import from_dict, load_config
    from cobalt.data.embedded import load_problems
    from cobalt.pipeline.stages import Run
    from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, problems

    raw = load_problems()[:10]
    raw[4] = {**raw[4], "hidden_tests": {"inputs": [], "outputs": []}}  # fewer than 8 tests: dropped
    taco_file(tmp_path / "taco.jsonl", problems=raw)
    lcb_file(tmp_path / "test6.jsonl", limit=4, start=20)
    cfg = dataclasses.replace(from_dict(PaperConfig, load_config("paper_rehearsal")), max_problems=3)
    inputs = Inputs("multi_turn_qwen3_8b", str(tmp_path / "taco.jsonl"), str(tmp_path / "test6.jsonl"))
    files = problems(Run(tmp_path / "run", cfg, "multi_turn_qwen3_8b"), inputs)
    assert len(load_jsonl(tmp_path / "run/data/taco/taco_verified_filtered.jsonl")) == 9
    assert_checked_problems_are_the_chains(cfg, inputs, files)


@pytest.mark.parametrize("planted", ["TACO-dev", "LiveCodeBench"])
def test_a_training_problem_that_is_also_evaluated_stops_the_run_before_its_first_expensive_stage(
    tmp_path, capsys, monkeypatch, planted
):
    """The authors' layout (released train and perturbed dev) with evaluation problems planted in
    training under ids of their own (one of LiveCodeBench's; or 8 of TACO-dev's, 2 of them also
    LiveCodeBench's): the run stops in
    one line naming the ids on each side (the first 8 pairs, then a count) and the file that lists
    every pair, written first, before the base model is even exported."""
    from cobalt.common.jsonl import write_jsonl
    from cobalt.data.embedded import problem_records
    from cobalt.data.perturb import perturb_records
    from cobalt.recipes.paper import reproduce

    records = problem_records()
    train = records[:6]
    dev, _ = perturb_records(enumerate(records[6:15], start=1))
    lcb_file(tmp_path / "test6.jsonl", limit=2, start=20)
    if planted == "TACO-dev":  # 8 trained (the rehearsal's cut), the first 2 also LiveCodeBench's
        train = [{**d, "id": f"train-planted-{i}"} for i, d in enumerate(dev[:8])] + train
        lcb_file(tmp_path / "test6.jsonl", start=6, limit=2)
        expected = f"TACO-dev: train train-planted-1 = {dev[1]['id']} (statement+tests)"
        pairs = {(f"train-planted-{i}", d["id"]) for i, d in enumerate(dev[:8])}
        pairs |= {("train-planted-0", "lcb-0000"), ("train-planted-1", "lcb-0001")}
    else:
        train.append({**records[21], "id": "train-planted"})
        expected = "LiveCodeBench: train train-planted = lcb-0001 (statement"
        pairs = {("train-planted", "lcb-0001")}
    write_jsonl(tmp_path / "train.jsonl", train)
    write_jsonl(tmp_path / "ptb.jsonl", dev)
    reached = []
    monkeypatch.setattr(reproduce, "base_model", lambda run, inputs: reached.append(1) or 1 / 0)
    argv = [
        "--rehearse",
        "--profile",
        "multi_turn_qwen3_8b",
        "--taco",
        str(tmp_path / "train.jsonl"),
        "--taco-dev",
        str(tmp_path / "ptb.jsonl"),
        "--lcb",
        str(tmp_path / "test6.jsonl"),
        "--run-dir",
        str(tmp_path / "run"),
    ]
    assert reproduce.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0], err
    assert "--allow-overlap" in err[0] and reached == []
    assert not (tmp_path / "run/trajectories").exists()
    record = tmp_path / "run/data/overlap.json"
    assert f"all {len(pairs)} pair(s) in {record}" in err[0] and ("; and 1 more" in err[0]) == (
        len(pairs) == 9
    )
    assert {(o["train_id"], o["eval_id"]) for o in json.loads(record.read_text())["overlaps"]} == pairs


def test_livecodebench_statements_as_shipped_in_raw_taco_stop_the_rehearsal_before_its_first_stage(
    tmp_path, capsys, monkeypatch
):
    """A TACO-verified file carrying three LiveCodeBench problems as that dataset ships them
    (one statement verbatim, one re-spaced, one reworded with every shipped test, 26 of them):
    the rehearsal stops before the TACO stage (which runs every reference solution), names all
    three, and has written every pair to data/overlap.json, which the error names."""
    from data_fixtures import plant_lcb_copies

    from cobalt.recipes.paper import reproduce

    planted = plant_lcb_copies(tmp_path)
    run_dir = tmp_path / "run"
    monkeypatch.setattr(reproduce, "base_model", lambda run, inputs: 1 / 0)  # past the stages
    argv = rehearsal_argv(tmp_path, str(run_dir))
    assert reproduce.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: 3 training problem(s) of "), err
    assert all(f"= {lcb_id} (" in err[0] for lcb_id in planted), err[0]
    assert f"in {run_dir / 'data/overlap.json'}" in err[0] and "--allow-overlap" in err[0]
    record = json.loads((run_dir / "data/overlap.json").read_text())
    assert sorted(o["eval_id"] for o in record["overlaps"]) == planted and record["allowed"] is False
    hows = {o["eval_id"]: o["how"] for o in record["overlaps"]}
    assert hows == {"lcb-0000": "statement", "lcb-0001": "statement", "lcb-0002": "tests"}
    assert not (run_dir / "data/taco").exists() and not (run_dir / "logs/taco.log").exists()


def one_test_eight_times(problem: dict) -> dict:
    first = {key: problem["public_tests"][key][:1] * 8 for key in ("inputs", "outputs")}
    return {**problem, "public_tests": first, "hidden_tests": {"inputs": [], "outputs": []}}


@pytest.mark.parametrize(
    ("emptied", "expected"),
    [
        (lambda p: {**p, "hidden_tests": {"inputs": [], "outputs": []}}, "taco_verified_filtered_train"),
        (one_test_eight_times, "taco_train_perturbed.jsonl: no train_perturbed problems"),
    ],
    ids=["fewer than 8 tests", "one distinct public output"],
)
def test_a_problem_set_the_filters_emptied_stops_the_run_after_the_problems(
    tmp_path, capsys, monkeypatch, emptied, expected
):
    """TACO-verified problems with fewer than 8 tests are all dropped, and those whose public
    tests have one output cannot be perturbed: the run stops in one line naming the empty file (it
    went on, skipped every stage on the empty input and failed at the bandit prompts, far from the
    cause)."""
    from cobalt.data.embedded import load_problems
    from cobalt.recipes.paper import reproduce

    taco_file(tmp_path / "taco.jsonl", problems=[emptied(p) for p in load_problems()[:4]])
    lcb_file(tmp_path / "test6.jsonl", limit=2, start=20)
    reached = []
    monkeypatch.setattr(reproduce, "base_model", lambda run, inputs: reached.append(1) or 1 / 0)
    argv = rehearsal_argv(tmp_path, str(tmp_path / "run"))
    assert reproduce.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert "problems are left after preprocessing (logs/" in err[0] and reached == []


def test_validation_prompts_come_from_problems_never_trained_on(tmp_path, tiny_tokenizer_dir):
    """training_data's real commands (bandit prompts, validation prompts, veRL parquet) on hand-made
    trajectories: the training set's problems t*, TACO-dev's evaluated d*. Validation holds d* only."""
    from data_fixtures import trajectory

    from cobalt.common.config import from_dict, load_config
    from cobalt.common.jsonl import write_jsonl
    from cobalt.pipeline.stages import Run
    from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, training_data

    rates = [[0.0, 0.5, 1.0], [0.0, 0.0, 1.0], [0.5, 1.0, 1.0], [0.0, 0.2, 0.4]]
    write_jsonl(tmp_path / "train_eval.jsonl", [trajectory(f"t{i}", rates) for i in range(4)])
    write_jsonl(tmp_path / "dev_eval.jsonl", [trajectory(f"d{i}", rates) for i in range(3)])
    cfg = from_dict(PaperConfig, load_config("paper_rehearsal"))
    run = Run(tmp_path / "run", cfg, "multi_turn_qwen3_8b")
    inputs = Inputs("multi_turn_qwen3_8b", "unused", "unused")
    train_file = training_data(
        run,
        inputs,
        {},
        {"trajectories": tmp_path / "train_eval.jsonl"},
        str(tiny_tokenizer_dir),
        tmp_path / "dev_eval.jsonl",
    )
    trained = {r["example_id"] for r in load_jsonl(run.root / "data/bandit_trajectories.jsonl")}
    validation = [r["example_id"] for r in load_jsonl(run.root / "data/bandit_validation.jsonl")]
    assert trained == {"t0", "t1", "t2", "t3"} and train_file.exists()
    assert validation and set(validation) <= {"d0", "d1", "d2"}, validation


def test_given_trajectories_keep_the_perturbed_mix_and_without_it_the_setting_says_it_is_absent(
    tmp_path, tiny_tokenizer_dir
):
    """--trajectories with --trajectories-perturbed: both enter the bandit prompts and the perturbed
    rows are mixed in (real commands); with --trajectories alone none are, and data/setting.json,
    which the report reads, says so."""
    import pandas as pd
    from data_fixtures import trajectory

    from cobalt.common.config import from_dict, load_config
    from cobalt.common.jsonl import write_jsonl
    from cobalt.pipeline.stages import Run
    from cobalt.recipes.paper.reproduce import Inputs, PaperConfig, given, training_data, write_setting

    rates = [[0.0, 0.5, 1.0], [0.0, 0.0, 1.0], [0.5, 1.0, 1.0], [0.0, 0.2, 0.4]]
    write_jsonl(tmp_path / "given.jsonl", [trajectory(f"t{i}", rates) for i in range(8)])
    write_jsonl(tmp_path / "given_ptb.jsonl", [trajectory(f"t{i}", rates) for i in range(8)])
    write_jsonl(tmp_path / "dev_eval.jsonl", [trajectory(f"d{i}", rates) for i in range(2)])
    cfg = from_dict(PaperConfig, load_config("paper_rehearsal"))
    for perturbed in (True, False):
        run = Run(tmp_path / f"run_{perturbed}", cfg, "multi_turn_qwen3_8b")
        inputs = Inputs(
            "multi_turn_qwen3_8b",
            "unused",
            "unused",
            trajectories=str(tmp_path / "given.jsonl"),
            trajectories_perturbed=str(tmp_path / "given_ptb.jsonl") if perturbed else None,
        )
        evaluated = given(run, inputs)
        train_file = training_data(
            run, inputs, {}, evaluated, str(tiny_tokenizer_dir), tmp_path / "dev_eval.jsonl"
        )
        setting = write_setting(run, inputs, tmp_path / "model", evaluated)
        assert setting["perturbed_mix"] is perturbed and (
            setting["trajectory_samples"],
            setting["trajectory_turns"],
        ) == (4, 2)
        base_rows = len(pd.read_parquet(run.root / "data/verl_trajectories/train.parquet"))
        if perturbed:
            assert (
                train_file == run.root / "data/verl_mixed/train.parquet"
                and "perturbed rows mixed in" in run.state
            )
            assert len(pd.read_parquet(train_file)) > base_rows  # the perturbed rows are in
        else:
            assert train_file == run.root / "data/verl_trajectories/train.parquet"
            assert "perturbed rows mixed in" not in run.state
