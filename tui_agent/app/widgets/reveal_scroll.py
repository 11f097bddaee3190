"""Bringing an entry of a pane's transcript into view: waiting for its widget, for the answers'
final renders (their heights), and scrolling until it stays there. Shared by the inbox's reveal
(``inbox_reveal.py``) and the thread's find (``find_bar.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual.css.query import NoMatches
from textual.widget import Widget

from tui_agent.app.transcript import Entry

WAIT_S = 5.0  # for a pane to subscribe and draw its thread, or an entry to be mounted


async def answers_rendered(view: Widget) -> None:
    """Until every answer in ``view`` has its final Markdown render (made in a thread)."""
    from tui_agent.app.widgets.markdown_stream import MarkdownStream

    for stream in view.query(MarkdownStream):
        if stream.finished:
            stream.text_lines()  # starts its render if it has not started
            await asyncio.wait_for(stream.wait_final(), WAIT_S)


async def widget_of(view: Widget, entry: Entry) -> Widget | None:
    """The mounted widget of ``entry`` in ``view``, once it is mounted (None: not within
    ``WAIT_S``). A signal drawn in a run of them is given a widget of its own first."""
    from tui_agent.app.widgets.transcript_view import TranscriptView

    if isinstance(view, TranscriptView):
        view.entry_widget(entry.key)

    def mounted() -> Widget | None:
        try:
            return view.query_one(f"#entry-{entry.key}")
        except NoMatches:
            return None

    await wait_until(lambda: mounted() is not None)
    return mounted()


async def scroll_until_there(view: Widget, widget: Widget, tries: int = 5) -> None:
    """Scroll ``widget`` to the top of ``view`` after a refresh, again while a layout that
    landed in between (the page paged in, an answer's final height) moved it away."""
    for _ in range(tries):
        await after_refresh(view, lambda: view.scroll_to_widget(
            widget, animate=False, top=True, immediate=True))
        await after_refresh(view, lambda: None)
        target = min(widget.virtual_region.y, view.max_scroll_y)
        if abs(view.scroll_y - target) <= 1:
            return


async def after_refresh(widget: Widget, callback: Callable[[], Any]) -> None:
    done = asyncio.Event()

    def call() -> None:
        callback()
        done.set()

    widget.call_after_refresh(call)
    await done.wait()


async def wait_until(condition: Callable[[], Any], timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
