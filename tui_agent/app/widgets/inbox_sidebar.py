"""The notification inbox sidebar: every inbox record in the store, live.

Layout: a title (unread count), the filters (clickable), the record list (``InboxList``, a
line-API widget: only the visible rows are rendered), the cursor's record in full, a search
field and the actions (clickable). Every part but the list has a fixed height, so a change of
filter, cursor or count repaints them without a layout. Guarantees:

- It shows the records of every thread in the store, or only those of the threads open in the
  app's panes (``m``); filtered by minimum priority (``p``), status (``t``), source (``c``)
  and a search as you type (``/``, through ``search_notifications``); newest first, or by
  priority (``o``: urgent, then high, …, each newest first). A record acted on here keeps its
  place (it is not brought to the top by its own status change).
- Open (enter, double-click), mark seen (``s``), dismiss (``d``) and archive (``a``) act on the
  marked records (space, shift+arrows, a click on the box), or on the cursor's record when
  none is marked. Open posts ``OpenRequested``: the app opens (or focuses) each record's thread.
- Live: it follows ``InboxFeed`` (changes from any process within a second); an urgent record
  created or merged shows a toast; ``UnreadChanged`` tells the app the unread count per thread
  whenever it changes. "Unread" is status pending or delivered (``inbox_filters.UNREAD``).
- Cheap: a filter change is one pass over the records plus a repaint of the visible rows; the
  sort is redone only when the records or the sort order changed. Store I/O runs in workers.
- Ages come from ``clock`` (epoch seconds), injectable so snapshots can freeze it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, Static

from tui_agent.app.focus import focus_now
from tui_agent.app.inbox_feed import InboxFeed
from tui_agent.app.widgets.inbox_filters import (
    InboxQuery,
    InboxRecord,
    ordered,
    select,
    sources,
    unread_by_thread,
)
from tui_agent.app.widgets.inbox_list import InboxList
from tui_agent.app.widgets.inbox_rows import detail_text

TICK_S = 1.0  # ages, and the set of threads in panes, are looked at this often
MAX_TOASTS = 3  # urgent records toasted at once; more are counted in one toast


class InboxBar(Static):
    """A line of clickable labels: a click posts ``Pressed`` with the label's name."""

    class Pressed(Message):
        def __init__(self, bar: InboxBar, name: str) -> None:
            super().__init__()
            self.bar = bar
            self.name = name

    def action_press(self, name: str) -> None:
        self.post_message(self.Pressed(self, name))


def _links(items: list[tuple[str, str]]) -> Content:
    """``(name, label)`` pairs as clickable labels separated by dots."""
    parts = [Content.assemble((label, f"@click=press({name!r})")) for name, label in items]
    return Content(" · ").join(parts)


class InboxSidebar(Vertical):
    DEFAULT_CSS = """
    InboxSidebar {
        background: $surface;
        border-left: vkey $border-blurred;
        & > #inbox-title { height: 1; background: $panel; padding: 0 1; text-wrap: nowrap; }
        & > #inbox-filters {
            height: 2; color: $text-muted; padding: 0 1; text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        & > #inbox-detail {
            height: 8; padding: 0 1; border-top: hkey $border-blurred; overflow: hidden;
        }
        & > #inbox-search { height: 1; border: none; padding: 0 1; background: $panel; }
        & > #inbox-actions { height: 1; color: $text-muted; padding: 0 1; text-wrap: nowrap; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="inbox.open"),
        Binding("s", "act('seen')", "Seen", id="inbox.seen"),
        Binding("d", "act('dismiss')", "Dismiss", id="inbox.dismiss"),
        Binding("a", "act('archive')", "Archive", id="inbox.archive"),
        Binding("space", "mark", "Mark", id="inbox.mark"),
        # Priority, so the words typed right after it go into the search field, not to the
        # list's keys ("/deploy": d would dismiss); the list's only (check_action).
        Binding("slash", "search", "Search", priority=True, id="inbox.search"),
        Binding("escape", "escape", "Back", show=False, id="inbox.escape"),
        Binding("p", "cycle('min_priority')", "Priority", show=False, id="inbox.priority"),
        Binding("t", "cycle('status')", "Status", show=False, id="inbox.status"),
        Binding("c", "cycle('source')", "Source", show=False, id="inbox.source"),
        Binding("o", "cycle('sort')", "Sort", show=False, id="inbox.sort"),
        Binding("m", "toggle_scope", "My panes", show=False, id="inbox.scope"),
    ]

    class OpenRequested(Message):
        """Open (or focus) each record's thread in a pane."""

        def __init__(self, targets: list[InboxRecord]) -> None:
            super().__init__()
            self.targets = targets

    class UnreadChanged(Message):
        """``counts``: unread records per thread id (threads with none are left out)."""

        def __init__(self, counts: dict[str, int]) -> None:
            super().__init__()
            self.counts = counts

    def __init__(self, memory: Any, *, pane_threads: Callable[[], set[str]] | None = None,
                 clock: Callable[[], float] = time.time, id: str | None = None) -> None:
        super().__init__(id=id)
        self.feed = InboxFeed(memory, self)
        self.query_state = InboxQuery()
        self.mine = False  # only the threads in the app's panes
        self.unread: dict[str, int] = {}
        self.clock = clock
        self._pane_threads = pane_threads or set
        self._scope: frozenset[str] | None = None
        self._ordered: list[InboxRecord] = []
        self._pins: dict[str, datetime] = {}  # records acted on here keep their place
        self._detail_shown: tuple[object, str] | None = None  # the detail panel's record, text
        self._ordered_for: tuple[int, str] = (-1, "")
        self._more = False  # the search found more than it shows
        self._last_error = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="inbox-title", markup=False)
        yield InboxBar("", id="inbox-filters")
        yield InboxList(clock=lambda: self.clock(), id="inbox-list")  # follows self.clock
        yield Static("", id="inbox-detail", markup=False)
        yield Input(placeholder="/ search summary, kind, source…", id="inbox-search")
        yield InboxBar(_links([("open", "⏎ open"), ("seen", "s seen"), ("dismiss", "d dismiss"),
                               ("archive", "a archive"), ("mark", "␣ mark")]),
                       id="inbox-actions")

    def on_mount(self) -> None:
        self.inbox_list.changed_at = lambda r: self._pins.get(r.id, r.updated_at)
        self.run_worker(self.feed.run(), name="inbox feed", group="inbox-feed", exclusive=True,
                        exit_on_error=False)
        self.set_interval(TICK_S, self._tick)
        self.refresh_view()

    async def on_unmount(self) -> None:
        """The feed polls until cancelled: it ends with the sidebar (awaited, so an app that
        exits at once does not leave it running past its loop)."""
        mine = [worker for worker in self.app.workers if worker.node is self]
        for worker in mine:
            worker.cancel()
        for worker in mine:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), 2.0)

    @property
    def inbox_list(self) -> InboxList:
        return self.query_one(InboxList)

    # -- what is shown -------------------------------------------------------------------------

    def refresh_view(self) -> None:
        """Re-filter (re-sort first if the records or the order changed) and repaint."""
        feed, query = self.feed, self.query_state
        if self._ordered_for != (feed.version, query.sort):
            self._ordered = ordered(feed.records.values(), query.sort, self._pins)
            self._ordered_for = (feed.version, query.sort)
            self._count_unread()
        self._scope = frozenset(self._pane_threads()) if self.mine else None
        rows = select(self._ordered, replace(query, threads=self._scope))
        self.inbox_list.set_rows(rows)
        self._show_title(len(rows))
        self._show_filters()
        self._show_detail(self.inbox_list.current)

    def _count_unread(self) -> None:
        counts = unread_by_thread(self.feed.records.values())
        if counts != self.unread:
            self.unread = counts
            self.post_message(self.UnreadChanged(dict(counts)))

    def _show_title(self, shown: int) -> None:
        scope = self._scope
        unread = sum(n for thread, n in self.unread.items() if scope is None or thread in scope)
        loading = "" if self.feed.loaded else " · loading…"
        more = "+" if self._more and self.query_state.found is not None else ""
        title = Content.assemble(("✉ Inbox", "bold"), " · ",
                                 (f"{unread} unread", "$text-warning bold" if unread else
                                  "$text-muted"),
                                 (f" · {shown:,}{more} shown{loading}", "$text-muted"))
        self.query_one("#inbox-title", Static).update(title, layout=False)  # fixed height

    def _show_filters(self) -> None:
        query = self.query_state
        priority = "all" if query.min_priority == "low" else f"≥ {query.min_priority}"
        first = _links([("min_priority", f"p prio {priority}"), ("status", f"t {query.status}"),
                        ("source", f"c {query.source or 'all sources'}")])
        second = _links([("scope", "m my panes" if self.mine else "m all threads"),
                         ("sort", f"o by {query.sort}")])
        self.query_one("#inbox-filters", InboxBar).update(Content("\n").join([first, second]),
                                                          layout=False)

    def _show_detail(self, record: InboxRecord | None) -> None:
        detail = self.query_one("#inbox-detail", Static)
        if record is None:
            empty = "loading…" if not self.feed.loaded else "nothing here"
            content = Content.styled(empty, "$text-muted")
        else:
            content = detail_text(record, self.clock())
        shown = (record, content.plain)
        if shown != self._detail_shown:  # the same text again would repaint it for nothing
            self._detail_shown = shown
            detail.update(content, layout=False)

    def _tick(self) -> None:
        if self.mine and frozenset(self._pane_threads()) != self._scope:
            self.refresh_view()
        elif self.display:
            self.inbox_list.refresh_ages()
            self._show_detail(self.inbox_list.current)

    # -- the feed ------------------------------------------------------------------------------

    def on_inbox_feed_changed(self, message: InboxFeed.Changed) -> None:
        message.stop()
        self.feed.acknowledge()
        if self.query_state.found is not None:
            self._search(self.query_one("#inbox-search", Input).value)
        self.refresh_view()

    def on_inbox_feed_urgent(self, message: InboxFeed.Urgent) -> None:
        message.stop()
        records = message.records
        for record in records[:MAX_TOASTS]:
            count = f" ×{record.coalesced_count}" if record.coalesced_count > 1 else ""
            self.notify(record.summary, title=f"‼ urgent · {record.source}/{record.kind}{count}"
                        f" · {record.thread_id}", severity="error", timeout=8, markup=False)
        if len(records) > MAX_TOASTS:
            self.notify(f"and {len(records) - MAX_TOASTS} more urgent notifications",
                        severity="error", timeout=8)

    def on_inbox_feed_failed(self, message: InboxFeed.Failed) -> None:
        message.stop()
        if message.error != self._last_error:
            self._last_error = message.error
            self.notify(message.error, title="inbox", severity="warning", timeout=8,
                        markup=False)

    def on_inbox_list_cursor_moved(self, message: InboxList.CursorMoved) -> None:
        message.stop()
        self._show_detail(message.record)

    def on_inbox_list_activated(self, message: InboxList.Activated) -> None:
        message.stop()
        self.post_message(self.OpenRequested([message.record]))

    # -- actions -------------------------------------------------------------------------------

    def action_open(self) -> None:
        targets = self.inbox_list.targets()
        if targets:
            self.inbox_list.clear_marks()
            self.post_message(self.OpenRequested(targets))

    def action_act(self, action: str) -> None:
        """Mark seen, dismiss or archive the targets; each keeps its place in the order."""
        targets = self.inbox_list.targets()
        if targets:
            for record in targets:
                self._pins.setdefault(record.id, record.updated_at)
            self.inbox_list.clear_marks()
            self._act(action, [record.id for record in targets])

    @work(group="inbox-act", exit_on_error=False)
    async def _act(self, action: str, ids: list[str]) -> None:
        errors = await self.feed.act(action, ids)
        if errors:
            self.notify("\n".join(errors[:3]), title=f"inbox: {action} failed",
                        severity="error", markup=False)

    def action_mark(self) -> None:
        self.inbox_list.toggle_mark()
        self.inbox_list.action_move(1)

    def action_cycle(self, field: str) -> None:
        options = sources(self.feed.records.values()) if field == "source" else ()
        self.query_state = self.query_state.cycled(field, options)
        self.refresh_view()

    def action_toggle_scope(self) -> None:
        self.mine = not self.mine
        self.refresh_view()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``/`` is the list's: typed in the search field it is a character of the search
        (Textual leaves the keys an Input takes to it, but does not know "slash" for one: 8.2),
        and the approvals queue above has keys of its own."""
        return action != "search" or self.inbox_list.has_focus

    def action_search(self) -> None:
        focus_now(self.query_one("#inbox-search", Input))

    def action_escape(self) -> None:
        if self.query_one("#inbox-search", Input).has_focus:
            focus_now(self.inbox_list)
        else:
            self.inbox_list.clear_marks()

    def on_inbox_bar_pressed(self, message: InboxBar.Pressed) -> None:
        message.stop()
        name = message.name
        if name in ("min_priority", "status", "source", "sort"):
            self.action_cycle(name)
        elif name == "scope":
            self.action_toggle_scope()
        elif name == "open":
            self.action_open()
        elif name == "mark":
            self.inbox_list.toggle_mark()
        else:
            self.action_act(name)

    # -- search --------------------------------------------------------------------------------

    def on_input_changed(self, message: Input.Changed) -> None:
        message.stop()
        self._search(message.value)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        focus_now(self.inbox_list)

    @work(exclusive=True, group="inbox-search", exit_on_error=False)
    async def _search(self, text: str) -> None:
        if not text.strip():
            found, self._more = None, False
        else:
            found, self._more = await self.feed.search(text)
        if found != self.query_state.found:
            self.query_state = replace(self.query_state, found=found)
            self.refresh_view()
