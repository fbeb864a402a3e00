"""The one chat client: every model the project talks to goes through LiteLLM.

A local vLLM engine on Ray Serve (``cobalt.serve.engine``), a ``vllm serve`` process, OpenAI,
Bedrock ... are all an OpenAI-style chat endpoint to LiteLLM, so inference, evaluation and the
reward-hacking judge share this class::

    model = ChatModel("openai/policy", api_base="http://127.0.0.1:8000/v1")
    completion = await model.complete(messages, n=4, temperature=0.6, top_p=0.95, max_tokens=512)
    completion.texts, completion.usage

Keys come from the environment as LiteLLM reads them (``OPENAI_API_KEY``, AWS variables ...).
Rate limits and transient errors are retried with exponential back-off; anything else (a bad
request, a wrong key, an unknown model) raises :class:`EngineError` at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from dataclasses import dataclass, field

log = logging.getLogger("cobalt.infer")


class EngineError(RuntimeError):
    """The model endpoint failed in a way retrying does not fix (or retries ran out)."""


class ContextWindowExceeded(EngineError):
    """The prompt no longer fits the model's context window (a long statement, or a conversation
    grown over many feedback turns)."""


@dataclass
class Completion:
    texts: list[str]
    usage: dict = field(default_factory=dict)  # prompt_tokens, completion_tokens, calls


@dataclass
class Activity:
    """When the engine had requests in flight: the engine's idle fraction of a run."""

    in_flight: int = 0
    busy_s: float = 0.0
    _since: float = 0.0

    def enter(self) -> None:
        if self.in_flight == 0:
            self._since = time.monotonic()
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.busy_s += time.monotonic() - self._since


def _litellm():
    # LiteLLM fetches a model price list from the network at import unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)  # else one INFO line per request
    litellm.drop_params = True  # providers that lack a parameter (top_p, n ...) ignore it
    return litellm


def _transient_errors(litellm) -> tuple[type[BaseException], ...]:
    return (
        litellm.RateLimitError,
        litellm.APIConnectionError,
        litellm.Timeout,
        litellm.ServiceUnavailableError,
        litellm.InternalServerError,
    )


class ChatModel:
    """An OpenAI-style chat model reached through LiteLLM, with retries and usage accounting."""

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        *,
        max_retries: int = 6,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        request_timeout_s: float = 1800.0,
        extra_body: dict | None = None,
    ):
        self.model = model
        self.api_base = api_base
        # A local endpoint needs no key, but the OpenAI client insists on one.
        self.api_key = api_key or ("EMPTY" if api_base else None)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.request_timeout_s = request_timeout_s
        self.extra_body = extra_body or {}
        self.activity = Activity()
        self.context_exceeded = 0  # requests refused because the prompt did not fit
        self._litellm = _litellm()

    def __repr__(self) -> str:
        return f"ChatModel({self.model!r}, api_base={self.api_base!r})"

    async def complete(self, messages: list[dict], *, n: int = 1, **sampling) -> Completion:
        """``n`` sampled answers to one conversation. If the provider returns fewer choices than
        asked (some ignore ``n``), the rest are requested one by one."""
        texts: list[str] = []
        usage = {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
        while len(texts) < n:
            response = await self._call(messages, n=n - len(texts), **sampling)
            texts += [choice.message.content or "" for choice in response.choices][: n - len(texts)]
            usage["calls"] += 1
            if getattr(response, "usage", None):
                usage["prompt_tokens"] += response.usage.prompt_tokens or 0
                usage["completion_tokens"] += response.usage.completion_tokens or 0
            if not response.choices:
                raise EngineError(f"{self.model}: the endpoint returned no choices")
        return Completion(texts, usage)

    async def _call(self, messages: list[dict], **params):
        litellm = self._litellm
        transient = _transient_errors(litellm)
        for attempt in range(self.max_retries + 1):
            self.activity.enter()
            try:
                return await litellm.acompletion(
                    model=self.model,
                    messages=messages,
                    api_base=self.api_base,
                    api_key=self.api_key,
                    timeout=self.request_timeout_s,
                    num_retries=0,  # retries are ours (logged, with back-off)
                    **({"extra_body": self.extra_body} if self.extra_body else {}),
                    **params,
                )
            except transient as e:
                if attempt == self.max_retries:
                    raise EngineError(f"{self.model}: gave up after {attempt + 1} attempts: {e}") from e
                delay = min(self.max_backoff_s, self.backoff_s * 2**attempt) * (0.5 + random.random())
                log.warning("%s: %s; retry %d in %.1f s", self.model, type(e).__name__, attempt + 1, delay)
                await asyncio.sleep(delay)
            except litellm.ContextWindowExceededError as e:
                self.context_exceeded += 1
                raise ContextWindowExceeded(
                    f"{self.model}: a conversation outgrew the model's context window; raise the "
                    "engine's max_model_len (llm.engine_kwargs in configs/engine.yaml) or lower "
                    f"--max_tokens or --turns ({e})"
                ) from e
            except Exception as e:
                raise EngineError(f"{self.model}: {type(e).__name__}: {e}") from e
            finally:
                self.activity.leave()
        raise AssertionError("unreachable")


async def check_reachable(model: ChatModel, timeout_s: float = 30.0) -> None:
    """One tiny request, so an unreachable or misconfigured endpoint fails before any work starts.
    An endpoint that takes the request but does not answer in time is busy, not unreachable (an
    engine serving another chain's requests queues the probe behind them): a warning, and the work
    goes on with its own timeouts and retries."""
    probe = ChatModel(
        model.model,
        model.api_base,
        model.api_key,
        max_retries=1,
        backoff_s=0.5,
        request_timeout_s=timeout_s,
        extra_body=model.extra_body,
    )
    try:
        await asyncio.wait_for(
            probe.complete([{"role": "user", "content": "Say OK."}], max_tokens=1), timeout_s * 2
        )
    except (EngineError, TimeoutError) as e:
        where = f" at {model.api_base}" if model.api_base else ""
        if isinstance(e, TimeoutError) or isinstance(e.__cause__, probe._litellm.Timeout):
            log.warning(
                "the model %r%s did not answer a probe in %.0f s: busy; going on",
                model.model,
                where,
                timeout_s,
            )
            return
        raise EngineError(f"the model {model.model!r}{where} is not reachable: {e}") from None
