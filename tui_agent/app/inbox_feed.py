"""The inbox sidebar's connection to the core (like ``bridge.py``, it imports both the core and
Textual; widgets never call the core themselves).

An ``InboxFeed`` keeps every inbox record of the store in memory (``records``, by id) and keeps
them current. Guarantees:

- **First paint, then all**: the newest ``FIRST_PAGE`` records are read first and posted, then
  every record (``Memory.notification_changes``, which builds records a slice at a time so the
  event loop keeps running).
- **Live within a second**: it holds a watch on the store's one shared poller
  (``Memory.changes``, no loop of its own) and, only when something was committed by any
  process, reads the records changed since its cursor — at most once per ``POLL_S``, so a burst
  of commits costs one read per ``POLL_S``. A record created, merged, delivered, summarised,
  failed or given a status anywhere is in ``records`` within the poller's interval (at most
  ``tui_agent.store.changes.IDLE_S``) plus ``POLL_S`` plus one read; a failed read is retried
  after ``RETRY_S``. The read starts ``RACE_MARGIN_S`` before the cursor, so a writer that
  took its timestamp before another's commit is not missed, and the cursor never passes this
  process's clock, so a change stamped ahead of it (another clock, a test's) does not hide the
  changes after it.
- **Cheap for the UI**: ``Changed`` is posted at most once until ``acknowledge()`` (a burst of
  changes costs one message); ``version`` counts the changes.
- **Urgent toasts**: ``Urgent`` is posted for each urgent record created or merged (its count
  went up) after the first full read: not for what was there at start, nor for status changes.
- Store I/O is aiosqlite's (its own thread); actions and searches return what the store wrote.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from tui_agent.errors import TuiAgentError
from tui_agent.notifications.records import NotificationRecord

POLL_S = 0.25  # the least time between two reads of what changed
FIRST_PAGE = 200  # records read before the first paint
LOAD_LIMIT = 1_000_000  # the full read (a bound, not a page size)
PAGE = 500  # records per read while polling
RACE_MARGIN_S = 2.0  # polls re-read changes this much older than the cursor
SEARCH_LIMIT = 2_000  # the newest matches of a search that are shown
RETRY_S = 2.0  # after a failed read

ACTIONS = ("seen", "dismiss", "archive")


class InboxFeed:
    """All inbox records of one store, kept current. ``run()`` once (in a worker)."""

    class Changed(Message):
        """``records`` changed: the sidebar should re-filter."""

        def __init__(self, feed: InboxFeed) -> None:
            super().__init__()
            self.feed = feed

    class Urgent(Message):
        """Urgent records were created or merged (a toast each)."""

        def __init__(self, records: list[NotificationRecord]) -> None:
            super().__init__()
            self.records = records

    class Failed(Message):
        """A read failed (one line); the feed retries."""

        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, memory: Any, target: MessagePump, *, poll_s: float = POLL_S) -> None:
        self.memory = memory
        self.records: dict[str, NotificationRecord] = {}
        self.loaded = False  # every record has been read (not only the first page)
        self.version = 0
        self.poll_s = poll_s
        self._target = target
        self._since = 0.0  # the newest change read (at most the clock at its read)
        self._marker: tuple[int, int] | None = None
        self._posted = False

    # -- reading -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Read everything, then follow the changes until cancelled."""
        # Taken before the first read: whatever is committed after it wakes the feed.
        with self.memory.changes.watch() as changes:
            while not self.loaded:
                try:
                    await self._load()
                except Exception as error:  # the store is unreadable (locked, gone): say so, retry
                    self._target.post_message(self.Failed(_one_line(error)))
                    await asyncio.sleep(RETRY_S)
            while True:
                await changes.wait()
                try:
                    await self.poll()
                except Exception as error:
                    self._target.post_message(self.Failed(_one_line(error)))
                    await asyncio.sleep(RETRY_S)
                    changes.event.set()  # read again after the pause, change or not
                await asyncio.sleep(self.poll_s)  # commits meanwhile wake the next read at once

    async def _load(self) -> None:
        self._marker = await self.memory.change_marker()
        self._merge(await self.memory.list_notifications(limit=FIRST_PAGE))
        self._changed()  # a first paint while the rest is read
        started = time.time()
        records, (newest, _rowid) = await self.memory.notification_changes(None, limit=LOAD_LIMIT)
        self._since = min(newest, started)
        self._merge(records)
        self.loaded = True
        self._changed()

    async def poll(self) -> bool:
        """Read what changed if the store changed since the last look. True if it had."""
        marker = await self.memory.change_marker()
        if marker == self._marker:
            return False
        started = time.time()
        cursor = (self._since - RACE_MARGIN_S, -1)
        fresh: list[NotificationRecord] = []
        while True:
            page, cursor = await self.memory.notification_changes(cursor, limit=PAGE)
            fresh.extend(page)
            if len(page) < PAGE:
                break
        self._since = max(self._since, min(cursor[0], started))
        self._marker = marker  # only now: a read that failed is tried again
        urgent = [r for r in fresh if self._is_urgent_news(r)]
        if self._merge(fresh):
            self._changed()
        if urgent:
            self._target.post_message(self.Urgent(urgent))
        return True

    def _is_urgent_news(self, record: NotificationRecord) -> bool:
        if record.priority != "urgent":
            return False
        old = self.records.get(record.id)
        return old is None or record.coalesced_count > old.coalesced_count

    def _merge(self, records: list[NotificationRecord]) -> bool:
        """Take the newer copy of each record. True if any differed."""
        changed = False
        for record in records:
            old = self.records.get(record.id)
            if old is None or (old != record and _stamp(record) >= _stamp(old)):
                self.records[record.id] = record
                changed = True
        if changed:
            self.version += 1
        return changed

    # -- actions and search --------------------------------------------------------------------

    async def act(self, action: str, ids: list[str]) -> list[str]:
        """Mark seen, dismiss or archive each record; returns one line per failure."""
        call = {"seen": self.memory.mark_notification_seen,
                "dismiss": self.memory.dismiss_notification,
                "archive": self.memory.archive_notification}[action]
        errors = []
        for notification_id in ids:
            try:
                record = await call(notification_id)
            except TuiAgentError as error:
                errors.append(_one_line(error))
                continue
            if self._merge([record]):
                self._changed()
        return errors

    async def search(self, query: str) -> tuple[frozenset[str], bool]:
        """The ids of the records ``search_notifications`` finds (newest ``SEARCH_LIMIT``),
        and whether there may be more."""
        found = await self.memory.search_notifications(query, limit=SEARCH_LIMIT)
        if self._merge(found):
            self._changed()
        return frozenset(r.id for r in found), len(found) >= SEARCH_LIMIT

    # -- posting -------------------------------------------------------------------------------

    def _changed(self) -> None:
        if not self._posted:
            self._posted = True
            self._target.post_message(self.Changed(self))

    def acknowledge(self) -> None:
        """The sidebar has taken the changes; the next change posts again."""
        self._posted = False

    @property
    def changes_waiting(self) -> bool:
        return self._posted


def _stamp(record: NotificationRecord) -> tuple[float, float]:
    summarized = record.summarized_at.timestamp() if record.summarized_at else 0.0
    return record.updated_at.timestamp(), summarized


def _one_line(error: BaseException) -> str:
    text = str(error) if isinstance(error, TuiAgentError) else f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:300]
