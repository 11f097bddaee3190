"""What the inbox sidebar shows: its filters, its sort orders and the "unread" rule.

Pure functions over records (anything with the fields of ``InboxRecord``): no Textual, no
store. Everything here is linear in the number of records, with no per-record allocation
beyond the result, so a filter change over 10,000 records costs a few milliseconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from operator import attrgetter
from typing import Protocol, TypeVar

PRIORITIES: tuple[str, ...] = ("low", "medium", "high", "urgent")
RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
STATUSES: tuple[str, ...] = (
    "pending", "delivered", "seen", "dismissed", "archived", "discarded", "failed",
)
UNREAD: frozenset[str] = frozenset({"pending", "delivered"})
""""Unread" means status ``pending`` or ``delivered``: nobody has seen, dismissed or archived it
yet. A record that failed or was discarded is not unread (it shows as what it is)."""

# Status filters, in the order ``t`` cycles them: two groups, every status, then everything.
STATUS_GROUPS: dict[str, frozenset[str]] = {
    "open": frozenset({"pending", "delivered", "seen", "failed"}),
    "unread": UNREAD,
    **{status: frozenset({status}) for status in STATUSES},
    "all": frozenset(STATUSES),
}
MIN_PRIORITIES: tuple[str, ...] = ("low", "medium", "high", "urgent")  # ``p`` cycles: ≥ each
SORTS: tuple[str, ...] = ("newest", "priority")
T = TypeVar("T")


class InboxRecord(Protocol):
    """The fields of an inbox record that the sidebar reads."""

    id: str
    thread_id: str
    resource_id: str
    source: str
    kind: str
    priority: str
    status: str
    summary: str
    coalesced_count: int
    created_at: datetime
    updated_at: datetime
    delivered_at: datetime | None
    summarized_at: datetime | None
    delivery_attempts: int
    last_delivery_error: str | None


@dataclass(frozen=True)
class InboxQuery:
    """One state of the sidebar's filters. ``matches`` is True for the records to show.

    ``min_priority``: at least this priority. ``status``: a key of ``STATUS_GROUPS``.
    ``source``: one source or None for all. ``threads``: only these thread ids (the threads in
    the app's panes) or None for every thread in the store. ``found``: the ids a search
    returned, or None when nothing is searched.
    """

    min_priority: str = "low"
    status: str = "open"
    source: str | None = None
    threads: frozenset[str] | None = None
    found: frozenset[str] | None = None
    sort: str = "newest"

    def cycled(self, field: str, sources: Sequence[str] = ()) -> InboxQuery:
        """The query with ``field`` (min_priority, status, source, sort) set to its next value."""
        if field == "min_priority":
            return replace(self, min_priority=_next(MIN_PRIORITIES, self.min_priority))
        if field == "status":
            return replace(self, status=_next(tuple(STATUS_GROUPS), self.status))
        if field == "sort":
            return replace(self, sort=_next(SORTS, self.sort))
        if field == "source":
            options: tuple[str | None, ...] = (None, *sources)
            return replace(self, source=_next(options, self.source))
        raise ValueError(f"no inbox filter {field!r}")


def _next(options: Sequence[T], current: T) -> T:
    index = options.index(current) if current in options else -1
    return options[(index + 1) % len(options)]


def select(ordered: Iterable[InboxRecord], query: InboxQuery) -> list[InboxRecord]:
    """The records of ``ordered`` that ``query`` shows, in the same order. One pass per filter
    that is on, the narrowest first; a filter that lets everything through costs nothing."""
    rows = list(ordered)
    if query.found is not None:
        found = query.found
        rows = [r for r in rows if r.id in found]
    if query.threads is not None:
        threads = query.threads
        rows = [r for r in rows if r.thread_id in threads]
    if query.source is not None:
        source = query.source
        rows = [r for r in rows if r.source == source]
    statuses = STATUS_GROUPS.get(query.status, STATUS_GROUPS["all"])
    if len(statuses) < len(STATUSES):
        rows = [r for r in rows if r.status in statuses]
    floor = RANK.get(query.min_priority, 0)
    if floor:
        shown = {name for name, rank in RANK.items() if rank >= floor}
        rows = [r for r in rows if r.priority in shown]
    return rows


def ordered(records: Iterable[InboxRecord], sort: str,
            pins: Mapping[str, datetime] | None = None) -> list[InboxRecord]:
    """Newest first (by last change, as ``list_notifications``: a merge or a delivery brings a
    record to the top); by priority: urgent, high, medium, low, each newest first. ``pins``
    overrides the last change of some records (the sidebar pins a record it acts on, so that
    marking it seen does not move it)."""
    if pins:
        newest = sorted(records, key=lambda r: pins.get(r.id, r.updated_at), reverse=True)
    else:
        newest = sorted(records, key=attrgetter("updated_at"), reverse=True)
    if sort == "priority":
        newest.sort(key=lambda r: RANK.get(r.priority, 0), reverse=True)  # stable: keeps newest
    return newest


def unread_by_thread(records: Iterable[InboxRecord]) -> dict[str, int]:
    """``{thread_id: unread records}`` for every thread with at least one."""
    return dict(Counter([r.thread_id for r in records if r.status in UNREAD]))


def sources(records: Iterable[InboxRecord]) -> list[str]:
    """Every source present, sorted (what ``c`` cycles through)."""
    return sorted({record.source for record in records})
