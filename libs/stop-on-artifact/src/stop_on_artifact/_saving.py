"""What a hard stop saved: the model call it skipped, estimated from the turn's messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from typing_extensions import TypedDict


class Saving(TypedDict):
    """The model call a hard stop skipped: `stop_decision["saved"]`."""

    model_calls: int  # 1, the call that would have restated the tools' content; 2 with a retry
    input_tokens: int
    output_tokens: int
    subagent_model_calls: NotRequired[int]  # what the subagents whose stops answer here saved


def estimate_saving(
    messages: Sequence[BaseMessage],
    answer: str | list[str | dict[str, Any]],
    retried: Sequence[str] = (),
) -> Saving:
    """Estimate the model calls a hard stop with `answer` skips after `messages`.

    The skipped call reads what the last model call read (its `usage_metadata`, else
    approximated), that reply and the tool step; `retried` calls add the retry round.
    """
    for index, message in reversed(list(enumerate(messages))):
        if isinstance(message, AIMessage) and (usage := message.usage_metadata) is not None:
            after = count_tokens_approximately(messages[index + 1 :])
            read = usage["input_tokens"] + usage["output_tokens"] + after
            break
    else:
        read = count_tokens_approximately(messages)
    written = count_tokens_approximately([AIMessage(content=answer)])
    if not retried:
        return {"model_calls": 1, "input_tokens": read, "output_tokens": written}
    replies = [(i, m) for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.tool_calls]
    calls = [call for _, m in replies for call in m.tool_calls if call["id"] in retried]
    reissued = count_tokens_approximately([AIMessage(content="", tool_calls=calls)])
    last = replies[-1][0] if replies else len(messages)
    step = [m for m in messages[last:] if isinstance(m, ToolMessage)]
    settled = [m for m in step if m.tool_call_id not in retried] or step
    result = count_tokens_approximately(settled) // max(len(settled), 1)
    second = read + reissued + result * len(calls)  # the answering call reads the round too
    return {"model_calls": 2, "input_tokens": read + second, "output_tokens": reissued + written}
