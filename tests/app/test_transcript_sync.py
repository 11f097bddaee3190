"""``TranscriptView.sync`` against its transcript, widget by widget: the DOM changes of a sync
are made at once and completed after it (a batch held across the mounts' awaits stopped every
frame of the app), and nothing it adds joins a widget that the same sync removes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from textual.app import App, ComposeResult

from tui_agent.app.transcript import Transcript
from tui_agent.app.widgets.signal_run import SignalRun
from tui_agent.app.widgets.transcript_view import TranscriptView
from tui_agent.store.records import MessageRecord

NOW = datetime(2026, 12, 1, tzinfo=UTC)


class OneView(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.transcript = Transcript(agent_id="demo")

    def compose(self) -> ComposeResult:
        yield TranscriptView(self.transcript)


def reactive(id_: str, text: str, run_id: str | None) -> dict[str, Any]:
    return {"type": "data-signal", "run_id": run_id, "from": "AGENT",
            "payload": {"id": id_, "type": "reactive", "contents": text}}


def signal_record(id_: str, text: str, run_id: str) -> MessageRecord:
    signal = {"id": id_, "type": "reactive", "contents": text}
    return MessageRecord(id=f"m-{id_}", thread_id="t", resource_id="r", role="user",
                         content=text, run_id=run_id, metadata={"signal": signal},
                         created_at=NOW)


async def test_a_signal_added_as_its_runs_last_line_is_removed_shows_in_a_live_widget() -> None:
    app = OneView()
    async with app.run_test(size=(60, 12)):
        view = app.query_one(TranscriptView)
        app.transcript.load_history([signal_record("s1", "from history", "run1")])
        await view.sync()
        assert [type(w) for w in view.children] == [SignalRun]
        shown_before = view.children[0]
        # The live stream replays run1 from its start (its history copy goes) and, in the same
        # sync, a signal of another run arrives: it must not join the run of lines being removed.
        app.transcript.apply({"type": "start", "run_id": "run1", "from": "AGENT",
                              "payload": {}})
        app.transcript.apply(reactive("s2", "arrived meanwhile", None))
        await view.sync()
        assert shown_before not in view.children
        lines = [entry.text for widget in view.children if isinstance(widget, SignalRun)
                 for entry in widget.entries]
        assert lines == ["arrived meanwhile"]
