"""The package's import contract (``[tool.importlinter]`` in pyproject.toml, run by scripts/lint.sh):
the recipes on the pipeline on the library rooms on the leaf utilities, and nothing outside
cobalt.recipes imports a recipe. It holds on this tree and fails on a planted upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = ROOT / ".venv/bin/lint-imports"


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=package_parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contract_holds_on_the_package():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_a_library_room_importing_a_recipe_breaks_the_contract(tmp_path):
    shutil.copytree(ROOT / "cobalt", tmp_path / "cobalt", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "cobalt/sandbox/x.py").write_text("import cobalt.recipes.quickstart\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "Nothing outside cobalt.recipes imports a recipe BROKEN" in proc.stdout.replace("\n", " ")
    assert "cobalt.sandbox.x -> cobalt.recipes.quickstart" in proc.stdout
