"""A non-user signal in one compact line: a state update, a reminder, a notification, a
digest or a custom tag, each with its own icon and colour."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from tui_agent.app.transcript import Entry, signal_icon
from tui_agent.text import one_line

STYLES = {"state": "$text-secondary", "notification": "$text-warning", "digest": "$text-warning",
          "reactive": "$text-accent"}
PRIORITY_MARKS = {"urgent": "‼", "high": "!", "medium": "·", "low": "·"}


class SignalLine(Static):
    DEFAULT_CSS = """
    SignalLine {
        padding: 0 1 0 3;
        color: $text-muted;
    }
    """
    ALLOW_SELECT = True

    def __init__(self, entry: Entry) -> None:
        super().__init__(self.content_of(entry), markup=False)
        self.entry = entry

    @staticmethod
    def content_of(entry: Entry) -> Content:
        """The line's content (``SignalRun`` draws several of them in one widget)."""
        style = STYLES.get(entry.signal_type, "$text-muted")
        attrs = entry.attributes
        if entry.signal_type == "notification":
            label = notification_label(attrs)
        elif entry.signal_type == "state":
            version = attrs.get("version")
            label = f"{entry.tag} {attrs.get('id', '')}" + (f" v{version}" if version else "")
        elif entry.signal_type == "digest":
            label = f"digest ({attrs.get('pending', '?')} pending)"
        else:
            label = entry.tag
        return Content.assemble((f"{signal_icon(entry)} {label}", style), "  ",
                                (one_line(entry.text, 200), "$text-muted"))

    @property
    def source_text(self) -> str:
        return self.entry.text

    def refresh_entry(self) -> None:
        self.update(self.content_of(self.entry))


def notification_label(attrs: dict[str, object]) -> str:
    """``! ci/build (high)``; the parts a notification left out (a ``/signal notification``
    typed by hand has no source, kind or priority) are left out, not shown empty."""
    priority = str(attrs.get("priority") or "")
    where = "/".join(str(attrs[key]) for key in ("source", "kind") if attrs.get(key))
    parts = [PRIORITY_MARKS.get(priority, "·") if priority else "", where,
             f"({priority})" if priority else ""]
    return " ".join(part for part in parts if part) or "notification"
