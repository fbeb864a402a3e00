"""Pulling the program out of a model response (reference section 3)."""

from __future__ import annotations

import re

# The program is the LAST fenced block; the language tag is optional.
_FENCED_BLOCK = re.compile(r"```(?:\w+)?\n(.*?)```", re.DOTALL)
THINK_END = "</think>"


def extract_code(response: str) -> str | None:
    """The stripped body of the last fenced code block, or None if there is none."""
    blocks = _FENCED_BLOCK.findall(response)
    return blocks[-1].strip() if blocks else None


def strip_thinking(response: str, max_chars: int | None = None) -> str:
    """The text after the last ``</think>`` (the whole text if there is none), optionally cut."""
    answer = response.rsplit(THINK_END, 1)[-1]
    return answer if max_chars is None else answer[:max_chars]
