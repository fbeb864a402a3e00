"""Every command line of the project speaks the one flag style (cobalt.common.cli): it is built on
``cobalt.common.cli.ArgumentParser``, answers ``--help`` (and so does each sub-command), and lists
its long options hyphenated (``--run-dir``; ``--run_dir`` is accepted too). A new CLI that forgets
the style fails here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Entry points that are not command lines.
NOT_CLIS = {"cobalt/sandbox/harness.py": "the sandbox's child process: reads its job from stdin"}
# Not converted yet: being moved into cobalt/recipes (issue 46). Empty this list once they use
# cobalt.common.cli.
PENDING: set[str] = set()
MAIN_GUARD = re.compile(r"""^if __name__ == ["']__main__["']:""", re.M)
LONG_OPTION = re.compile(r"(?<![\w-])--[A-Za-z0-9][\w-]*")
SUBCOMMANDS = re.compile(r"\{(\w[\w,-]*)\}")


def sources() -> list[str]:
    files = [*ROOT.glob("*.py"), *ROOT.glob("cobalt/**/*.py")]
    files += [p for folder in ("scripts", "preproc", "bench") for p in (ROOT / folder).glob("*.py")]
    return sorted(str(p.relative_to(ROOT)) for p in files if ".venv" not in p.parts)


def entry_points() -> list[str]:
    return [
        path
        for path in sources()
        if path not in NOT_CLIS
        and path not in PENDING
        and (path.endswith("__main__.py") or MAIN_GUARD.search((ROOT / path).read_text()))
    ]


def command(path: str) -> list[str]:
    if path.startswith("cobalt/"):
        module = path.removesuffix(".py").removesuffix("/__main__").replace("/", ".")
        return [sys.executable, "-m", module]
    return [sys.executable, path]


def help_text(argv: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*argv, "--help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "usage:" in proc.stdout, f"{argv} --help: {proc.stderr[-2000:]}"
    return proc.stdout


def test_the_walk_finds_the_command_lines():
    found = entry_points()
    for expected in ("scripts/run_single_turn.py", "preproc/preproc_taco.py", "cobalt/serve/cluster.py"):
        assert expected in found, found


def test_parsers_are_built_in_the_one_style():
    direct = [
        path
        for path in sources()
        if path not in PENDING
        and path != "cobalt/common/cli.py"
        and re.search(r"argparse\.ArgumentParser\(|^from argparse import", (ROOT / path).read_text(), re.M)
    ]
    assert not direct, f"build parsers with cobalt.common.cli.ArgumentParser: {direct}"


@pytest.mark.parametrize("path", entry_points())
def test_help_lists_hyphenated_long_options(path):
    argv = command(path)
    texts = {path: help_text(argv)}
    usage = texts[path].split("\n\n")[0]
    for names in SUBCOMMANDS.findall(usage):
        for name in names.split(","):
            texts[f"{path} {name}"] = help_text([*argv, name])
    for where, text in texts.items():
        underscored = sorted({o for o in LONG_OPTION.findall(text) if "_" in o})
        assert not underscored, f"{where} --help lists {underscored}; declare them as --words-with-hyphens"
