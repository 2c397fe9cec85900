"""The ``search`` tool: a knowledge base of LangGraph and LangChain concepts."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Annotated, Any

import stop_on_artifact as stopping
from langchain_core.messages import AnyMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.prebuilt import InjectedState

from agent.context import ForcedOutcome, run_context
from agent.tools.markdown import escape_math, label
from agent.tools.outcomes import draw_outcome
from agent.tools.topics import TopicIndex

TRANSIENT_MESSAGES = (
    "Search backend timed out after 10s (HTTP 504). The request can be retried.",
    "Search service temporarily unavailable (HTTP 503). Try again shortly.",
)
"""What the model reads after a retryable failure."""

NOT_DONE_MESSAGE = "the knowledge base timed out before it answered. Ask again to retry."
"""What a person reads of a search whose timeout was not retried before the turn ended."""

NO_MATCH_MESSAGE = (
    "No page in the knowledge base covers this query, and searching it again will not change "
    "that. The knowledge base covers LangGraph and LangChain concepts, such as checkpointers, "
    "interrupts, streaming, subgraphs and the store: a question that names one of them finds "
    "its page."
)
"""The dead end: nothing matches, so retrying is waste; a question naming a topic it has
is what helps."""

UNAVAILABLE_MESSAGE = (
    "The knowledge base rejected this query permanently (index offline for maintenance). "
    "It will not answer today."
)
"""A forced fatal outcome."""


@cache
def knowledge_base() -> dict[str, dict[str, Any]]:
    """Load the shipped knowledge base, topic name -> page."""
    data = resources.files("agent.tools").joinpath("data/knowledge_base.json").read_text("utf-8")
    topics: dict[str, dict[str, Any]] = json.loads(data)["topics"]
    return topics


def render_page(page: dict[str, Any]) -> str:
    """Render a knowledge-base page as Markdown, for the model and for a person.

    ``# <title>``, the summary, each section under ``## <heading>``, the code example in
    a fenced ``python`` block, related topics as a list, and where the page lives.

    Args:
        page: One topic of the knowledge base.

    Returns:
        The page as Markdown; no JSON.
    """
    lines = [f"# {page['title']}", "", page["summary"]]
    for section in page["sections"]:
        lines += ["", f"## {section['heading']}", "", section["body"]]
    if page.get("code_example"):
        lines += ["", "## Example", "", "```python", page["code_example"].rstrip("\n"), "```"]
    if page.get("related"):
        lines += ["", "## Related topics", ""]
        lines += [f"- {topic}" for topic in page["related"]]
    if page.get("url"):
        lines += ["", f"Source: `{page['url']}`"]
    return "\n".join(lines)


@cache
def topic_index() -> TopicIndex:
    """The shipped knowledge base's topic names and aliases, indexed once."""
    return TopicIndex(knowledge_base())


def lookup(query: str) -> str | None:
    """Return the first topic a query names, by name or alias, or None.

    Args:
        query: What to look up, in English, Spanish, German or French.

    Returns:
        The topic's name in the knowledge base, or None when the query names none.
    """
    mentions = topic_index().mentions(query)
    return mentions[0].topic if mentions else None


@tool(response_format="content_and_artifact", parse_docstring=True)
def search(
    query: str,
    messages: Annotated[list[AnyMessage], InjectedState("messages")],
    tool_call_id: Annotated[str, InjectedToolCallId],
) -> tuple[str, dict[str, Any]]:
    """Search the LangGraph and LangChain knowledge base for a concept.

    Args:
        query: What to look up, naming the concept (for example "checkpointer").
        messages: The thread's messages, injected by the tool node; the model never sees it.
        tool_call_id: This call's id, injected by the tool node.
    """
    context = run_context()
    outcome, attempt = draw_outcome(context, messages, tool_call_id, query)
    return search_result(query, outcome, attempt)


def search_result(query: str, outcome: ForcedOutcome, attempt: int) -> tuple[str, dict[str, Any]]:
    """Return what a search answers, given the outcome its call drew.

    The in-process :data:`search` tool and the knowledge base's MCP server
    (:mod:`agent.tools.kb_server`) both answer through this, so a graph reads the same
    content and artifact from either.

    Args:
        query: What to look up.
        outcome: ``success`` looks the query up (a miss is fatal: nothing to retry);
            ``transient`` and ``fatal`` answer as the failing backend would.
        attempt: The call's position this turn, recorded in the artifact.

    Returns:
        The content the model reads and the artifact the router reads.
    """
    if outcome == "transient":
        message = TRANSIENT_MESSAGES[attempt % len(TRANSIENT_MESSAGES)]
        not_done = escape_math(f"{label(f'Not searched: “{query}”')}: {NOT_DONE_MESSAGE}")
        return message, stopping.transient(not_done=not_done, attempt=attempt, status=503)
    if outcome == "fatal":
        text = escape_math(f"{label(f'Could not search for “{query}”')}\n\n{UNAVAILABLE_MESSAGE}")
        return text, stopping.fatal(attempt=attempt, cause="unavailable")
    topic = lookup(query)
    if topic is None:
        text = escape_math(f"{label(f'Nothing found for “{query}”')}\n\n{NO_MATCH_MESSAGE}")
        return text, stopping.fatal(attempt=attempt, cause="no_match")
    page = render_page(knowledge_base()[topic])
    return page, stopping.completed(attempt=attempt, topic=topic, chars=len(page))
