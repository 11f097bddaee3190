"""The top line: a tab per open pane, and the inbox and state toggles — all clickable.

Panes beyond what the terminal shows at once stay open as tabs here (``·`` shown, ``▸``
focused, blank: a tab in the background); a click on a tab shows and focuses its pane; a click
on ``✉ inbox`` or ``◧ state`` does what f2 or f3 does. Checked by tests/app/test_layout.py.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget


class Tab(NamedTuple):
    label: str
    focused: bool
    shown: bool
    unread: int


class PaneBar(Widget, can_focus=False):
    DEFAULT_CSS = """
    PaneBar {
        height: 1;
        background: $panel;
        color: $text-muted;
        padding: 0 1;
    }
    """

    class TabClicked(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    class ToggleClicked(Message):
        """``name``: "inbox" or "state"."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tabs: tuple[Tab, ...] = ()
        self.toggles: tuple[tuple[str, str, bool], ...] = ()  # (name, label, on)
        self.note = "starting…"
        self._spans: list[tuple[int, int, Message]] = []

    def show(self, tabs: list[Tab], toggles: list[tuple[str, str, bool]], note: str) -> None:
        """Repaint only when what it shows changed."""
        new = (tuple(tabs), tuple(toggles), note)
        if new != (self.tabs, self.toggles, self.note):
            self.tabs, self.toggles, self.note = new
            self.refresh()

    def render(self) -> Text:
        width = self.content_region.width or self.size.width
        line = Text(no_wrap=True, overflow="ellipsis")
        self._spans = []
        right = Text(no_wrap=True)
        spans_right: list[tuple[int, int, Message]] = []
        for name, label, on in self.toggles:
            start = right.cell_len
            right.append(f" {label} ", "reverse" if on else "")
            spans_right.append((start, right.cell_len, self.ToggleClicked(name)))
        room = max(0, width - right.cell_len - 1)
        for index, tab in enumerate(self.tabs):
            mark = "▸" if tab.focused else ("·" if tab.shown else " ")
            unread = f" ✉{tab.unread}" if tab.unread else ""
            text = f"{mark}{index + 1} {tab.label}{unread}  "
            start = line.cell_len
            line.append(text, "bold" if tab.focused else "")
            self._spans.append((start, line.cell_len, self.TabClicked(index)))
        if not self.tabs:
            line.append(self.note)
        elif self.note and line.cell_len + cell_len(self.note) + 1 <= room:
            line.append(self.note, "dim")
        line.truncate(room, overflow="ellipsis", pad=True)
        offset = max(room, line.cell_len) + 1
        line.append(" ")
        self._spans += [(offset + s, offset + e, message) for s, e, message in spans_right]
        line.append_text(right)
        return line

    def spans(self) -> list[tuple[int, int, Message]]:
        """Where each tab and toggle is (content columns, from the last render)."""
        return list(self._spans)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        for start, end, message in self._spans:
            if start <= offset.x < end:
                # a fresh message each time: one instance may be posted once
                if isinstance(message, self.TabClicked):
                    self.post_message(self.TabClicked(message.index))
                elif isinstance(message, self.ToggleClicked):
                    self.post_message(self.ToggleClicked(message.name))
                return
