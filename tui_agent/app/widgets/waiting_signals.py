"""Signals accepted on the thread that no run has taken yet, under the transcript.

A message sent into a live run is delivered at the run's next step boundary, which with a slow
model can be many seconds away; until then it shows here (from any process), so whoever sent
it sees it arrived. Once the run takes it, it moves into the transcript as its echo.
"""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Static

from tui_agent.app.bridge import signal_text
from tui_agent.app.widgets.badges import author_badge
from tui_agent.text import one_line

SHOWN = 3  # lines at most; the rest is counted


class WaitingSignals(Static):
    DEFAULT_CSS = """
    WaitingSignals {
        height: auto;
        max-height: 4;
        padding: 0 1;
        color: $text-muted;
        display: none;
        &.-some { display: block; }
    }
    """
    _shown: Content | None = None  # what it shows now

    def show_waiting(self, waiting: list[dict[str, Any]]) -> None:
        """Show ``waiting`` (repainted only when its text changed: a pane syncs often)."""
        self.set_class(bool(waiting), "-some")
        if waiting:
            content = render_waiting(waiting)
            if content != self._shown:
                self._shown = content
                self.update(content)
        else:
            self._shown = None


def render_waiting(waiting: list[dict[str, Any]]) -> Content:
    lines: list[Content] = []
    for signal in waiting[:SHOWN]:
        data = signal.get("data") or {}
        attributes = data.get("attributes") or {}
        when = "queued: runs after the live run" if signal.get("status") == "queued" \
            else "at the live run's next step"
        if signal.get("type") == "user":
            who = author_badge(str(attributes.get("name") or ""),
                               str(attributes.get("from") or ""))
        else:
            who = Content(str(data.get("tag_name") or signal.get("type")))
        text = one_line(signal_text(data.get("contents", "")), 80)
        lines.append(Content.assemble(("⧗ ", "$text-accent"), who, " ", text,
                                      (f"  ({when})", "$text-muted")))
    if len(waiting) > SHOWN:
        lines.append(Content(f"  … and {len(waiting) - SHOWN} more waiting"))
    return Content("\n").join(lines)
