"""Reward-hacking analysis on perturbed public tests: turn-level cases, the LLM judge and a
rule-based hard-coding detector (docs/analysis.md)."""

from cobalt.analysis.hard_coding import detect_hard_coding

__all__ = ["detect_hard_coding"]
