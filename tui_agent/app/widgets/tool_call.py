"""A tool call: one line (name, short arguments, status) that expands to the whole exchange."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import Static

from tui_agent.app.transcript import Entry
from tui_agent.text import one_line

STATUS = {"running": ("…", "$text-muted"), "ok": ("✓", "$text-success"),
          "error": ("✗", "$text-error"),
          "waiting": ("⏸ waits for approval (f10)", "bold $text-warning")}
SHORT = 60


class ToolCall(Static, can_focus=True):
    """Enter or a click toggles between the one-line and the full view."""

    DEFAULT_CSS = """
    ToolCall {
        padding: 0 1 0 3;
        color: $text-muted;
        &:focus { background: $accent 25%; color: $foreground; }
        &.-superseded { text-style: strike; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_details", "Expand", id="tool.toggle"),
    ]
    ALLOW_SELECT = True

    def __init__(self, entry: Entry) -> None:
        super().__init__(markup=False, classes="-superseded" if entry.superseded else "")
        self.entry = entry
        self.expanded = False
        self.update(self._content())

    def _content(self) -> Content:
        mark, style = STATUS.get(self.entry.status, ("?", ""))
        name = Content.assemble(("⚙ ", "$text-warning"), (self.entry.tag, "bold $text-warning"))
        if not self.expanded:
            result = "" if self.entry.result is None else f" → {one_line(self.entry.result, SHORT)}"
            return Content.assemble(name, f"({one_line(self.entry.args or {}, SHORT)})",
                                    (f" {mark}", style), result)
        return Content.assemble(
            name, (f" {mark}", style), "\n", ("arguments ", "bold"), _pretty(self.entry.args),
            "\n", ("result ", "bold"), _pretty(self.entry.result),
        )

    @property
    def source_text(self) -> str:
        return f"{self.entry.tag}({_pretty(self.entry.args)}) → {_pretty(self.entry.result)}"

    def refresh_entry(self) -> None:
        self.set_class(bool(self.entry.superseded), "-superseded")
        self.update(self._content())

    def action_toggle_details(self) -> None:
        self.expanded = not self.expanded
        self.refresh_entry()

    def on_click(self) -> None:
        self.action_toggle_details()


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
