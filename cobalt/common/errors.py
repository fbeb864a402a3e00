"""The project's error types: bad input is reported with the file, line and field it came from."""

from __future__ import annotations


class DataError(ValueError):
    """Bad input data. The message names where it came from: ``file:line: field: problem``."""

    def __init__(
        self, problem: str, *, path: object = None, line: int | None = None, field: str | None = None
    ):
        self.path, self.line, self.field, self.problem = path, line, field, problem
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}{what}{problem}")


class ConfigError(ValueError):
    """A configuration file or override that cannot be used."""
