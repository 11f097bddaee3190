"""The end of a run that did not simply finish: aborted, interrupted, failed (one line)."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from tui_agent.app.transcript import Entry

MARKS = {"aborted": ("⏹", "$text-warning"), "interrupted": ("⚠", "$text-warning"),
         "failed": ("✗", "$text-error"), "warning": ("⚠", "$text-warning")}


class RunMarker(Static):
    DEFAULT_CSS = """
    RunMarker {
        padding: 0 1 0 3;
    }
    """

    def __init__(self, entry: Entry) -> None:
        mark, style = MARKS.get(entry.status, ("•", "$text-muted"))
        super().__init__(Content.assemble((f"{mark} {entry.text}", style)), markup=False)
        self.entry = entry

    @property
    def source_text(self) -> str:
        return self.entry.text

    def refresh_entry(self) -> None:
        pass
