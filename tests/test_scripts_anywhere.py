"""Every script runs from any directory: the venv's installed package is what runs, whatever the
current directory holds. The case that broke (issue 59): a checkout named ``cobalt/`` holding
``data/`` (where fetch_paper_data.sh puts it), run from its parent, took the checkout and its
``data/`` for the package ``cobalt`` and ``cobalt.data``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# test.sh hands --help to pytest; lint.sh takes no arguments
SCRIPTS = sorted(p.name for p in (ROOT / "scripts").glob("*.sh") if p.name not in {"test.sh", "lint.sh"})


def test_the_scripts_are_found():
    assert {"reproduce_paper.sh", "quickstart.sh", "setup.sh", "learning_check.sh"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_works_from_the_parent_of_a_checkout_named_cobalt(script, tmp_path):
    (tmp_path / "cobalt" / "data").mkdir(parents=True)  # a checkout's fetched data, as a package would look
    (tmp_path / "cobalt" / "scripts").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / script), "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "usage:" in proc.stdout, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cobalt"]  # --help made nothing
