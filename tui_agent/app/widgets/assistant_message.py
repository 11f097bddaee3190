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
from tui_agent.app.widgets.markdown_stream import MarkdownStream

STATUS_LABELS = {
    "streaming": ("▌", "$text-accent"),
    "aborted": ("⏹ aborted", "$text-warning"),
    "interrupted": ("⚠ interrupted", "$text-warning"),
    "failed": ("✗ failed", "$text-error"),
}


class AssistantMessage(Vertical):
    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        padding: 0 1;
        margin-top: 1;
        & > .assistant--head { height: 1; }
        & > MarkdownStream { padding-left: 2; }
    }
    """

    def __init__(self, entry: Entry) -> None:
        super().__init__()
        self.entry = entry
        self._shown = 0  # characters of entry.text already handed to the stream
        self._status = ""

    def compose(self) -> ComposeResult:
        yield Static(self._head(), classes="assistant--head", markup=False)
        done = self.entry.status != "streaming"
        self._shown = len(self.entry.text)
        self._status = self.entry.status
        yield MarkdownStream(self.entry.text, finished=done)

    def _head(self) -> Content:
        label, style = STATUS_LABELS.get(self.entry.status, ("", ""))
        head = Content.assemble(("◆ ", "$text-accent"), (self.entry.author or "agent", "bold"))
        return head + Content.assemble("  ", (label, style)) if label else head

    @property
    def source_text(self) -> str:
        """The answer's original Markdown (what 'copy message' copies)."""
        return self.entry.text

    def refresh_entry(self) -> None:
        stream = self.query_one(MarkdownStream)
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
            self.query_one(".assistant--head", Static).update(self._head())
