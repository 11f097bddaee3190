"""The inbox sidebar with 10,000 records: opening it and a filter keystroke, beside bare Textual.

Figures (headless 160×48, the sidebar 52 columns wide as in the app), each beside its anchor
measured in the same run:

- **read**: every record from the store (``Memory.notification_changes``, what the sidebar's
  feed reads at start, in a worker) and the longest the event loop was held meanwhile, beside
  ``list_notifications(limit=10000)`` and a bare ``SELECT`` of the same rows.
- **first paint** (goal ≤ 150 ms): the records in memory → sorted, filtered, the list set and
  the screen painted, beside a bare ``DataTable`` (``add_rows``) and a bare ``OptionList``
  (``add_options``, each option the same two lines) of the same 10,000 rows, painted.
- **filter keystroke → repaint** (goal ≤ 50 ms): ``p`` and ``t`` cycled (minimum priority,
  status), each followed by the repaint, beside the same filter applied to the DataTable
  (``clear`` + ``add_rows``) and the OptionList (``clear_options`` + ``add_options``).
- **search keystroke → repaint**: a search typed a character at a time, each going through
  ``search_notifications`` in the store, then the repaint; beside the bare ``LIKE`` query.

Each figure runs from the call to the end of the next screen update that leaves nothing dirty
(a hook on the screen's compositor refresh): the work, the frame it waits for and the paint,
as a user sees it. The synchronous part alone ("work") is printed beside it.

    .venv/bin/python benchmarks/bench_inbox.py [--records 10000] [--keys 24]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import DataTable, OptionList, Static

from tui_agent import Memory, SqliteStore
from tui_agent.app.widgets.inbox_filters import InboxQuery, ordered, select
from tui_agent.app.widgets.inbox_rows import PRIORITY_LOOK, STATUS_LOOK, age_text, row_lines
from tui_agent.app.widgets.inbox_sidebar import InboxSidebar
from tui_agent.store.codec import new_id

SIZE = (160, 48)
WIDTH = 52
PRIORITIES = ("low", "low", "medium", "medium", "high", "urgent")
STATUSES = ("pending", "pending", "delivered", "seen", "seen", "dismissed", "archived",
            "discarded", "failed")
SOURCES = ("github", "slack", "ci", "email", "jira", "pagerduty")
KINDS = ("comment", "mention", "build_failed", "review_requested", "deploy", "page")
WORDS = ("build", "deploy", "review", "release", "migration", "canary", "rollback", "flaky")


# -- the records -------------------------------------------------------------------------------
async def fill(store: SqliteStore, count: int) -> None:
    """``count`` records of every priority, status, source, 40 threads, one in 9 failed."""
    now = time.time()
    rows = []
    for i in range(count):
        status = STATUSES[i % len(STATUSES)]
        failed = status == "failed"
        rows.append((
            new_id(), f"thread-{i % 40}", "bench", SOURCES[i % len(SOURCES)],
            KINDS[(i // 3) % len(KINDS)], PRIORITIES[(i // 7) % len(PRIORITIES)], status,
            f"{WORDS[i % len(WORDS)]} {i}: {WORDS[(i * 7) % len(WORDS)]} on service {i % 97}",
            1 + (i % 11 == 0) * (i % 5), now - 3 * (count - i), now - 3 * (count - i),
            5 if failed else 1, "RuntimeError: routing is down" if failed else None,
        ))
    async with store.transaction() as db:
        await db.executemany(
            "INSERT INTO notifications(id, thread_id, resource_id, source, kind, priority,"
            " status, summary, coalesced_count, created_at, updated_at, delivery_attempts,"
            " last_delivery_error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)


async def held_loop(work: Awaitable[Any]) -> tuple[Any, float, float]:
    """``work``'s result, its seconds, and the longest the event loop was held meanwhile."""
    longest = 0.0
    done = False

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0)
            now = time.perf_counter()
            longest, last = max(longest, now - last), now

    task = asyncio.create_task(ticker())
    start = time.perf_counter()
    result = await work
    elapsed = time.perf_counter() - start
    done = True
    await task
    return result, elapsed, longest


# -- apps ----------------------------------------------------------------------------------------
class SidebarApp(App[None]):
    CSS = f"Screen {{ layout: horizontal; }} #filler {{ width: 1fr; }} #inbox {{ width: {WIDTH}; }}"

    def __init__(self, memory: Memory) -> None:
        super().__init__()
        self.memory = memory

    def compose(self) -> ComposeResult:
        yield Static("", id="filler")
        yield InboxSidebar(self.memory, clock=lambda: time.time(), id="inbox")


class BareApp(App[None]):
    CSS = f"Screen {{ layout: horizontal; }} #filler {{ width: 1fr; }} .bare {{ width: {WIDTH}; }}"

    def __init__(self, widget: Any) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield Static("", id="filler")
        self.widget.add_class("bare")
        yield self.widget


def table_row(record: Any, now: float) -> tuple[str, ...]:
    symbol = PRIORITY_LOOK[record.priority][0]
    count = f"×{record.coalesced_count}" if record.coalesced_count > 1 else ""
    return (f"{symbol} {record.priority}", f"{record.source}/{record.kind}", count,
            f"{STATUS_LOOK[record.status][0]} {record.status}", record.thread_id,
            age_text(now - record.updated_at.timestamp()), record.summary)


def option(record: Any, now: float) -> Content:
    lines = row_lines(record, width=WIDTH - 2, now=now, cursor=False, marked=False)
    return Content("\n").join(lines)


# -- measuring -----------------------------------------------------------------------------------
class Paints:
    """Counts the screen's compositor refreshes (each one paints what is dirty)."""

    def __init__(self, screen: Any) -> None:
        self.screen = screen
        self.count = 0
        self.last = 0.0
        original = screen._compositor_refresh

        def refresh() -> None:
            original()
            self.count += 1
            self.last = time.perf_counter()

        screen._compositor_refresh = refresh

    def settled(self, before: int) -> bool:
        screen = self.screen
        return self.count > before and not screen._dirty_widgets and not screen._layout_required


async def timed(action: Callable[[], Any], paints: Paints) -> tuple[float, float]:
    """(work, to painted): the call alone, and the call until the screen painted it."""
    start = time.perf_counter()
    result = action()
    if asyncio.iscoroutine(result):
        await result
    work = time.perf_counter() - start
    before = paints.count  # a paint while it awaited showed an older state
    deadline = start + 30
    while not paints.settled(before) and time.perf_counter() < deadline:
        await asyncio.sleep(0)
    return work, paints.last - start


QUERIES = [InboxQuery(min_priority=p, status=s) for s, p in (
    ("open", "medium"), ("open", "high"), ("open", "urgent"), ("open", "low"),
    ("unread", "low"), ("pending", "low"), ("delivered", "low"), ("seen", "low"),
    ("failed", "low"), ("all", "low"), ("all", "high"), ("open", "low"))]


async def sidebar_figures(memory: Memory, keys: int, search_text: str) -> dict[str, Any]:
    app = SidebarApp(memory)
    out: dict[str, Any] = {}
    async with app.run_test(size=SIZE) as pilot:
        sidebar = app.query_one(InboxSidebar)
        start = time.perf_counter()
        while not (sidebar.feed.loaded and sidebar.inbox_list.rows):
            await pilot.pause()
        await pilot.pause()
        out["open"] = time.perf_counter() - start
        paints = Paints(app.screen)
        firsts = []
        rendered = sidebar.inbox_list.rows_rendered
        for _ in range(5):  # cold each time: nothing sorted, no row cached
            sidebar._ordered_for = (-1, "")
            sidebar.inbox_list._cache.clear()
            firsts.append(await timed(sidebar.refresh_view, paints))
        out["paint"] = firsts
        out["shown"] = len(sidebar.inbox_list.rows)
        out["rendered"] = sidebar.inbox_list.rows_rendered - rendered
        filters = []
        for i in range(keys):
            field = "min_priority" if i % 3 else "status"
            filters.append(await timed(lambda f=field: sidebar.action_cycle(f), paints))
        out["filter"] = filters
        out["search"] = await search_keys(sidebar, paints, search_text)
        filler = app.query_one("#filler", Static)
        out["floor"] = [await timed(lambda i=i: filler.update(str(i)), paints)
                        for i in range(keys)]
    return out


async def search_keys(sidebar: InboxSidebar, paints: Paints,
                      text: str) -> list[tuple[float, float]]:
    from dataclasses import replace

    sidebar.query_state = InboxQuery()
    samples = []
    for end in range(1, len(text) + 1):
        async def search(typed: str = text[:end]) -> None:
            found, sidebar._more = await sidebar.feed.search(typed)
            sidebar.query_state = replace(sidebar.query_state, found=found)
            sidebar.refresh_view()
        samples.append(await timed(search, paints))
    return samples


async def bare_figures(records: list[Any], keys: int, kind: str) -> dict[str, Any]:
    now = time.time()
    newest = ordered(records, "newest")
    widget: Any = DataTable(cursor_type="row") if kind == "table" else OptionList()
    app = BareApp(widget)
    out: dict[str, Any] = {}

    def fill_widget(rows: list[Any]) -> None:
        if kind == "table":
            widget.clear()
            widget.add_rows(table_row(r, now) for r in rows)
        else:
            widget.clear_options()
            widget.add_options(option(r, now) for r in rows)

    async with app.run_test(size=SIZE) as pilot:
        if kind == "table":
            widget.add_columns("priority", "source/kind", "×", "status", "thread", "age",
                               "summary")
        await pilot.pause()
        paints = Paints(app.screen)
        out["paint"] = [await timed(lambda: fill_widget(select(newest, InboxQuery())), paints)]
        filters = []
        for i in range(keys):
            query = QUERIES[i % len(QUERIES)]
            filters.append(await timed(lambda q=query: fill_widget(select(newest, q)), paints))
        out["filter"] = filters
    return out


def stats(samples: list[tuple[float, float]]) -> str:
    """Painted: mean, p95, max; then the work's mean."""
    painted = sorted(total for _, total in samples)
    p95 = painted[min(len(painted) - 1, int(0.95 * len(painted)))]
    work = statistics.fmean(w for w, _ in samples)
    return (f"painted mean {statistics.fmean(painted) * 1e3:7.1f} ms  p95 {p95 * 1e3:7.1f}"
            f"  max {painted[-1] * 1e3:7.1f}  (work {work * 1e3:6.1f} ms)")


async def main(count: int, keys: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "inbox.sqlite")
        memory = Memory(store=store)
        await fill(store, count)
        (records, _), read_s, read_held = await held_loop(
            memory.notification_changes(None, limit=count * 2))
        _, list_s, list_held = await held_loop(memory.list_notifications(limit=count))
        _, bare_s, _ = await held_loop(store.fetchall("SELECT * FROM notifications"))
        ours = await sidebar_figures(memory, keys, "deploy 1")
        like = "%deploy 1%"
        start = time.perf_counter()
        await store.fetchall("SELECT id FROM notifications WHERE summary LIKE ? OR kind LIKE ?"
                             " OR source LIKE ?", (like, like, like))
        like_s = time.perf_counter() - start
        await store.close()
    table = await bare_figures(records, keys, "table")
    options = await bare_figures(records, keys, "options")
    print(f"{count:,} inbox records; headless {SIZE[0]}x{SIZE[1]}, sidebar {WIDTH} columns")
    print(f"read all (notification_changes)  {read_s * 1e3:7.1f} ms, event loop held at most "
          f"{read_held * 1e3:5.1f} ms")
    print(f"  anchor: list_notifications     {list_s * 1e3:7.1f} ms, event loop held at most "
          f"{list_held * 1e3:5.1f} ms;  bare SELECT {bare_s * 1e3:6.1f} ms")
    print(f"open from the store (mount → all read and painted)  {ours['open'] * 1e3:7.1f} ms")
    print("first paint, records in memory:")
    print(f"  inbox sidebar (line API)       {stats(ours['paint'])}  "
          f"({ours['shown']:,} rows listed, {ours['rendered']} rows rendered in 5 paints)")
    print(f"  anchor: DataTable.add_rows     {stats(table['paint'])}")
    print(f"  anchor: OptionList.add_options {stats(options['paint'])}")
    print(f"filter keystroke → repaint ({keys} keys, p and t cycled):")
    print(f"  inbox sidebar                  {stats(ours['filter'])}")
    print(f"  anchor: a bare Static.update   {stats(ours['floor'])}  (the frame's floor)")
    print(f"  anchor: DataTable clear+add    {stats(table['filter'])}")
    print(f"  anchor: OptionList clear+add   {stats(options['filter'])}")
    print("search keystroke → repaint (\"deploy 1\" typed, search_notifications each key):")
    print(f"  inbox sidebar                  {stats(ours['search'])}")
    print(f"  anchor: bare LIKE query (ids)  {like_s * 1e3:7.1f} ms (last key's query alone)")
    print("goals: first paint ≤ 150 ms, filter keystroke → repaint ≤ 50 ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=24)
    args = parser.parse_args()
    asyncio.run(main(args.records, args.keys))
