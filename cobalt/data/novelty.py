"""Is an evaluation instance's program new to training?

Two programs are the *same program* when their normalized forms are equal: the Python AST with
docstrings dropped and every name the program binds (variables, functions, arguments, loop and
comprehension targets, ``as`` names) renamed ``v0, v1, ...`` in the order the AST walk first meets
it. Constants, operators, attributes and the names the program does not bind (builtins such as
``print`` or ``len``, imported modules) are kept, so ``print(a + 1)`` and ``print(b + 1)`` are the
same program and ``print(a + 1)`` and ``print(a + 2)`` are not. Comments and layout never reach the
AST.

:func:`program_novelty` sorts evaluation instances into ``unseen`` (no training program has the
instance's normalized reference program), ``seen_sft`` (an SFT warm-up program has it) and
``seen_grpo`` (only a program of the GRPO training instances has it).

    python -m cobalt.data.novelty RUN_DIR   # a quickstart run of problems: procedural
    python -m cobalt.data.novelty --config configs/generalize.yaml   # rebuilt from the seeds
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

UNSEEN, SEEN_SFT, SEEN_GRPO = "unseen", "seen_sft", "seen_grpo"
KINDS = (UNSEEN, SEEN_SFT, SEEN_GRPO)


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the program binds (assigns, defines, takes as an argument or imports as)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.alias) and node.asname:
            bound.add(node.asname)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    return bound


def _drop_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            first = body[0].value if body and isinstance(body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                node.body = body[1:] or [ast.Pass()]


class _Renamer(ast.NodeTransformer):
    def __init__(self, bound: set[str]):
        self.bound = bound
        self.names: dict[str, str] = {}

    def canonical(self, name: str) -> str:
        if name not in self.bound:
            return name
        if name not in self.names:
            self.names[name] = f"v{len(self.names)}"
        return self.names[name]

    def visit_Name(self, node):
        node.id = self.canonical(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.canonical(node.arg)
        node.annotation = None
        return node

    def visit_keyword(self, node):
        if node.arg is not None and node.arg in self.names:  # an argument of the program's own function
            node.arg = self.names[node.arg]
        self.generic_visit(node)
        return node

    def _defined(self, node):
        node.name = self.canonical(node.name)
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _defined

    def visit_ExceptHandler(self, node):
        if node.name:
            node.name = self.canonical(node.name)
        self.generic_visit(node)
        return node

    def visit_alias(self, node):
        if node.asname:
            node.asname = self.canonical(node.asname)
        return node

    def _scoped(self, node):
        node.names = [self.canonical(n) for n in node.names]
        return node

    visit_Global = visit_Nonlocal = _scoped


def normalize_program(source: str) -> str:
    """The program's normalized form (module docstring). SyntaxError if ``source`` is not Python."""
    tree = ast.parse(source)
    _drop_docstrings(tree)
    _Renamer(_bound_names(tree)).visit(tree)
    return ast.dump(tree, annotate_fields=False)


def normalized_or_text(source: str) -> str:
    """:func:`normalize_program`, or the text with its whitespace collapsed when it is not Python
    (such a program then matches only the same text)."""
    try:
        return normalize_program(source)
    except SyntaxError:
        return "text:" + " ".join(source.split())


def program_novelty(evaluated: Mapping[str, str], sft: Iterable[str], grpo: Iterable[str]) -> dict[str, str]:
    """``{instance id: unseen | seen_sft | seen_grpo}`` for ``evaluated`` (id → reference program),
    against the SFT warm-up's programs and the GRPO training instances' programs."""
    sft_keys = {normalized_or_text(p) for p in sft}
    grpo_keys = {normalized_or_text(p) for p in grpo}
    out = {}
    for pid, source in evaluated.items():
        key = normalized_or_text(source)
        out[pid] = SEEN_SFT if key in sft_keys else SEEN_GRPO if key in grpo_keys else UNSEEN
    return out


def counts(novelty: Mapping[str, str]) -> dict[str, int]:
    c = collections.Counter(novelty.values())
    return {kind: c.get(kind, 0) for kind in KINDS}


# ------------------------------------------------------------------------- procedural runs
def _solutions(rows: Iterable[dict]) -> dict[str, list[str]]:
    return {str(r["id"]): list(r["solutions"]) for r in rows}


def procedural_novelty(
    train: list[dict], heldout: list[dict], solutions: Mapping[str, list[str]], warmup_problems: int | None
) -> dict[str, str]:
    """The novelty of each ``heldout`` record: the warm-up answers the first ``warmup_problems``
    training records (all when None or 0, as the quickstart's warm-up), GRPO trains on all of them."""
    sft_ids = [str(r["id"]) for r in (train[:warmup_problems] if warmup_problems else train)]
    grpo_ids = [str(r["id"]) for r in train]
    return program_novelty(
        {str(r["id"]): solutions[str(r["id"])][0] for r in heldout},
        (p for i in sft_ids for p in solutions[i]),
        (p for i in grpo_ids for p in solutions[i]),
    )


def run_novelty(run_dir: str | Path) -> dict[str, dict[str, str]]:
    """``{split: {id: novelty}}`` for the evaluated splits of a quickstart run of procedural
    problems, from the files it wrote (data/procedural/, the warm-up subset)."""
    from cobalt.jsonl import load_jsonl

    root = Path(run_dir)
    proc = root / "data/procedural"
    solutions = _solutions(load_jsonl(proc / "solutions.jsonl"))
    train = load_jsonl(proc / "train.jsonl")
    subset = root / "data/warm_up_subset.jsonl"
    n = len(load_jsonl(subset)) if subset.exists() else None
    out = {}
    for split in ("heldout", "dev", "heldout_families"):
        path = proc / f"{split}.jsonl"
        if path.exists() and path.stat().st_size:
            out[split] = procedural_novelty(train, load_jsonl(path), solutions, n)
    return out


def config_novelty(config: str | Path) -> dict[str, dict[str, str]]:
    """As :func:`run_novelty`, for the splits a quickstart profile would write (rebuilt from its
    seeds, nothing run)."""
    from cobalt.config import from_dict, load_config
    from cobalt.data.procedural.splits import build_splits
    from cobalt.quickstart_config import QuickstartConfig

    cfg = from_dict(QuickstartConfig, load_config(config), source=str(config))
    p = cfg.procedural
    splits = build_splits(
        {
            "train": cfg.train_problems,
            "dev": p.get("dev", 0),
            "heldout": cfg.heldout_problems,
            "heldout_families": p.get("heldout_families", 0),
        },
        p.get("seed", 0),
    )
    from cobalt.data.procedural.generate import reference_solution

    solutions = {str(r["id"]): [reference_solution(r["id"])] for rs in splits.values() for r in rs}
    n = cfg.warmup.get("problems")
    return {
        split: procedural_novelty(splits["train"], records, solutions, n)
        for split, records in splits.items()
        if split != "train" and records
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cobalt.data.novelty",
        description="Count the evaluated instances whose normalized reference program is new to "
        "training (unseen) or is an SFT warm-up program (seen_sft) or a GRPO training program (seen_grpo).",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("run_dir", nargs="?", help="a quickstart run directory (problems: procedural)")
    where.add_argument("--config", help="a quickstart profile: rebuild its splits from the seeds")
    parser.add_argument("--ids", action="store_true", help="print every instance's novelty as JSON")
    args = parser.parse_args(argv)
    result = config_novelty(args.config) if args.config else run_novelty(args.run_dir)
    if args.ids:
        print(json.dumps(result, indent=1))
    for split, novelty in result.items():
        c = counts(novelty)
        print(f"{split}: {len(novelty)} instances: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
