"""The commands the README and docs/ tell users to type run as written from a fresh terminal: every
``scripts/*.py`` and ``preproc/*.py`` they name is executable and answers ``--help`` when started
directly by a shell whose ``python3`` is not the project's, every ``python -m cobalt...`` module
answers ``--help``, and a README block activates the project's environment before it calls
``python``, ``serve`` or ``ray`` bare."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"(?<![\w/.])((?:scripts|preproc)/\w+\.py)\b")
MODULE = re.compile(r"python -m (cobalt[\w.]+)")


def documented(pattern: re.Pattern) -> list[str]:
    return sorted({name for doc in DOCS for name in pattern.findall(doc.read_text())})


def fresh_terminal_env() -> dict[str, str]:
    """The environment of a new shell: the project's .venv neither activated nor first on PATH."""
    venv = str(ROOT / ".venv")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(venv))
    return env


def test_the_docs_name_the_pipelines_commands():
    names = documented(COMMAND) + documented(MODULE)
    for expected in ("scripts/run_single_turn.py", "preproc/process_multi_turn_taco.py", "cobalt.train.sft"):
        assert expected in names, names


@pytest.mark.parametrize("command", documented(COMMAND))
def test_a_documented_command_runs_as_written(command):
    path = ROOT / command
    assert path.is_file(), f"{command} is named in the docs but does not exist"
    assert os.access(path, os.X_OK), f"{command} is not executable, but the docs run it directly"
    proc = subprocess.run(
        [command, "--help"], cwd=ROOT, env=fresh_terminal_env(), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and "usage:" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.parametrize("module", documented(MODULE))
def test_a_documented_module_answers_help(module):
    proc = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and "usage:" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_a_block_activates_the_environment_before_bare_python(doc):
    for block in re.findall(r"```bash\n(.*?)```", doc.read_text(), re.S):
        activated = False
        for line in block.splitlines():
            activated = activated or line.startswith("source .venv/bin/activate")
            if re.match(r"(python|serve|ray)\s", line):
                assert activated, f"{doc.name} runs `{line}` without `source .venv/bin/activate` first"
