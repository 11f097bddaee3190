"""A streamed answer that grows costs one layout of the screen per sync, not two: the
transcript, the answer and its Markdown store the virtual size the layout gave them without
asking for another layout (``NoLayoutEcho``), and the view still follows, scrolls and shows its
scrollbar as before."""

from __future__ import annotations

from typing import Any

from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from tui_agent.app.transcript import Transcript
from tui_agent.app.widgets.assistant_message import AssistantMessage
from tui_agent.app.widgets.transcript_view import TranscriptView


def event(type_: str, **payload: Any) -> dict[str, Any]:
    return {"type": type_, "run_id": "run1", "from": "AGENT", "payload": payload}


class OneView(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.transcript = Transcript(agent_id="demo")
        self.reflows = 0

    def compose(self) -> ComposeResult:
        yield TranscriptView(self.transcript)


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(5):  # bounded: a layout requested in echo would land within these
        await pilot.pause()


async def test_each_sync_of_a_growing_answer_costs_one_layout_and_the_view_follows(
        monkeypatch: Any) -> None:
    app = OneView()
    reflow = Compositor.reflow

    def counted(self: Compositor, parent: Any, size: Any) -> Any:
        app.reflows += 1
        return reflow(self, parent, size)

    monkeypatch.setattr(Compositor, "reflow", counted)
    async with app.run_test(size=(60, 12)) as pilot:
        view = app.query_one(TranscriptView)
        app.transcript.apply(event("start", agent_id="demo"))
        app.transcript.apply(event("text-delta", text="first line"))
        await view.sync()
        await settle(pilot)
        per_sync = []
        for n in range(8):  # each sync adds two paragraphs: the answer grows 4 lines
            app.transcript.apply(event("text-delta", text=f"\n\npara {n}a\n\npara {n}b"))
            before = app.reflows
            await view.sync()
            await settle(pilot)
            per_sync.append(app.reflows - before)
            assert view.scroll_y == view.max_scroll_y, "following: the end is in view"
        # the sync that makes the content outgrow the view adds the scrollbar's own layouts
        assert per_sync.count(1) >= 7 and sum(per_sync) <= 10, f"layouts per sync: {per_sync}"
        assert view.max_scroll_y > 10 and view.show_vertical_scrollbar
        answer = app.query_one(AssistantMessage)
        assert answer.stream.text_lines()[-1] == "para 7b"
