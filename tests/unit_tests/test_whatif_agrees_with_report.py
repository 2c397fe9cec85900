"""The what-if agrees with ``client report`` on the demo app's own threads (issue #65).

Each forced-outcome scenario runs through both graphs in process; the thread's values are read
twice: by ``client report`` (:func:`client.report.thread_figures`, what the run made and its
stop saved) and by ``python -m stop_on_artifact.whatif`` (the thread's messages, each tool
result's own artifact as the mapping, the turn's recorded settings). A thread whose turn
already stopped is one the what-if decides the same way: the same rule and tool, the same model
calls (the stop's answer is no call) and the same calls saved, nothing cut.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from stop_on_artifact import StopSettings
from stop_on_artifact.whatif import thread_conversation, whatif

from client.report import thread_figures
from client.scenarios import SCENARIOS
from tests.support.graph_runs import build, run
from tests.support.recorded import recorded

CASES = [s for s in SCENARIOS if not s.resume and s.context.get("stop_mode", "hard") == "hard"]


@pytest.mark.parametrize("graph", ["legacy", "middleware"])
async def test_the_whatif_reads_the_apps_threads_as_client_report_does(graph: str) -> None:
    assert len(CASES) >= 10
    compiled, compared = build(graph), 0
    for scenario in CASES:
        observed = await run(compiled, scenario.query, scenario.context)
        values = {
            "messages": [m.model_dump() for m in observed.messages],
            "stop_decision": observed.decision,
        }
        figures = thread_figures(values, datetime.now(UTC))
        assert figures is not None
        settings = StopSettings.model_validate(observed.state["stop_turn"]["settings"])
        report = whatif([thread_conversation(scenario.name, values)], recorded, settings)
        outcome = report.outcomes[-1]
        assert outcome.model_calls == figures.model_calls, scenario.name
        assert outcome.cut == [], scenario.name
        if figures.saved_model_calls:  # a hard stop: the same one, saving the same calls
            assert (outcome.rule, outcome.tool) == (figures.rule, figures.tool), scenario.name
            assert outcome.model_calls_saved == figures.saved_model_calls, scenario.name
            assert outcome.answer == observed.answer.text, scenario.name
            compared += 1
        else:  # the model answered: nothing a stop skipped
            assert outcome.model_calls_saved == 0, scenario.name
    assert compared >= 5
