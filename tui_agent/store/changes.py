"""One poller per store object: everyone in this process who waits for the store to change shares
it, whatever their number.

A :class:`ChangeFeed` polls the store's cheap change marker — SQLite's ``data_version``, which
moves when *another* connection commits, and the store's own count of commits — and sets the
event of every :class:`ChangeWatch` when it moved. Thread subscriptions, the app's inbox feed and
its waiting-signals view each hold a watch, then read only what concerns them. Guarantees:

- **One poller, whatever the number of watchers**: one task per store object polls once per
  interval; with nothing changing, its cost does not grow with the watches (``polls`` counts).
- **Stops with the last watch, starts with the first**: no watch, no task, no query.
- **Nothing missed**: a commit made after a watch was taken sets its event (at the first poll
  after the commit; a fresh poller wakes every watch once its first marker is read, so a reader
  that read before it cannot miss a commit made in between). Waking is all a watch gets: it
  re-reads from its own cursor.
- **Adaptive interval**: ``FAST_S`` for ``FAST_FOR_S`` after another process committed (a run
  streaming elsewhere is followed closely), then doubling up to ``IDLE_S`` — an isolated change
  is seen within ``IDLE_S`` (p50 about half of it), and an idle process costs ``1 / IDLE_S``
  cheap queries a second. This process's own commits wake ``local`` watches at the next poll but
  do not speed it up: a no-op commit every second (the dispatcher's claim) would keep it fast
  forever. Readers that must see this process's appends at once (subscriptions) are woken by the
  store's listeners instead.

Tested by tests/test_change_feed.py; the cost is measured by benchmarks/bench_watchers.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from typing import ClassVar, Protocol

FAST_S = 0.01  # interval right after another process committed
IDLE_S = 0.05  # interval once quiet: the worst-case latency of an isolated change
FAST_FOR_S = 1.0  # how long the interval stays fast after a change from another process
ERROR_BACKOFF_S = 1.0  # after a failed poll (the watches were woken to read and see the error)

log = logging.getLogger("tui_agent.store")


class ChangeSource(Protocol):
    """What a store provides for change detection."""

    async def data_version(self) -> int:
        """A value that moves when another connection commits (reads no table)."""
        ...

    @property
    def local_commits(self) -> int:
        """How many write transactions were committed through this store object."""
        ...


class ChangeWatch:
    """One party's interest in the store's changes: ``event`` is set when something was
    committed (by another process; with ``local``, by this one too). Close it when done."""

    def __init__(self, feed: ChangeFeed, event: asyncio.Event, *, local: bool) -> None:
        self.feed = feed
        self.event = event
        self.local = local
        self.closed = False

    async def wait(self, timeout: float | None = None) -> bool:
        """Until a change (True, and the event is cleared) or ``timeout`` seconds (False)."""
        try:
            await asyncio.wait_for(self.event.wait(), timeout)
        except TimeoutError:
            return False
        self.event.clear()
        return True

    def close(self) -> None:
        """No more wakes; the poller stops when no watch is left. Idempotent."""
        if not self.closed:
            self.closed = True
            self.feed.discard(self)

    def __enter__(self) -> ChangeWatch:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class ChangeFeed:
    """The poller of one store object. Get it with :meth:`of`; take a :meth:`watch`."""

    _feeds: ClassVar[weakref.WeakKeyDictionary[object, ChangeFeed]] = weakref.WeakKeyDictionary()

    def __init__(
        self,
        store: ChangeSource,
        *,
        fast_s: float = FAST_S,
        idle_s: float = IDLE_S,
        fast_for_s: float = FAST_FOR_S,
    ) -> None:
        # Weak: the registry of feeds must not keep a store alive.
        self._store = weakref.ref(store)
        self.fast_s, self.idle_s, self.fast_for_s = fast_s, idle_s, fast_for_s
        self.polls = 0  # markers read since this feed was made
        self.wakes = 0  # times the watches were woken
        self._watches: set[ChangeWatch] = set()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def of(cls, store: ChangeSource) -> ChangeFeed:
        """The feed of ``store`` (made on first use; one per store object)."""
        feed = cls._feeds.get(store)
        if feed is None:
            feed = cls._feeds[store] = cls(store)
        return feed

    @property
    def store(self) -> ChangeSource:
        store = self._store()
        if store is None:
            raise RuntimeError("the store of this change feed is gone")
        return store

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def watchers(self) -> int:
        return len(self._watches)

    def watch(self, event: asyncio.Event | None = None, *, local: bool = True) -> ChangeWatch:
        """A new watch (on ``event``, or a new one), and the poller running in this loop.
        ``local=False``: only other processes' commits wake it (its owner learns of this
        process's own writes another way)."""
        watch = ChangeWatch(self, event if event is not None else asyncio.Event(), local=local)
        self._watches.add(watch)
        self._ensure_running()
        return watch

    def discard(self, watch: ChangeWatch) -> None:
        self._watches.discard(watch)
        if not self._watches and self._task is not None:
            self._task.cancel()
            self._task = None

    def _ensure_running(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is not None and not self._task.done() and self._task.get_loop() is loop:
            return
        self._task = loop.create_task(self._poll(), name="tui-agent change feed")

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        version, commits = await self._first_marker()
        quiet_since = loop.time() - self.fast_for_s  # start idle: nothing has changed yet
        interval = self.idle_s
        while self._watches:
            await asyncio.sleep(interval)
            try:
                new_version = await self.store.data_version()
            except Exception:  # the store is unreadable: its readers will say why
                log.debug("change feed poll failed", exc_info=True)
                self._wake(foreign=True)
                interval = ERROR_BACKOFF_S
                continue
            self.polls += 1
            new_commits = self.store.local_commits
            foreign, local = new_version != version, new_commits != commits
            version, commits = new_version, new_commits
            if foreign or local:
                self._wake(foreign=foreign)
            if foreign:
                quiet_since = loop.time()
            interval = self._next_interval(interval, loop.time() - quiet_since)

    async def _first_marker(self) -> tuple[int, int]:
        """The marker to compare with, then every watch woken once: one that read before this
        marker was taken must read again (a commit may lie between its read and this)."""
        version = -1
        with contextlib.suppress(Exception):  # the first poll retries and reports
            version = await self.store.data_version()
            self.polls += 1
        commits = self.store.local_commits
        self._wake(foreign=True)
        return version, commits

    def _next_interval(self, interval: float, quiet_for: float) -> float:
        if quiet_for < self.fast_for_s:
            return self.fast_s
        return min(self.idle_s, max(interval, self.fast_s) * 2)

    def _wake(self, *, foreign: bool) -> None:
        self.wakes += 1
        for watch in list(self._watches):
            if foreign or watch.local:
                watch.event.set()
