"""An assistant answer: the agent's name, then its Markdown, streamed at a bounded cost.

``sync()`` appends only the text that arrived since the last sync (the pane calls it at its
flush rate, not per token); when the answer ends, ``MarkdownStream.finish`` renders it once in
full. An aborted, interrupted or failed answer keeps its partial text and says so.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.badges import superseded_label
from tui_agent.app.widgets.layout_echo import NoLayoutEcho
from tui_agent.app.widgets.markdown_stream import MarkdownStream

STATUS_LABELS = {
    "streaming": ("▌", "$text-accent"),
    "aborted": ("⏹ aborted", "$text-warning"),
    "interrupted": ("⚠ interrupted", "$text-warning"),
    "failed": ("✗ failed", "$text-error"),
}


class AssistantMessage(NoLayoutEcho, Vertical):
    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        padding: 0 1;
        margin-top: 1;
        & > .assistant--head { height: 1; }
        & > MarkdownStream { padding-left: 2; }
        &.-superseded > MarkdownStream { opacity: 55%; }
    }
    """
    # Nothing of its own is drawn (its head and stream are children): Textual then paints its
    # visible rows blank, instead of rendering and keeping a line per row of its full height,
    # which for a long streamed answer was every row, again at every layout.
    BLANK = True

    def __init__(self, entry: Entry) -> None:
        super().__init__(classes="-superseded" if entry.superseded else "")
        self.entry = entry
        self._superseded = entry.superseded
        self._shown = len(entry.text)  # characters of entry.text already handed to the stream
        self._status = entry.status
        # Made here, not in compose: the pane may refresh this entry before Textual has
        # composed it (a mount is awaited, its children's compose is not), and the text it
        # appends then must reach the stream (tests/app/test_pane_controls.py).
        self.stream = MarkdownStream(entry.text, finished=entry.status != "streaming")
        self._head_line = Static(self._head(), classes="assistant--head", markup=False)

    def compose(self) -> ComposeResult:
        yield self._head_line
        yield self.stream

    def _head(self) -> Content:
        label, style = STATUS_LABELS.get(self.entry.status, ("", ""))
        head = Content.assemble(("◆ ", "$text-accent"), (self.entry.author or "agent", "bold"))
        head += superseded_label(self.entry.superseded)
        return head + Content.assemble("  ", (label, style)) if label else head

    @property
    def source_text(self) -> str:
        """The answer's original Markdown (what 'copy message' copies)."""
        return self.entry.text

    def refresh_entry(self) -> None:
        stream = self.stream
        text = self.entry.text
        if len(text) > self._shown:
            stream.append(text[self._shown :])
            self._shown = len(text)
        if self.entry.status != self._status:
            self._status = self.entry.status
            if self._status != "streaming" and not stream.finished:
                stream.finish()
                # Textual caches every line of a widget it painted until the widget is
                # refreshed whole: while the answer streamed in view, that became all of this
                # container's lines (and their crops). Let them go now it is finished.
                self.refresh()
            self._head_line.update(self._head())
        if self.entry.superseded != self._superseded:  # retried, from any process
            self._superseded = self.entry.superseded
            self.set_class(bool(self._superseded), "-superseded")
            self._head_line.update(self._head())
