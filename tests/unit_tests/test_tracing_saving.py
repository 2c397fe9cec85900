"""What a hard stop saved, on the root run: metadata and feedback, against the collector.

Both graphs run traced in-process (the real ``langsmith`` client, the loopback collector): a
hard stop leaves ``stop_saved_*`` metadata equal to its decision's ``saved`` and the same as
feedback on the root run (scores only, no content); a run that goes back to the model saves
0 and sends none. Dollars come from the price table or ``AGENT_MODEL_PRICES`` and are
absent, not zero, for a model with no price; a malformed variable is refused by name.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from agent.tracing import metadata as tracing_metadata
from agent.tracing.metadata import FEEDBACK_KEYS, SAVED_KEYS, flush_feedback
from agent.tracing.prices import PRICES_VAR, PriceError, read_prices, usd
from client.scenarios import GRAPHS
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import metadata, trace_both

QUESTION = "What does a checkpointer do?"


def feedback_of(collector: LangSmithCollector, run_id: str) -> dict[str, Any]:
    return {f["key"]: f["score"] for f in collector.feedback if str(f.get("run_id")) == run_id}


async def test_a_hard_stop_leaves_its_saving_as_metadata_and_feedback(
    collector: LangSmithCollector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PRICES_VAR, json.dumps({"offline": [0.59, 0.79]}))
    both = await trace_both(collector, QUESTION, {"force_outcome": "success"}, thread_id="hard")
    flush_feedback()
    for graph in GRAPHS:
        observed, root, _ = both[graph]
        saved = observed.decision["saved"] if observed.decision else None
        assert saved is not None and saved["model_calls"] == 1, graph
        found = metadata(root)
        expected_usd = usd(saved["input_tokens"], saved["output_tokens"], (0.59, 0.79))
        assert {key: found[key] for key in SAVED_KEYS} == {
            "stop_saved_model_calls": 1,
            "stop_saved_input_tokens": saved["input_tokens"],
            "stop_saved_output_tokens": saved["output_tokens"],
            "stop_saved_usd": expected_usd,
            "stop_saved_subagent_model_calls": 0,
        }, graph
        assert expected_usd > 0
        feedback = feedback_of(collector, root["id"])
        assert feedback == {
            FEEDBACK_KEYS["stop_saved_model_calls"]: 1,
            FEEDBACK_KEYS["stop_saved_input_tokens"]: saved["input_tokens"],
            FEEDBACK_KEYS["stop_saved_output_tokens"]: saved["output_tokens"],
            "stop_saved_micro_usd": round(expected_usd * 1_000_000),
        }, graph
    sent = json.dumps(collector.feedback)
    assert "checkpointer" not in sent.lower(), "feedback holds scores, never content"
    project = str(uuid.uuid5(uuid.NAMESPACE_URL, "langsmith-project:tracing-test"))
    assert {str(f.get("session_id")) for f in collector.feedback} == {project}, "by project"


async def test_no_price_no_dollars_and_no_stop_no_saving(collector: LangSmithCollector) -> None:
    both = await trace_both(collector, QUESTION, {"force_outcome": "success"}, thread_id="free")
    never = await trace_both(
        collector, QUESTION, {"force_outcome": "success", "stop_mode": "never"}, thread_id="n"
    )
    flush_feedback()
    for graph in GRAPHS:
        root = both[graph][1]
        assert metadata(root)["stop_saved_model_calls"] == 1
        assert metadata(root)["stop_saved_usd"] is None, "the offline model has no price"
        assert "stop_saved_micro_usd" not in feedback_of(collector, root["id"])
        root = never[graph][1]
        assert {key: metadata(root)[key] for key in SAVED_KEYS} == {
            "stop_saved_model_calls": 0,
            "stop_saved_input_tokens": 0,
            "stop_saved_output_tokens": 0,
            "stop_saved_usd": None,
            "stop_saved_subagent_model_calls": 0,
        }
        assert feedback_of(collector, root["id"]) == {}


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("not json", "must be a JSON object"),
        ("[1, 2]", "not list"),
        ('{"m": [1]}', "entry 1"),
        ('{"m": [0.1, -1]}', "entry 1"),
        ('{"m": [0.1, 0.2], "secret-model": "x"}', "entry 2"),
    ],
)
def test_a_malformed_price_table_is_refused_by_name(value: str, named: str) -> None:
    with pytest.raises(PriceError, match=PRICES_VAR) as raised:
        read_prices({PRICES_VAR: value})
    assert named in str(raised.value) and "secret-model" not in str(raised.value)


def test_the_table_prices_the_groq_model_and_the_variable_adds_models() -> None:
    assert read_prices({})["llama-3.3-70b-versatile"] == (0.59, 0.79)
    assert read_prices({PRICES_VAR: '{"offline": [1, 2]}'})["offline"] == (1.0, 2.0)
    assert usd(1_000_000, 1_000_000, (0.59, 0.79)) == pytest.approx(1.38)


def test_a_failed_send_is_logged_by_type_and_never_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Refusing:
        def read_project(self, **_: Any) -> Any:
            raise ConnectionError("https://secret.example/token=abc")

    tracing_metadata._send(Refusing(), None, None, "p", {"k": 1})  # type: ignore[arg-type]
    assert "ConnectionError" in caplog.text and "secret" not in caplog.text


async def test_the_root_run_docs_tracing_shows_is_the_one_sent(
    collector: LangSmithCollector,
) -> None:
    from pathlib import Path

    from agent.tracing.metadata import STOP_KEYS, TOTAL_KEYS
    from client.scenarios import by_name

    page = (Path(__file__).resolve().parents[2] / "docs" / "tracing.md").read_text("utf-8")
    start = page.index("The root run of `legacy` on the scenario `success-hard`")
    block = page[
        page.index("```json\n", start) + 8 : page.index("```\n", page.index("```json\n", start) + 8)
    ]
    scenario = by_name("success-hard")
    both = await trace_both(collector, scenario.query, scenario.context, thread_id="docs")
    found = metadata(both["legacy"][1])
    assert json.loads(block) == {key: found[key] for key in STOP_KEYS + TOTAL_KEYS + SAVED_KEYS}
