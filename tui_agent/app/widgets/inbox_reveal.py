"""Scroll a thread pane to where an inbox record was delivered, and flash that line."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.color import Color
from textual.css.query import NoMatches
from textual.widget import Widget

from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.inbox_filters import InboxRecord
from tui_agent.app.widgets.thread_pane import ThreadPane

WAIT_S = 5.0  # for the pane to subscribe and draw its thread
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
    if not await _wait(lambda: pane.feed.attached):
        return False
    entry = await _find_entry(pane, record.id)
    widget = None if entry is None else await _widget_of(pane, entry)
    if widget is None:
        pane.show_notice(f"✉ {label} was delivered, but its line is not in the history")
        return False
    await _wait(lambda: pane.drained)
    view = pane.transcript_view()
    await _answers_rendered(view)  # their final heights: the line does not move after
    view.following = False  # no later sync scrolls it back to the end
    await _scroll_until_there(view, widget)
    _flash(widget)
    pane.show_notice(f"✉ {label} was delivered here")
    return True


async def _answers_rendered(view: Widget) -> None:
    """Until every answer in ``view`` has its final Markdown render (made in a thread)."""
    from tui_agent.app.widgets.markdown_stream import MarkdownStream

    for stream in view.query(MarkdownStream):
        if stream.finished:
            stream.text_lines()  # starts its render if it has not started
            await asyncio.wait_for(stream.wait_final(), WAIT_S)


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


async def _widget_of(pane: ThreadPane, entry: Entry) -> Widget | None:
    view = pane.transcript_view()

    def mounted() -> Widget | None:
        try:
            return view.query_one(f"#entry-{entry.key}")
        except NoMatches:
            return None

    await _wait(lambda: mounted() is not None)
    return mounted()


async def _scroll_until_there(view: Widget, widget: Widget, tries: int = 5) -> None:
    """Scroll ``widget`` to the top of ``view`` after a refresh, again while a layout that
    landed in between (the page paged in, an answer's final height) moved it away."""
    for _ in range(tries):
        await _after_refresh(view, lambda: view.scroll_to_widget(
            widget, animate=False, top=True, immediate=True))
        await _after_refresh(view, lambda: None)
        target = min(widget.virtual_region.y, view.max_scroll_y)
        if abs(view.scroll_y - target) <= 1:
            return


async def _after_refresh(widget: Widget, callback: Callable[[], Any]) -> None:
    done = asyncio.Event()

    def call() -> None:
        callback()
        done.set()

    widget.call_after_refresh(call)
    await done.wait()


def _flash(widget: Widget) -> None:
    accent = widget.app.theme_variables.get("accent", "#ffb86c")
    widget.styles.background = Color.parse(accent).with_alpha(0.3)
    widget.set_timer(FLASH_S, lambda: widget.styles.clear_rule("background"))


async def _wait(condition: Callable[[], Any], timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
