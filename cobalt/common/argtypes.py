"""Argument types for every command line: values outside their range are refused by the parser
(``error: argument --dev_ratio: must be between 0 and 1, got 1.5``), never accepted silently."""

from __future__ import annotations

import argparse


def _number(kind, text: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
        ) from None


def positive_int(text: str) -> int:
    value = _number(int, text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def fraction(text: str) -> float:
    value = _number(float, text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(float, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def caller_path(text: str) -> str:
    """A file named relative to the caller's directory, made absolute (the chains run their stages
    in the checkout), also when missing if it is written as a path (``./x``, ``../x``, ``~/x``); a
    name that is no local path (an embedded set, a hub name) is kept."""
    import os

    if os.path.exists(text) or text.startswith(("./", "../", "~")):
        return os.path.abspath(os.path.expanduser(text))
    return text


def existing_file(text: str) -> str:
    """A file that must exist, named relative to the caller's directory: made absolute."""
    import os

    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{os.path.abspath(text)}: no such file")
    return os.path.abspath(text)
