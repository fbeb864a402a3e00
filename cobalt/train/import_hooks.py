"""Run a callback right after a module is imported (or at once if it already is): how the veRL
plugin patches and extends modules only if and when a process actually loads them."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from typing import Any


class _AfterImportHook(importlib.abc.MetaPathFinder):
    """Runs callbacks right after a named module has been executed, before anyone else uses it."""

    def __init__(self) -> None:
        self.pending: dict[str, list[Callable[[Any], None]]] = {}

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.pending:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        callbacks, loader = self.pending.pop(fullname), spec.loader
        original_exec = loader.exec_module

        def exec_module(module):
            original_exec(module)
            for callback in callbacks:
                callback(module)

        loader.exec_module = exec_module
        return spec

    def add(self, module_name: str, callback: Callable[[Any], None]) -> None:
        module = sys.modules.get(module_name)
        if module is not None:
            callback(module)
        else:
            self.pending.setdefault(module_name, []).append(callback)


_hook = _AfterImportHook()


def when_imported(module_name: str, callback: Callable[[Any], None]) -> None:
    """Call ``callback(module)`` once ``module_name`` has been executed."""
    if _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)
    _hook.add(module_name, callback)
