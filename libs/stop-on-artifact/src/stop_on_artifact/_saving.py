"""What a hard stop saved: the model call it skipped, estimated in tokens.

The skipped call would have read what the turn's last model call read, that call's reply and
the tool step after it, and would have written about the answer the tools' content now gives.
Where the last call reported ``usage_metadata``, its figures are the base (they count the
system prompt and the tool schemas, which the state does not hold); otherwise every message is
counted with langchain-core's ``count_tokens_approximately``, as is the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from typing_extensions import TypedDict


class Saving(TypedDict):
    """The model call a hard stop skipped: ``stop_decision["saved"]``."""

    model_calls: int
    """Always 1: the call that would have restated the tools' content."""
    input_tokens: int
    output_tokens: int


def estimate_saving(messages: Sequence[BaseMessage], answer: str) -> Saving:
    """Estimate the call a hard stop with ``answer`` skips after ``messages``."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and message.usage_metadata is not None:
            usage = message.usage_metadata
            after = count_tokens_approximately(messages[index + 1 :])
            read = usage["input_tokens"] + usage["output_tokens"] + after
            break
    else:
        read = count_tokens_approximately(messages)
    written = count_tokens_approximately([AIMessage(content=answer)])
    return {"model_calls": 1, "input_tokens": read, "output_tokens": written}
