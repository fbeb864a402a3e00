"""Inference: single- and multi-turn self-debugging through one chat client (LiteLLM)."""

from cobalt.infer.llm import ChatModel, Completion, EngineError

__all__ = ["ChatModel", "Completion", "EngineError"]
