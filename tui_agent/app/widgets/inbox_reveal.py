"""Scroll a thread pane to where an inbox record was delivered, and flash that line."""

from __future__ import annotations

from textual.color import Color
from textual.widget import Widget

from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.inbox_filters import InboxRecord
from tui_agent.app.widgets.reveal_scroll import (
    answers_rendered,
    scroll_until_there,
    wait_until,
    widget_of,
)
from tui_agent.app.widgets.thread_pane import ThreadPane

MAX_PAGES = 20  # older history pages read looking for the delivery
FLASH_S = 3.0


async def reveal_delivery(pane: ThreadPane, record: InboxRecord) -> bool:
    """Once ``pane`` shows its thread, scroll to the notification line of ``record``'s delivery
    (paging older history in, at most ``MAX_PAGES`` pages) and flash it. A record that was not
    delivered, or whose line is not found, gets a line in the pane's status line instead.
    True if it scrolled."""
    label = f"{record.source}/{record.kind}"
    if record.delivered_at is None:
        pane.show_notice(f"✉ {label} was not delivered ({record.status})")
        return False
    if not await wait_until(lambda: pane.feed.attached):
        return False
    entry = await _find_entry(pane, record.id)
    widget = None if entry is None else await widget_of(pane.transcript_view(), entry)
    if widget is None:
        pane.show_notice(f"✉ {label} was delivered, but its line is not in the history")
        return False
    await wait_until(lambda: pane.drained)
    view = pane.transcript_view()
    await answers_rendered(view)  # their final heights: the line does not move after
    view.following = False  # no later sync scrolls it back to the end
    await scroll_until_there(view, widget)
    _flash(widget)
    pane.show_notice(f"✉ {label} was delivered here")
    return True


def _delivery(pane: ThreadPane, notification_id: str) -> Entry | None:
    for entry in reversed(pane.feed.transcript.entries):
        if entry.signal_type == "notification" and entry.attributes.get("id") == notification_id:
            return entry
    return None


async def _find_entry(pane: ThreadPane, notification_id: str) -> Entry | None:
    """The delivery's entry, paging older history into the pane until it is found."""
    view = pane.transcript_view()
    for _ in range(MAX_PAGES):
        entry = _delivery(pane, notification_id)
        if entry is not None or not pane.feed.has_older:
            return entry
        view.following = False  # older pages stay mounted (a following view prunes its top)
        if not await pane.feed.load_older():
            break
        await view.sync()
    return _delivery(pane, notification_id)


def _flash(widget: Widget) -> None:
    accent = widget.app.theme_variables.get("accent", "#ffb86c")
    widget.styles.background = Color.parse(accent).with_alpha(0.3)
    widget.set_timer(FLASH_S, lambda: widget.styles.clear_rule("background"))
