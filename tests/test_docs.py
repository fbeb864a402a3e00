"""The README and docs/ hold together: the README is short, every relative link resolves (anchors
included), every repo command the README names exists, and every measured figure the README states
is one that docs/benchmarks.md records. Fast: reads files only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCHMARKS = ROOT / "docs/benchmarks.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NUMBER = r"[+\-−]?\d[\d,]*(?:\.\d+)?"
# a number (or a range of two) with a unit, a signed decimal (+0.16), or a p-value
FIGURE = re.compile(
    rf"(?<![\w.,])(?:{NUMBER}(?:\s?[–-]\s?{NUMBER})?\s?(?:ms|min|h|s|GiB|MiB|%|×|points)(?!\w)"
    rf"|[+\-−]\d+\.\d+|p = \d\.\d+)"
)


def figures(text: str) -> dict[str, str]:
    """The figures in ``text``, keyed by a normal form (no spaces, one kind of minus)."""
    return {re.sub(r"\s", "", f).replace("−", "-"): f for f in FIGURE.findall(text)}


def figures_missing_from_benchmarks(readme: str, benchmarks: str) -> list[str]:
    """The README's figures that docs/benchmarks.md does not state, as the README writes them."""
    recorded = figures(benchmarks)
    return [text for key, text in figures(readme).items() if key not in recorded]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        base = slug(heading)
        out.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return out


def test_readme_is_short():
    assert len(README.read_text().splitlines()) <= 150


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc):
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        assert file.exists(), f"{doc.name}: link to {target}: no such file"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{doc.name}: link to {target}: no such heading"


def test_readme_commands_name_existing_files():
    text = README.read_text()
    scripts = re.findall(r"(?<![\w/.])((?:scripts|preproc|bench)/\w+\.(?:sh|py))", text)
    modules = re.findall(r"python -m (cobalt[\w.]*)", text)
    assert "scripts/quickstart.sh" in scripts and "scripts/setup.sh" in scripts
    for name in scripts:
        assert (ROOT / name).is_file(), f"README names {name}, which does not exist"
    for module in modules:
        base = ROOT / module.replace(".", "/")
        assert base.with_suffix(".py").is_file() or (base / "__init__.py").is_file(), module


def test_readme_figures_are_recorded_in_benchmarks():
    readme = README.read_text()
    assert len(figures(readme)) >= 5, "the checker should see the README's figures"
    assert figures_missing_from_benchmarks(readme, BENCHMARKS.read_text()) == []


def test_a_figure_changed_by_hand_is_reported():
    readme = README.read_text()
    assert "3,851 s" in readme
    changed = readme.replace("3,851 s", "3,852 s")
    assert figures_missing_from_benchmarks(changed, BENCHMARKS.read_text()) == ["3,852 s"]
