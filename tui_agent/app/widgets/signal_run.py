"""Consecutive signal lines in one widget: a burst of state updates, reminders and
notifications costs the app one widget, not one each.

Every layout of the app arranges every mounted widget of every pane (Textual reflows the whole
screen), and a pane that receives bursts of signals held dozens of one-line widgets: drawn as
one, they look the same (each line is a ``SignalLine``'s content, wrapped on its own) at a
fraction of the layout's cost (``benchmarks/bench_app_hours.py``). A line that needs a widget of
its own — selected, found, revealed from the inbox — is split out of the run by
``TranscriptView.entry_widget`` (tests/app/test_pane_messages.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from textual.await_remove import AwaitRemove
from textual.content import Content
from textual.widgets import Static

from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.signal_line import SignalLine

if TYPE_CHECKING:
    from textual.css.styles import RulesMap


class SignalRun(Static):
    DEFAULT_CSS = """
    SignalRun {
        padding: 0 1 0 3;
        color: $text-muted;
    }
    """
    ALLOW_SELECT = True

    def __init__(self, entries: Iterable[Entry]) -> None:
        super().__init__(markup=False)
        self.entries: list[Entry] = []
        self.extend(entries)

    def extend(self, entries: Iterable[Entry]) -> None:
        """More lines at the end."""
        self.entries.extend(entries)
        self.refresh_entry()

    def keep(self, entries: list[Entry]) -> None:
        """Show only ``entries`` (some of the run's, in order) from now on."""
        self.entries = entries
        self.refresh_entry()

    def remove(self) -> AwaitRemove:
        """Removed, the run holds no lines at once, though its removal completes later: a
        signal added meanwhile (``TranscriptView._mount`` joins the run that ends the view)
        starts a run of its own instead of going with this one
        (tests/app/test_transcript_sync.py)."""
        self.entries = []
        return super().remove()

    def refresh_entry(self) -> None:
        self.update(Content("\n").join([SignalLine.content_of(e) for e in self.entries]))

    @property
    def source_text(self) -> str:
        return "\n".join(entry.text for entry in self.entries)

    def entry_at(self, y: int) -> Entry | None:
        """The entry drawn on row ``y`` of the content (its lines wrap at the content width)."""
        width = max(1, self.content_region.width)
        top = 0
        rules = cast("RulesMap", self.styles)  # read as a mapping of rules (RenderStyles.get)
        for entry in self.entries:
            top += SignalLine.content_of(entry).get_height(rules, width)
            if y < top:
                return entry
        return None
