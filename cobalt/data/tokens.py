"""Counting chat-prompt tokens for the 10,000-token limit of the bandit prompts.

``--model_name`` is a hub name or a local directory with a tokenizer; a local directory is loaded
with ``local_files_only`` so it works offline. :func:`build_tiny_tokenizer` writes a small
byte-level BPE tokenizer with a ChatML template, for tests and the offline demo.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def load_tokenizer(model_name: str | os.PathLike):
    from transformers import AutoTokenizer

    local = os.path.isdir(model_name)
    return AutoTokenizer.from_pretrained(str(model_name), local_files_only=local)


def prompt_token_counter(tokenizer) -> Callable[[list[dict]], int]:
    """``messages → number of tokens`` of the chat-templated prompt (with the generation prompt)."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("the tokenizer has no chat template; pass a chat model's --model_name")

    def count(messages: list[dict]) -> int:
        ids = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        return len(ids)

    return count


def build_tiny_tokenizer(
    out_dir: str | os.PathLike, corpus: list[str] | None = None, vocab_size: int = 400
) -> Path:
    """Train a small byte-level BPE tokenizer with a ChatML template and save it to ``out_dir``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = corpus or [
        "def solve():\n    n = int(input())\n    print(n * 2)\n",
        "The code has passed all public test cases. Input: 1 2 3 Expected Output: 6",
        "You are an expert competitive programmer. Solve the following programming problem.",
    ]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    out_dir = Path(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
