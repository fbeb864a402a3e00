"""Realistic bugs in a reference solution: seeded ``ast`` mutations, kept only if they really fail.

A mutant is the reference program with one bug of one of four classes (``BUG_CLASSES``):

``off_by_one``
    an integer constant, a ``range`` bound, a slice bound or an index moved by one (``+ 1`` added
    or removed), or ``len(x)`` read as ``len(x) - 1``;
``wrong_operator``
    an arithmetic operator swapped (``+``/``-``, ``*``/``+``, ``//``/``/``, ``%``/``//``,
    ``**``/``*``), a comparison swapped (``>``/``>=``, ``<``/``<=``, ``==``/``!=``,
    ``in``/``not in``), or ``max``/``min`` exchanged;
``wrong_output_format``
    a list printed as its repr (``print(x)`` for ``print(*x)``), joined with the wrong separator
    (``sep``, ``str.join``), one value per line instead of one line (or the reverse), several
    answers run together on one line (``end=" "``), or ``YES``/``NO`` in another case;
``wrong_input_reading``
    numbers left as strings (``input()`` for ``int(input())``, ``input().split()`` for
    ``list(map(int, ...))``), a one-per-line list read from one line (and the reverse), the
    count line not read, only the first word of a line read, or only the first test case of a
    multi-case input handled (or its count line taken for data).

:func:`mutants` lists every candidate of a program (deduplicated, each compiling and different
from the reference); :func:`pick_candidates` orders them for one problem (seeded, round-robin over
the classes); :func:`surviving_mutants` runs candidates through the sandboxed evaluator and keeps
those that fail at least one hidden test: a mutant that passes every test is an *equivalent mutant*
and is dropped. Nothing here runs a program outside the evaluator.
"""

from __future__ import annotations

import ast
import copy
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

BUG_CLASSES = ("off_by_one", "wrong_operator", "wrong_output_format", "wrong_input_reading")


# ------------------------------------------------------------------------------- small builders
def _int(value: int) -> ast.Constant:
    return ast.Constant(value)


def _plus(expr: ast.expr, delta: int) -> ast.expr:
    return ast.BinOp(expr, ast.Add() if delta > 0 else ast.Sub(), _int(abs(delta)))


def _call(name: str, *args: ast.expr, keywords=()) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), list(args), list(keywords))


def _input() -> ast.Call:
    return _call("input")


def _split_input() -> ast.Call:
    """``input().split()``"""
    return ast.Call(ast.Attribute(_input(), "split", ast.Load()), [], [])


def _is_call(node, name: str, nargs: int | None = None) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == name
        and (nargs is None or len(node.args) == nargs)
    )


def _is_method(node, attr: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr


def _is_input(node) -> bool:
    return _is_call(node, "input", 0)


def _is_int_input(node) -> bool:
    """``int(input())``"""
    return _is_call(node, "int", 1) and _is_input(node.args[0])


def _is_split_input(node) -> bool:
    """``input().split()``"""
    return _is_method(node, "split") and not node.args and _is_input(node.func.value)


def _is_int_list_of_line(node) -> bool:
    """``list(map(int, input().split()))``"""
    return (
        _is_call(node, "list", 1)
        and _is_call(node.args[0], "map", 2)
        and isinstance(node.args[0].args[0], ast.Name)
        and node.args[0].args[0].id == "int"
        and _is_split_input(node.args[0].args[1])
    )


def _is_int_const(node) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _keyword(node: ast.Call, name: str):
    return next((k for k in node.keywords if k.arg == name), None)


def _with_keywords(node: ast.Call, **values) -> ast.Call:
    """A copy of the call with keyword ``name`` set to ``values[name]`` (None: removed)."""
    keywords = [k for k in node.keywords if k.arg not in values]
    keywords += [ast.keyword(k, ast.Constant(v)) for k, v in values.items() if v is not None]
    return ast.Call(node.func, node.args, keywords)


# ------------------------------------------------------------------------------------- the rules
# A rule maps one node (and its parent) to replacement nodes; a statement may be replaced by a
# list of statements (an empty list deletes it).
Rule = Callable[[ast.AST, ast.AST | None], list]


def _bound_variants(expr: ast.expr) -> list[ast.expr]:
    """``x`` → ``x + 1``, ``x - 1``; ``x + 1`` → ``x``; ``x - 1`` → ``x``."""
    if _is_int_const(expr):
        return []  # constants have their own rule
    if _is_plus_minus_one(expr):
        return [expr.left]  # (and x + 2 by the constants' rule)
    return [_plus(expr, 1), _plus(expr, -1)]


def _is_plus_minus_one(node) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and _is_int_const(node.right)
        and node.right.value == 1
    )


def off_by_one(node, parent) -> list:
    if _is_int_const(node):
        value = node.value
        down = value >= 1 and not (_is_plus_minus_one(parent) and parent.right is node)  # not x + 0
        return [_int(value + 1)] + ([_int(value - 1)] if down else [])
    if _is_call(node, "range"):
        out = []
        for i, arg in enumerate(node.args[:2]):
            for variant in _bound_variants(arg):
                args = list(node.args)
                args[i] = variant
                out.append(ast.Call(node.func, args, node.keywords))
        return out
    if isinstance(node, ast.Slice):
        out = []
        for name in ("lower", "upper"):
            bound = getattr(node, name)
            if bound is not None:
                for variant in _bound_variants(bound):
                    new = copy.copy(node)
                    setattr(new, name, variant)
                    out.append(new)
        return out
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        return [ast.Subscript(node.value, v, node.ctx) for v in _bound_variants(node.slice)]
    if _is_call(node, "len", 1) and not (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Sub)):
        return [_plus(node, -1)]
    return []


ARITHMETIC_SWAPS = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Add,),
    ast.FloorDiv: (ast.Div,),
    ast.Div: (ast.FloorDiv,),
    ast.Mod: (ast.FloorDiv,),
    ast.Pow: (ast.Mult,),
}
COMPARISON_SWAPS = {
    ast.Gt: (ast.GtE,),
    ast.GtE: (ast.Gt,),
    ast.Lt: (ast.LtE,),
    ast.LtE: (ast.Lt,),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
FUNCTION_SWAPS = {"max": "min", "min": "max"}


def wrong_operator(node, parent) -> list:
    if isinstance(node, ast.BinOp):
        return [ast.BinOp(node.left, op(), node.right) for op in ARITHMETIC_SWAPS.get(type(node.op), ())]
    if isinstance(node, ast.AugAssign):
        return [
            ast.AugAssign(node.target, op(), node.value) for op in ARITHMETIC_SWAPS.get(type(node.op), ())
        ]
    if isinstance(node, ast.Compare):
        out = []
        for i, op in enumerate(node.ops):
            for swap in COMPARISON_SWAPS.get(type(op), ()):
                ops = list(node.ops)
                ops[i] = swap()
                out.append(ast.Compare(node.left, ops, node.comparators))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTION_SWAPS:
        return [ast.Call(ast.Name(FUNCTION_SWAPS[node.func.id], ast.Load()), node.args, node.keywords)]
    return []


def wrong_output_format(node, parent) -> list:
    if _is_call(node, "print"):
        sep = _keyword(node, "sep")
        starred = len(node.args) == 1 and isinstance(node.args[0], ast.Starred)
        out = []
        if starred:
            out.append(
                ast.Call(node.func, [node.args[0].value], [k for k in node.keywords if k.arg != "sep"])
            )
            if sep is None:
                out += [
                    _with_keywords(node, sep="\n"),
                    _with_keywords(node, sep=", "),
                    _with_keywords(node, sep=""),
                ]
            else:
                out += [_with_keywords(node, sep=None), _with_keywords(node, sep=", ")]
        if _keyword(node, "end") is None:
            out.append(_with_keywords(node, end=" "))
        return out
    if _is_method(node, "join") and isinstance(node.func.value, ast.Constant):
        joiner = node.func.value.value
        others = [s for s in (" ", "\n", ", ", "") if s != joiner][:2]
        return [
            ast.Call(ast.Attribute(ast.Constant(s), "join", ast.Load()), node.args, node.keywords)
            for s in others
        ]
    answer = isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isupper()
    if answer and not isinstance(parent, ast.Attribute):  # a printed "YES", not "ABC".lower()
        return [ast.Constant(node.value.lower()), ast.Constant(node.value.capitalize())]
    return []


def _reads(block) -> int:
    """How many ``input()`` calls the statements of ``block`` make (in the source)."""
    body = getattr(block, "body", None) or []
    return sum(_is_input(n) for stmt in body for n in ast.walk(stmt))


def wrong_input_reading(node, parent) -> list:
    if _is_int_input(node):
        return [_input()]
    if _is_int_list_of_line(node):
        return [node.args[0].args[1]]  # input().split(): strings, not numbers
    if isinstance(node, ast.ListComp) and _is_int_input(node.elt):
        # n numbers one per line, read from one line
        return [_call("list", _call("map", ast.Name("int", ast.Load()), _split_input()))]
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and _is_int_input(value) and _reads(parent) > 1:
            return [[]]  # the line is not read (the next read takes it)
        if isinstance(target, ast.Name) and _is_input(value):
            return [
                ast.Assign([target], ast.Subscript(_split_input(), _int(0), ast.Load()))
            ]  # the first word
        if (
            isinstance(target, ast.Tuple)
            and _is_call(value, "map", 2)
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id == "int"
            and _is_split_input(value.args[1])
        ):
            return [[ast.Assign([elt], _call("int", _input())) for elt in target.elts]]  # one per line
        if _is_int_list_of_line(value) and isinstance(target, ast.Name):
            count = _call("range", _call("int", _input()))
            comp = ast.ListComp(
                _call("int", _input()), [ast.comprehension(ast.Name("_", ast.Store()), count, [], 0)]
            )
            return [ast.Assign([target], comp)]  # a count line, then one number per line
    if isinstance(node, ast.For) and _is_call(node.iter, "range", 1) and _is_int_input(node.iter.args[0]):
        only_first = [ast.Expr(_input()), *node.body]  # the count read, one case handled
        return [only_first, list(node.body)]  # ... or the count taken for data
    return []


RULES: dict[str, Rule] = {
    "off_by_one": off_by_one,
    "wrong_operator": wrong_operator,
    "wrong_output_format": wrong_output_format,
    "wrong_input_reading": wrong_input_reading,
}
assert tuple(RULES) == BUG_CLASSES


# ---------------------------------------------------------------------------------- the mutants
def _slots(tree: ast.AST) -> Iterator[tuple[ast.AST, str, int | None, ast.AST]]:
    """``(parent, field, index, node)`` for every node below ``tree``, in a fixed order."""
    stack = [tree]
    while stack:
        parent = stack.pop(0)
        for name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        yield parent, name, i, item
                        stack.append(item)
            elif isinstance(value, ast.AST):
                yield parent, name, None, value
                stack.append(value)


def _unparse_with(tree, parent, name, index, replacement) -> str | None:
    """The source of ``tree`` with the slot replaced (restored afterwards); None if it is not
    valid (a list where a single node belongs)."""
    original = getattr(parent, name)
    if isinstance(replacement, list):
        if index is None:
            return None
        new = original[:index] + replacement + original[index + 1 :]
        if not new and name in ("body", "orelse") and not isinstance(parent, ast.Module):
            new = [ast.Pass()]
        setattr(parent, name, new)
    elif index is None:
        setattr(parent, name, replacement)
    else:
        setattr(parent, name, original[:index] + [replacement] + original[index + 1 :])
    try:
        return ast.unparse(ast.fix_missing_locations(tree))
    except Exception:  # a replacement that cannot be written back as source
        return None
    finally:
        setattr(parent, name, original)


def _compiles(source: str) -> bool:
    try:
        compile(source, "<mutant>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _splice(source: str, node: ast.AST, replacement) -> str:
    """``source`` with the text of ``node`` replaced by that of ``replacement`` (the rest of the
    program keeps its formatting)."""
    data = source.encode()
    starts = [0]
    for line in source.encode().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    start = starts[node.lineno - 1] + node.col_offset
    end = starts[node.end_lineno - 1] + node.end_col_offset
    if isinstance(replacement, list):  # statements, at the indentation of the one replaced
        pad = " " * node.col_offset
        text = "\n".join(ast.unparse(ast.fix_missing_locations(stmt)) for stmt in replacement)
        text = text.replace("\n", "\n" + pad)
        if not replacement:  # drop the line
            start, end = starts[node.lineno - 1], starts[node.end_lineno]
    else:
        text = ast.unparse(ast.fix_missing_locations(replacement))
        if (
            isinstance(replacement, ast.Constant)
            and data[start:end].startswith(b'"')
            and text.startswith("'")
        ):
            text = '"' + text[1:-1] + '"' if '"' not in text else text  # the reference's quotes
    return (data[:start] + text.encode() + data[end:]).decode()


def _in_style(source: str, node: ast.AST, replacement, normalized: str) -> str:
    """The mutant written into the reference's own text when that parses to the same program
    (with parentheses if needed), else ``normalized`` (the whole program unparsed)."""
    want = ast.dump(ast.parse(normalized))
    tries = [replacement]
    if isinstance(replacement, ast.expr):
        tries.append(ast.Name(f"({ast.unparse(ast.fix_missing_locations(replacement))})", ast.Load()))
    for candidate in tries:
        try:
            text = _splice(source, node, candidate)
            if ast.dump(ast.parse(text)) == want:
                return text if text.endswith("\n") else text + "\n"
        except (SyntaxError, ValueError, AttributeError, TypeError):
            continue
    return normalized + "\n"


def mutants(source: str) -> list[tuple[str, str]]:
    """Every ``(bug_class, mutated_source)`` of ``source``: one bug each, deduplicated (a program
    reached by two rules is kept under the first class), each compiling and different from the
    reference, written into the reference's own text where possible; in a fixed order (classes in
    ``BUG_CLASSES`` order)."""
    tree = ast.parse(source)
    reference = ast.unparse(tree)
    seen = {reference}
    out = []
    for bug, rule in RULES.items():
        for parent, name, index, node in list(_slots(tree)):
            for replacement in rule(node, parent):
                mutated = _unparse_with(tree, parent, name, index, replacement)
                if mutated is None or mutated in seen or not _compiles(mutated):
                    continue
                seen.add(mutated)
                out.append((bug, _in_style(source, node, replacement, mutated)))
    return out


def pick_candidates(source: str, seed, limit: int | None = None) -> list[tuple[str, str]]:
    """The mutants of ``source`` in a seeded order that alternates the classes (each class's
    mutants shuffled, then taken one class at a time), the first ``limit`` of them."""
    rng = random.Random(f"mutants:{seed}")
    by_class: dict[str, list] = {bug: [] for bug in BUG_CLASSES}
    for bug, mutated in mutants(source):
        by_class[bug].append((bug, mutated))
    order = list(BUG_CLASSES)
    rng.shuffle(order)
    for bug in order:
        rng.shuffle(by_class[bug])
    out = []
    while any(by_class.values()):
        for bug in order:
            if by_class[bug]:
                out.append(by_class[bug].pop(0))
    return out[:limit] if limit is not None else out


# -------------------------------------------------------------------------- survival in the sandbox
@dataclass
class Survival:
    """Per bug class (and per group of problems, e.g. a family): candidates run in the sandbox
    (``tried``), survivors that fail at least one hidden test (``survived``), survivors that also
    fail a public test (``fail_public``: their feedback shows the bug), and survivors kept."""

    counts: Counter = field(default_factory=Counter)  # (group, bug class, column) -> count
    problems_without_survivor: list = field(default_factory=list)

    COLUMNS = ("tried", "survived", "fail_public", "kept")

    def add(self, group: str, bug: str, column: str) -> None:
        self.counts[(group, bug, column)] += 1

    def groups(self) -> list[str]:
        return sorted({g for g, _, _ in self.counts})

    def table(self, group: str | None = None) -> dict:
        """``{bug class: {column: count}}`` over all groups, or of one group."""
        return {
            bug: {
                col: sum(
                    n for (g, b, c), n in self.counts.items() if b == bug and c == col and group in (None, g)
                )
                for col in self.COLUMNS
            }
            for bug in BUG_CLASSES
        }

    def by_group(self) -> dict:
        """``{group: {bug class: [tried, survived]}}``."""
        return {
            g: {bug: [row["tried"], row["survived"]] for bug, row in self.table(g).items()}
            for g in self.groups()
        }

    def lines(self) -> list[str]:
        rows = [f"{'bug class':<22}{'tried':>7}{'survived':>10}{'fail public':>13}{'kept':>7}"]
        table = self.table()
        for bug, row in table.items():
            rows.append(
                f"{bug:<22}" + "".join(f"{row[c]:>{w}}" for c, w in zip(self.COLUMNS, (7, 10, 13, 7)))
            )
        total = [sum(row[c] for row in table.values()) for c in self.COLUMNS]
        rows.append(f"{'all':<22}" + "".join(f"{n:>{w}}" for n, w in zip(total, (7, 10, 13, 7))))
        return rows

    def group_lines(self) -> list[str]:
        """One line per group: survived/tried per bug class."""
        width = max([len(g) for g in self.groups()] + [5])
        rows = [f"{'group':<{width}}  " + "  ".join(f"{bug:>19}" for bug in BUG_CLASSES)]
        for g, row in self.by_group().items():
            rows.append(f"{g:<{width}}  " + "  ".join(f"{f'{s}/{t}':>19}" for t, s in row.values()))
        return rows


def _fails(result: dict) -> bool:
    return not result["passing"] or not all(result["passing"])


def tries_for(per_problem: int, tries_per_problem: int | None = None) -> int:
    """Mutants run in the sandbox per problem: ``tries_per_problem``, by default 4 × ``per_problem``."""
    return tries_per_problem if tries_per_problem is not None else 4 * per_problem


async def surviving_mutants(
    problems: list[dict],
    references: dict,
    evaluator,
    *,
    per_problem: int = 4,
    tries_per_problem: int | None = None,
    seed: int = 0,
    survival: Survival | None = None,
    group: Callable[[dict], str] = lambda problem: "all",
) -> dict[str, list[tuple[str, str]]]:
    """``{problem id: [(bug_class, source)]}``: up to ``per_problem`` mutants of the problem's
    reference (``references[id]``) that fail at least one of its hidden tests in the sandbox.

    Candidates come from :func:`pick_candidates` (seeded per problem); the first
    ``tries_per_problem`` of them (default ``4 * per_problem``) run on the hidden and on the
    public tests, and the first ``per_problem`` that fail a hidden test are kept, in that order.
    ``survival`` (if given) is filled with the counts per bug class and per ``group(problem)``."""
    from cobalt.data.execute import run_jobs

    survival = survival if survival is not None else Survival()
    tries = tries_for(per_problem, tries_per_problem)
    picked = {p["id"]: pick_candidates(references[p["id"]], f"{seed}:{p['id']}", tries) for p in problems}
    jobs = []
    for p in problems:
        for _, source in picked[p["id"]]:
            jobs += [(source, p["hidden_test_cases"]), (source, p["public_test_cases"])]
    results = await run_jobs(evaluator, jobs, desc="running mutants")
    out, i = {}, 0
    for p in problems:
        kept, name = [], group(p)
        for bug, source in picked[p["id"]]:
            hidden, public = results[i], results[i + 1]
            i += 2
            survival.add(name, bug, "tried")
            if not _fails(hidden):
                continue  # an equivalent mutant (on these tests)
            survival.add(name, bug, "survived")
            if _fails(public):
                survival.add(name, bug, "fail_public")
            if len(kept) < per_problem:
                kept.append((bug, source))
                survival.add(name, bug, "kept")
        if not kept:
            survival.problems_without_survivor.append(p["id"])
        out[p["id"]] = kept
    return out
