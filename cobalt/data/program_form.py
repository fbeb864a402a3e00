"""A program's *form*: two programs are the same when their normalized forms are equal.

The normalized form is the Python AST with docstrings dropped and every name the program binds
(variables, functions, arguments, loop and comprehension targets, ``as`` names) renamed ``v0, v1,
...`` in the order the AST walk first meets it. Constants, operators, attributes and the names the
program does not bind (builtins such as ``print`` or ``len``, imported modules) are kept, so
``print(a + 1)`` and ``print(b + 1)`` are the same program and ``print(a + 1)`` and ``print(a + 2)``
are not. Comments and layout never reach the AST.
"""

from __future__ import annotations

import ast


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
