"""The offline o200k_base token counter: built from the wheel in memory, nothing cached on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_counter_is_built_without_writing_into_home(tmp_path):
    # Before: a decompressed copy went to ~/.cache/cobalt through a shared ".tmp" name, which
    # concurrent reward workers could leave half-written (and a bad copy was never replaced).
    code = (
        "from cobalt.reward.tokens import token_counter\n"
        "print(token_counter('o200k_base')('def main():\\n    return 42\\n'))\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) == 8
    assert list(tmp_path.iterdir()) == []
