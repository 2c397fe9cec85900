"""A latency and price profile for the offline model, used only by the benchmark.

A simulated call takes ``ttft_s + input_tokens / prefill_tps + output_tokens / decode_tps``
seconds (slept, so concurrent runs overlap as they would against a provider), and costs
``input_tokens * input_usd_per_m / 1e6 + output_tokens * output_usd_per_m / 1e6`` dollars.
Tokens are the offline model's ``usage_metadata``: messages plus bound tool schemas.

Default figures, for Groq's ``llama-3.3-70b-versatile`` (none measured here; no network):

- price: $0.59 per million input tokens, $0.79 per million output tokens, Groq's commonly
  published on-demand price for its Llama 70B models (the same pair appears in third-party
  cost tables, for example Mirascope's Groq cost function for ``llama3-70b-8192``);
- decode: 275 output tokens/s, the speed commonly measured for this model on Groq
  (Instructor's Groq guide: "running at 275 tokens/second"; independent tests report
  270-300 tokens/s);
- time to first token: 0.18 s, from independent measurements of this model on Groq
  (about 160-180 ms);
- prefill: 10,000 input tokens/s, an assumption: Groq publishes no prefill rate, and at
  the prompt sizes here (a few hundred to a few thousand tokens) it adds tens of ms.

Every figure has a flag; see ``python -m bench --help``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any
from unittest import mock

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agent.models import OfflineChatModel

SIMULATED_KEY = "simulated_s"
"""``response_metadata`` key holding the seconds a simulated call slept."""


@dataclass(frozen=True)
class Profile:
    """Latency and price of one hosted model."""

    model: str = "groq:llama-3.3-70b-versatile"
    ttft_s: float = 0.18
    """Time to first token, seconds."""
    prefill_tps: float = 10_000.0
    """Input tokens processed per second after the first token's fixed wait."""
    decode_tps: float = 275.0
    """Output tokens generated per second."""
    input_usd_per_m: float = 0.59
    output_usd_per_m: float = 0.79

    def __post_init__(self) -> None:
        """Reject figures a profile cannot use.

        Raises:
            ValueError: If a rate is not positive or a time or price is negative.
        """
        if self.prefill_tps <= 0 or self.decode_tps <= 0:
            msg = "prefill_tps and decode_tps must be positive"
            raise ValueError(msg)
        if min(self.ttft_s, self.input_usd_per_m, self.output_usd_per_m) < 0:
            msg = "ttft_s and prices must not be negative"
            raise ValueError(msg)

    def seconds(self, input_tokens: int, output_tokens: int) -> float:
        """Return the simulated wall time of one call."""
        return self.ttft_s + input_tokens / self.prefill_tps + output_tokens / self.decode_tps

    def dollars(self, input_tokens: int, output_tokens: int) -> float:
        """Return what the tokens cost."""
        return (input_tokens * self.input_usd_per_m + output_tokens * self.output_usd_per_m) / 1e6

    def as_dict(self) -> dict[str, Any]:
        """Return the figures, for the result document."""
        return asdict(self)


ZERO = Profile(model="none", ttft_s=0.0, prefill_tps=1e18, decode_tps=1e18)
"""No simulated wait at all."""


class TimedOfflineModel(OfflineChatModel):
    """The offline model, sleeping as long as its latency profile says each call takes.

    Streaming is off so every call goes through the (a)generate path that sleeps. The field
    is ``latency``, not ``profile``: ``BaseChatModel.profile`` is langchain's own
    ``ModelProfile`` (context window, capabilities), read by middleware.
    """

    latency: Profile = Profile()
    disable_streaming: bool = True

    def _timed(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        message = self._result(messages, kwargs.get("tools") or [])
        usage = message.usage_metadata or {"input_tokens": 0, "output_tokens": 0}
        seconds = self.latency.seconds(usage["input_tokens"], usage["output_tokens"])
        message.response_metadata = {**message.response_metadata, SIMULATED_KEY: seconds}
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._timed(messages, kwargs)
        time.sleep(message.response_metadata[SIMULATED_KEY])
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = self._timed(messages, kwargs)
        await asyncio.sleep(message.response_metadata[SIMULATED_KEY])
        return ChatResult(generations=[ChatGeneration(message=message)])


def simulated_seconds(messages: Sequence[BaseMessage]) -> float:
    """Return the seconds the model calls of a finished run slept, in total."""
    return sum(
        float(m.response_metadata.get(SIMULATED_KEY, 0.0))
        for m in messages
        if isinstance(m, AIMessage)
    )


# The project's graphs pick their model per run with ``load_model(context.model)``; these
# are the names they call it by.
_LOADERS = ("agent.graphs.legacy.load_model", "agent.graphs.middleware.load_model")


@contextmanager
def serving(model: BaseChatModel) -> Iterator[None]:
    """Make the project's graphs use ``model`` for every run inside the block."""

    def load(name: str) -> BaseChatModel:
        del name
        return model

    with mock.patch(_LOADERS[0], load), mock.patch(_LOADERS[1], load):
        yield
