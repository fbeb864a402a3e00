"""How many feedback turns fit in the engine's context window: an estimate for the dry run, from
the data's prompt lengths and the answer budget, before any engine exists.

A request fits when its prompt plus the answer budget (``max_tokens``) is within the window (vLLM
refuses it otherwise; :mod:`cobalt.infer.multi_turn` then records the turn as cut). Turn ``t``'s
prompt is the turn-0 prompt plus ``t`` kept answers and ``t`` feedback messages, each at its
longest: a thinking model's kept answer is cut to 6,000 characters
(:func:`cobalt.data.trajectories.assistant_content`), another's is the whole answer (up to the
budget); a feedback message shows at most three 400-character parts. Without a tokenizer, tokens
are counted as characters / 3 (code and English run 3.5 to 4 characters a token: the estimate
errs towards fewer turns)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from cobalt.common.prompts import SYSTEM_PROMPT, build_instruction
from cobalt.data.sources import file_shape, iter_local
from cobalt.data.trajectories import MAX_ANSWER_CHARS

CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 8  # chat-template tokens around each message
FEEDBACK_CHARS = 3 * 400 + 300  # three truncated parts, their labels and the request to fix the program
QUESTION_FIELDS = {"problems": "instruction", "taco": "question", "lcb": "question_content"}


def tokens(chars: int) -> int:
    return int(chars / CHARS_PER_TOKEN + 0.999)


def prompt_tokens(path: str | Path) -> list[int]:
    """Estimated tokens of each problem's turn-0 prompt (system + instruction) in a problem,
    TACO-verified or LiveCodeBench file."""
    field = QUESTION_FIELDS[file_shape(path)]
    out = []
    for _, record in iter_local(path):
        text = str(record.get(field) or "")
        if field != "instruction":
            text = build_instruction(text)
        out.append(tokens(len(SYSTEM_PROMPT) + len(text)) + 2 * MESSAGE_OVERHEAD)
    return out


def per_turn_tokens(answer_budget: int, thinking: bool) -> int:
    """The most one feedback turn adds to the next prompt: a kept answer and a feedback message."""
    answer = min(answer_budget, tokens(MAX_ANSWER_CHARS)) if thinking else answer_budget
    return answer + tokens(FEEDBACK_CHARS) + 2 * MESSAGE_OVERHEAD


def turns_that_fit(prompt: int, context: int, answer_budget: int, per_turn: int) -> int:
    """Feedback turns whose request (prompt + budget) fits; -1 when not even turn 0 does."""
    room = context - answer_budget - prompt
    return -1 if room < 0 else room // per_turn


def model_context(model: str | Path) -> int | None:
    """The model's own context window (``max_position_embeddings`` of a local model's config)."""
    config = Path(model) / "config.json"
    if not config.is_file():
        return None
    return json.loads(config.read_text()).get("max_position_embeddings")


def estimate(files: dict[str, str], *, context: int | None, model: str, answer_budget: int, thinking: bool,
             turns: int, limit: int | None = None) -> dict:  # fmt: skip
    """Per problem file (its first ``limit`` problems, as a run with ``max_problems`` keeps): its
    prompt lengths, the turns that fit for the median and the longest prompt, and how many problems
    would lose a turn of ``turns``."""
    source = "the engine's max_model_len"
    if context is None:
        context, source = model_context(model), "the model's own (config.json)"
    per_turn = per_turn_tokens(answer_budget, thinking)
    out = {"context": context, "context_from": source if context else "the model's own: not known here (not a "
           "local model directory)", "answer_budget": answer_budget,
           "per_turn_tokens": per_turn, "turns": turns, "tokens": f"estimated, {CHARS_PER_TOKEN:g} characters a token",
           "files": {}}  # fmt: skip
    for name, path in files.items():
        prompts = sorted(prompt_tokens(path)[:limit])
        if not prompts:
            continue
        median, longest = int(statistics.median(prompts)), prompts[-1]
        entry = {
            "problems": len(prompts),
            "prompt_tokens": {"median": median, "max": longest},
            "needed_at_last_turn": {
                "median": median + turns * per_turn + answer_budget,
                "max": longest + turns * per_turn + answer_budget,
            },
        }
        if context:
            fit = [turns_that_fit(p, context, answer_budget, per_turn) for p in prompts]
            entry["turns_fit"] = {"median_prompt": turns_that_fit(median, context, answer_budget, per_turn),
                                  "longest_prompt": fit[-1]}  # fmt: skip
            entry["problems_that_may_be_cut"] = sum(f < turns for f in fit)
        out["files"][name] = entry
    return out
