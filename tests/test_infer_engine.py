"""Inference on real engines: a tiny random model in vLLM on Ray Serve (plumbing), LiteLLM against
that OpenAI route, the command lines with resume after SIGKILL, and clear failures."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cobalt.common.jsonl import load_jsonl, write_jsonl
from cobalt.data.embedded import problem_records

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"cobalt-{i:03d}" for i in range(1, 13)]


def script(name: str) -> str:
    return str(ROOT / "scripts" / f"{name}.py")


def run_cli(name: str, *args: str, timeout: float = 600, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [script(name), *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **env}
    )


@pytest.fixture(scope="module")
def problems_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("problems") / "problems.jsonl"
    write_jsonl(path, problem_records(IDS))
    return path


def _vllm_worker_envs() -> list[dict[str, str]]:
    envs = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "cmdline").read_bytes().startswith(b"VLLM::Worker"):
                pairs = (proc / "environ").read_bytes().split(b"\0")
                envs.append(dict(p.decode().split("=", 1) for p in pairs if b"=" in p))
        except OSError:  # exited, or not ours
            continue
    return envs


@pytest.mark.slow
def test_the_engines_vllm_worker_computes_on_every_core(tiny_engine):
    # Ray gives its workers OMP_NUM_THREADS=1; the engine config's "auto" must reach vLLM's worker
    # (this cluster's only: another Ray on the machine may run vLLM workers of its own)
    workers = [w for w in _vllm_worker_envs() if w.get("RAY_ADDRESS") == tiny_engine["address"]]
    assert workers, f"no VLLM::Worker process of the cluster at {tiny_engine['address']}"
    assert {w.get("OMP_NUM_THREADS") for w in workers} == {str(len(os.sched_getaffinity(0)))}


@pytest.mark.slow
def test_litellm_talks_to_the_serve_openai_route(tiny_engine):
    from cobalt.infer.llm import ChatModel

    model = ChatModel("openai/random", tiny_engine["api_base"])
    completion = asyncio.run(
        model.complete([{"role": "user", "content": "hi"}], n=3, temperature=1.0, top_p=1.0, max_tokens=8)
    )
    assert len(completion.texts) == 3 and all(isinstance(t, str) for t in completion.texts)
    assert completion.usage["completion_tokens"] > 0 and completion.usage["calls"] == 1
    assert model.activity.in_flight == 0 and model.activity.busy_s > 0


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def common_args(engine) -> list[str]:
    return [
        "--engine",
        "litellm",
        "--model",
        "openai/random",
        "--api_base",
        engine["api_base"],
        "--address",
        engine["address"],
        "--max_tokens",
        "16",
    ]


@pytest.mark.slow
def test_single_turn_cli_through_litellm_and_the_cluster_evaluator(tiny_engine, problems_file, tmp_path):
    out = tmp_path / "single.jsonl"
    proc = run_cli(
        "run_single_turn", "-i", str(problems_file), "-o", str(out), "-n", "2", *common_args(tiny_engine)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = load_jsonl(out)
    assert sorted(r["id"] for r in records) == IDS
    for record in records:
        assert len(record["responses"]) == 2 and len(record["exec_results"]) == 2
        assert record["usage"]["completion_tokens"] > 0
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["written"] == len(IDS) and summary["pass@1"] == 0.0


@pytest.mark.slow
def test_multi_turn_resumes_after_sigkill_without_loss_or_duplicates(tiny_engine, problems_file, tmp_path):
    single = tmp_path / "single.jsonl"
    proc = run_cli(
        "run_single_turn", "-i", str(problems_file), "-o", str(single), "-n", "2", *common_args(tiny_engine)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    multi = tmp_path / "multi.jsonl"
    args = [
        script("run_multi_turn"),
        "-i",
        str(single),
        "-o",
        str(multi),
        "--turns",
        "3",
        "--concurrency",
        "1",
        *common_args(tiny_engine),
    ]
    log = tmp_path / "first_run.log"
    with open(log, "w") as err:
        job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 300
        while job.poll() is None and time.monotonic() < deadline and len(lines(multi)) < 3:
            time.sleep(0.05)
        assert job.poll() is None, (
            f"the first run ended ({job.returncode}); its log:\n{log.read_text()[-3000:]}"
        )
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    done_before = len(lines(multi))
    assert done_before >= 3, f"no progress in the first run; its log:\n{log.read_text()[-3000:]}"
    assert done_before < len(IDS), "the job must be killed mid-run"
    with open(multi, "a") as f:  # what a kill in the middle of an append leaves behind
        f.write('{"id": "cobalt-0')
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = load_jsonl(multi)  # every line parses: no corrupt line in the middle
    assert sorted(r["id"] for r in records) == IDS  # none lost, none duplicated
    assert all(len(r["conversations"][0]) == 2 + 2 * 4 for r in records)
    assert json.loads(proc.stdout.strip().splitlines()[-1])["skipped"] == done_before
    assert Path(f"{multi}.torn").read_text() == '{"id": "cobalt-0\n'


# ------------------------------------------------------------------- failures (no engine needed)
def test_unreachable_engine_fails_clearly_and_leaves_the_output_alone(problems_file, tmp_path):
    from cobalt.serve.cluster import free_port

    out = tmp_path / "single.jsonl"
    proc = run_cli(
        "run_single_turn",
        "-i",
        str(problems_file),
        "-o",
        str(out),
        "--engine",
        "litellm",
        "--model",
        "openai/nothing",
        "--api_base",
        f"http://127.0.0.1:{free_port()}/v1",
        "--evaluator",
        "local",
        timeout=180,
    )
    assert proc.returncode == 1
    assert "is not reachable" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_unreachable_cluster_fails_in_seconds_and_leaves_the_output_alone(problems_file, tmp_path):
    from cobalt.serve.cluster import free_port

    out = tmp_path / "single.jsonl"
    out.write_text("keep me\n")
    started = time.monotonic()
    proc = run_cli(
        "run_single_turn",
        "-i",
        str(problems_file),
        "-o",
        str(out),
        "--model",
        "/nowhere",
        "--address",
        f"127.0.0.1:{free_port()}",
        timeout=120,
    )
    assert proc.returncode == 1 and "no Ray cluster answers" in proc.stderr
    assert time.monotonic() - started < 60
    assert out.read_text() == "keep me\n"


def test_a_malformed_input_line_is_named(problems_file, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = problems_file.read_text().splitlines()
    record = json.loads(lines[1])
    del record["instruction"]
    bad.write_text("\n".join([lines[0], json.dumps(record)]) + "\n")
    proc = run_cli(
        "run_single_turn", "-i", str(bad), "-o", str(tmp_path / "o.jsonl"), "--model", "x", timeout=120
    )
    assert proc.returncode == 2
    assert f"{bad}:2: field 'instruction': missing" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()
