"""Let ``scripts/*.py`` run as plain executables: re-run them with the project's ``.venv`` Python.

Stdlib only (it runs before anything of the project is importable).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def use_project_python() -> None:
    """Put the checkout on ``sys.path``; if ``.venv`` exists and is not the running interpreter,
    replace this process by the same command under it."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    if venv_python.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        os.execv(str(venv_python), [str(venv_python), *sys.argv])
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
