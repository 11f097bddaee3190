"""A user's message: the author badge (name, then ``from``) and the text exactly as sent."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.badges import author_badge, superseded_label


class UserMessage(Static):
    """Never raw XML: the text is the signal's contents, unescaped, as the person typed it."""

    DEFAULT_CSS = """
    UserMessage {
        padding: 0 1;
        margin-top: 1;
        &.-superseded { color: $text-muted; text-style: strike; }
    }
    """
    ALLOW_SELECT = True

    def __init__(self, entry: Entry) -> None:
        super().__init__(self._content(entry), markup=False,
                         classes="-superseded" if entry.superseded else "")
        self.entry = entry

    @staticmethod
    def _content(entry: Entry) -> Content:
        return Content.assemble(author_badge(entry.author, entry.source),
                                superseded_label(entry.superseded), " ", entry.text)

    @property
    def source_text(self) -> str:
        return self.entry.text

    def refresh_entry(self) -> None:
        self.set_class(bool(self.entry.superseded), "-superseded")
        self.update(self._content(self.entry))
