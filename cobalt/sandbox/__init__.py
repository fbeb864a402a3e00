"""Run an untrusted program on stdin/stdout test cases, safely; verdicts and feedback text.

Synchronous and importable without Ray: :func:`evaluate` (``evaluation.py``) checks a request and
runs it; ``runner.py`` isolates the program, ``harness.py`` is what runs inside the sandbox.
"""

from cobalt.sandbox.config import SandboxConfig, default_config
from cobalt.sandbox.evaluation import InvalidRequest, evaluate
from cobalt.sandbox.runner import SandboxError, SandboxUnavailable

__all__ = [
    "InvalidRequest",
    "SandboxConfig",
    "SandboxError",
    "SandboxUnavailable",
    "default_config",
    "evaluate",
]
