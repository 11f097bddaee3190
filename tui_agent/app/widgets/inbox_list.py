"""The inbox's record list: a line-API widget that renders only the rows in view.

``InboxList`` holds the records to show (already filtered and sorted) and a cursor; it never
mounts a widget per record. Guarantees:

- ``set_rows`` costs one pass over the records (row heights and their offsets), whatever their
  number; a paint renders only the visible lines, from a small cache of rendered rows keyed by
  what they show (the record's last change, the width, cursor, mark, age and theme).
- The cursor follows its record across ``set_rows`` (a new record on top does not move it to
  another one); if its record is gone, it stays at the same index.
- Marks (the multi-selection) are record ids: a record that leaves the view and comes back is
  still marked. ``clear_marks`` empties them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import accumulate
from operator import attrgetter
from typing import Any, ClassVar

from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style

from tui_agent.app.widgets.inbox_filters import InboxRecord
from tui_agent.app.widgets.inbox_rows import age_of, row_heights, row_lines

CACHE_ROWS = 256  # rendered rows kept: a few screens' worth
MARK_COLUMNS = 2  # a click in the first two cells (cursor mark and box) toggles the mark


class InboxList(ScrollView, can_focus=True):
    """The records, two or three lines each, with a cursor and marks."""

    DEFAULT_CSS = """
    InboxList {
        height: 1fr;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
        background: $surface;
        text-wrap: nowrap;
        & > .inbox-list--cursor { background: $block-cursor-blurred-background; }
        &:focus > .inbox-list--cursor { background: $block-cursor-background 60%; }
        & > .inbox-list--marked { background: $boost; }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"inbox-list--cursor", "inbox-list--marked"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False, id="inbox.cursor_up"),
        Binding("down", "move(1)", "Down", show=False, id="inbox.cursor_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="inbox.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="inbox.page_down"),
        Binding("home", "jump(0)", "First", show=False, id="inbox.first"),
        Binding("end", "jump(-1)", "Last", show=False, id="inbox.last"),
        Binding("shift+down", "extend(1)", "Mark down", show=False, id="inbox.extend_down"),
        Binding("shift+up", "extend(-1)", "Mark up", show=False, id="inbox.extend_up"),
    ]

    class CursorMoved(Message):
        """The record under the cursor changed (None: the list is empty)."""

        def __init__(self, record: InboxRecord | None) -> None:
            super().__init__()
            self.record = record

    class Activated(Message):
        """A row was double-clicked: open its record."""

        def __init__(self, record: InboxRecord) -> None:
            super().__init__()
            self.record = record

    def __init__(self, *, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.rows: Sequence[InboxRecord] = []
        self.cursor = 0
        self.marked: set[str] = set()
        self._starts: list[int] = [0]  # first line of each row, and the total at the end
        self._cache: LRUCache[tuple[Any, ...], list[Strip]] = LRUCache(CACHE_ROWS)
        self._styles: dict[str, Style] = {}  # parsed span styles, for ``_styles_theme``
        self._styles_theme = ""
        self.rows_rendered = 0  # rows rendered (not from the cache): a diagnostic for benches
        self._ages_shown: tuple[int, tuple[str, ...]] = (0, ())  # for ``refresh_ages``
        self._scrollbars_for: tuple[Size, Size, Size] | None = None  # see ``_size_updated``
        self.changed_at: Callable[[InboxRecord], datetime] = attrgetter("updated_at")
        """When a row's record last changed, for its age (the sidebar keeps it where it was
        when it acted on it)."""

    # -- the rows ------------------------------------------------------------------------------

    def set_rows(self, rows: Sequence[InboxRecord]) -> None:
        """Show ``rows`` (in this order), keeping the cursor on its record where it can."""
        current = self.current
        self.rows = rows
        self._starts = [0, *accumulate(row_heights(rows))]
        if current is not None:
            index = next((i for i, r in enumerate(rows) if r.id == current.id), None)
            self.cursor = self.cursor if index is None else index
        self.cursor = max(0, min(self.cursor, len(rows) - 1))
        self.virtual_size = Size(self.scrollable_content_region.width, self._starts[-1])
        self.refresh()
        if self.current is not current:
            self.post_message(self.CursorMoved(self.current))

    @property
    def current(self) -> InboxRecord | None:
        """The record under the cursor."""
        return self.rows[self.cursor] if self.rows else None

    def targets(self) -> list[InboxRecord]:
        """The marked records shown, in order; the cursor's record when none is marked."""
        if self.marked:
            picked = [r for r in self.rows if r.id in self.marked]
            if picked:
                return picked
        return [self.current] if self.current is not None else []

    def clear_marks(self) -> None:
        self.marked.clear()
        self.refresh()

    def toggle_mark(self, index: int | None = None) -> None:
        index = self.cursor if index is None else index
        if 0 <= index < len(self.rows):
            self.marked ^= {self.rows[index].id}
            self._refresh_row(index)

    def refresh_ages(self) -> None:
        """Repaint if an age in view changed (ages change at most once a minute): an idle
        inbox does no render work (benchmarks/bench_app_idle.py)."""
        now = self.clock()
        top = int(self.scroll_y)
        first, last = self._row_at(top), self._row_at(top + self.size.height)
        ages = tuple(age_of(self.changed_at(record), now)
                     for record in self.rows[first : last + 1])
        if (first, ages) != self._ages_shown:
            self._ages_shown = (first, ages)
            self.refresh()

    # -- moving --------------------------------------------------------------------------------

    def move_to(self, index: int) -> None:
        if not self.rows:
            return
        old, self.cursor = self.cursor, max(0, min(index, len(self.rows) - 1))
        self._refresh_row(old)
        self._refresh_row(self.cursor)
        self._show_cursor()
        if old != self.cursor:
            self.post_message(self.CursorMoved(self.current))

    def action_move(self, step: int) -> None:
        self.move_to(self.cursor + step)

    def action_page(self, direction: int) -> None:
        page = max(1, self.scrollable_content_region.height)
        self.move_to(self._row_at(max(0, self._starts[self.cursor] + direction * page)))

    def action_jump(self, index: int) -> None:
        self.move_to(index if index >= 0 else len(self.rows) - 1)

    def action_extend(self, step: int) -> None:
        """Mark the cursor's record and move: shift+arrows select a run of records."""
        if self.current is not None:
            self.marked.add(self.current.id)
        self.move_to(self.cursor + step)
        if self.current is not None:
            self.marked.add(self.current.id)
            self._refresh_row(self.cursor)

    def _show_cursor(self) -> None:
        top, bottom = self._starts[self.cursor], self._starts[self.cursor + 1]
        width = self.scrollable_content_region.width
        self.scroll_to_region(Region(0, top, width, bottom - top), animate=False, force=True,
                              immediate=True)

    def _row_at(self, line: int) -> int:
        return max(0, min(bisect_right(self._starts, line) - 1, len(self.rows) - 1))

    def _refresh_row(self, index: int) -> None:
        if 0 <= index < len(self.rows):
            top, bottom = self._starts[index], self._starts[index + 1]
            self.refresh(Region(0, top - int(self.scroll_y), self.size.width, bottom - top))

    # -- mouse ---------------------------------------------------------------------------------

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self.rows:
            return
        line = offset.y + int(self.scroll_y)
        if line >= self._starts[-1]:
            return
        index = self._row_at(line)
        if offset.x < MARK_COLUMNS:
            self.toggle_mark(index)
        self.move_to(index)
        if event.chain == 2 and self.current is not None:
            self.post_message(self.Activated(self.current))

    # -- Textual's line API --------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        line = int(self.scroll_y) + y
        width = self.scrollable_content_region.width
        if line >= self._starts[-1] or not self.rows:
            return Strip.blank(width, self.rich_style)
        index = self._row_at(line)
        return self._row_strips(index, width)[line - self._starts[index]]

    def _row_strips(self, index: int, width: int) -> list[Strip]:
        record = self.rows[index]
        cursor, marked = index == self.cursor, record.id in self.marked
        now = self.clock()
        changed = self.changed_at(record)
        key = (record.id, record.updated_at, record.status, record.summarized_at,
               record.delivery_attempts, width, cursor, marked, self.has_focus,
               age_of(changed, now), self.app.theme)
        strips = self._cache.get(key)
        if strips is None:
            if self._styles_theme != self.app.theme:
                self._styles.clear()
                self._styles_theme = self.app.theme
            strips = self._render_row(record, width, now, cursor, marked, changed)
            self._cache[key] = strips
        return strips

    def _render_row(self, record: InboxRecord, width: int, now: float, cursor: bool,
                    marked: bool, changed: datetime) -> list[Strip]:
        self.rows_rendered += 1
        component = ("inbox-list--cursor",) if cursor else (
            ("inbox-list--marked",) if marked else ())
        base = self.get_visual_style(*component)
        parse = self._parse_style
        return [  # each line is one line of exactly ``width`` cells: no wrapping to do
            Strip([Segment(text, style.rich_style)
                   for text, style in content.render(base, end="", parse_style=parse)], width)
            for content in row_lines(record, width=width, now=now, cursor=cursor, marked=marked,
                                     changed=changed)
        ]

    def _parse_style(self, style: str | Style) -> Style:
        """A span's style with the theme's variables (``$text-error`` …), cached per theme."""
        if isinstance(style, Style):
            return style
        parsed = self._styles.get(style)
        if parsed is None:
            parsed = self._styles[style] = Style.parse(style)
        return parsed

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._styles.clear()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_resize(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self._starts[-1])

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size,
                      layout: bool = True) -> bool:
        """Textual's ``ScrollView`` updates (and repaints) its scrollbars whenever the virtual
        size the compositor passes differs from the widget's own; for a line-API widget the
        compositor passes the viewport, so once the list can scroll its scrollbar was repainted
        on every layout of the screen (~1,000 a minute while four panes stream, each a frame of
        its own: benchmarks/bench_app_hours.py). Here they update only when the size, the
        container or the list's own virtual size changed since they last did."""
        shown = (size, self.virtual_size, container_size)
        if shown == self._scrollbars_for:
            return False  # what ``ScrollView`` returns when neither size changed
        self._scrollbars_for = shown
        return super()._size_updated(size, virtual_size, container_size, layout)
