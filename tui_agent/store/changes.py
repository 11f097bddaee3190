"""One poller per store object: everyone in this process who waits for the store to change shares
it, whatever their number.

A :class:`ChangeFeed` polls the store's cheap change marker and sets the event of every
:class:`ChangeWatch` when it moved. Thread subscriptions, the app's inbox feed and its
waiting-signals view each hold a watch, then read only what concerns them. Guarantees:

- **One poller, whatever the number of watchers**: one thread per store object polls once per
  interval; with nothing changing, its cost does not grow with the watches, and the event loop
  is not woken at all (``polls`` counts the polls).
- **Stops with the last watch, starts with the first**: no watch, no thread, no query.
- **Nothing missed**: a commit made after a watch was taken sets its event (at the first poll
  after the commit; a fresh poller wakes every watch once its first marker is read, so a reader
  that read before it cannot miss a commit made in between). Waking is all a watch gets: it
  re-reads from its own cursor.
- **Told, not polling, where it can**: on Linux the poller hears every write to the store's file
  and its ``-wal`` (:mod:`tui_agent.store.wal_watch`, inotify): it polls at once, then every
  ``FAST_S`` for ``HURRY_S`` (a commit shows a moment after its last write), then backs off to a
  safety poll every ``SAFETY_S``. A change from another process is seen within milliseconds and
  an idle process makes two polls a second.
- **Else an adaptive interval**: ``FAST_S`` for ``FAST_FOR_S`` after another process committed (a
  run streaming elsewhere is followed closely), then doubling up to ``IDLE_S``: an isolated
  change is seen within ``IDLE_S`` (about half of it on average), at ``1 / IDLE_S`` polls a
  second when idle.
- **Pushed, where the store pushes** (``pushes_changes``: PostgreSQL's ``LISTEN/NOTIFY``): the
  store wakes the feed on every notification, and the poller only keeps the listening
  connection up, every ``SAFETY_S``.
- This process's own commits wake ``local`` watches at the next poll but do not speed the poller
  up (a no-op commit every second, the dispatcher's claim, would keep it fast forever); readers
  that must see this process's appends at once (subscriptions) are woken by the store's
  listeners instead. Its *quiet* commits (SQLite's search index catching up, which changes
  nothing a watch reads) wake nobody. None of its commits is taken for another process's: a
  move of the marker while a write of this process was under way (or had ended since the
  last look: ``writes_begun``/``writes_ended``, counted at the store's write lock) is sorted
  out by the store's own ``data_version()``, which other connections' commits alone move. A
  commit shows on the probe before this process counts it, and is counted before it shows,
  so no single count could tell (tests/test_change_feed.py: fifty commits here never wake a
  watch for other processes).

How it polls: a store on a file (``path``) is probed in the poller's own thread on its own
SQLite connection (which never writes): ``PRAGMA data_version`` there costs microseconds and
needs no trip through the event loop, which was most of an idle poll's cost. That connection
also sees this process's commits; when this process committed too since the last poll, the
store's own ``data_version()`` (moved by other connections only) tells whether another process
did as well. Any other store is probed through its ``data_version()`` on the event loop.

Tested by tests/test_change_feed.py; the cost is measured by benchmarks/bench_watchers.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from tui_agent.store.wal_watch import WalWatch

FAST_S = 0.01  # interval right after another process committed
IDLE_S = 0.05  # interval once quiet: the worst-case latency of an isolated change
FAST_FOR_S = 1.0  # how long the interval stays fast after a change from another process
ERROR_BACKOFF_S = 1.0  # after a failed poll (the watches were woken to read and see the error)
SAFETY_S = 0.5  # with writes heard (inotify): the interval once quiet, in case one was not
HURRY_S = 0.1  # with writes heard: poll fast this long after one (its commit shows just after)
PROBE_TIMEOUT_S = 5.0  # a poll through the event loop that takes longer is a failed poll

log = logging.getLogger("tui_agent.store")


class ChangeSource(Protocol):
    """What a store provides for change detection. A store on a file also names it in a
    ``path`` attribute (the feed then probes the file itself, off the event loop)."""

    async def data_version(self) -> int:
        """A value that moves when another connection commits (reads no table)."""
        ...

    @property
    def local_commits(self) -> int:
        """How many write transactions were committed through this store object."""
        ...

    # A store on a file also counts ``writes_begun`` and ``writes_ended`` (read with getattr:
    # 0 where it has none): its write transactions that took its write lock, and those that
    # ended (committed or not), loud or quiet (a quiet one, the search index catching up, is
    # not in ``local_commits``: it changes nothing a watch reads), and says whether it is
    # ``connected`` (a closed one is not queried: the query would reopen it).


def _writes_begun(store: object) -> int:
    return getattr(store, "writes_begun", 0)


def _writes_ended(store: object) -> int:
    return getattr(store, "writes_ended", 0)


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
            async with asyncio.timeout(timeout):  # not wait_for: see agent/rescuer.py's _wait
                await self.event.wait()
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
        self.polls = 0  # change markers read since this feed was made
        self.wakes = 0  # times the watches were woken
        self._watches: set[ChangeWatch] = set()
        self._passive: set[ChangeWatch] = set()  # see watch(passive=True)
        self._poller: _Poller | None = None
        self._own_version: int | None = None  # the store's data_version() at the last look
        self._fast_until = 0.0  # monotonic: poll fast until then
        self.tasks: set[asyncio.Task[None]] = set()  # sort_out() calls under way
        self.told = False  # the poller hears the store's writes (inotify) instead of polling

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
    def store_alive(self) -> bool:
        return self._store() is not None

    @property
    def running(self) -> bool:
        return self._poller is not None and self._poller.is_alive()

    @property
    def watchers(self) -> int:
        return len(self._watches)

    def watch(
        self, event: asyncio.Event | None = None, *, local: bool = True, passive: bool = False
    ) -> ChangeWatch:
        """A new watch (on ``event``, or a new one), and the poller running for this loop.
        ``local=False``: only other processes' commits wake it (its owner learns of this
        process's own writes another way). ``passive``: it rides along with the others and
        never keeps the poller running by itself (woken only while some other watch keeps it
        up; not counted in :attr:`watchers`): the stranded-signal rescuer's."""
        watch = ChangeWatch(self, event if event is not None else asyncio.Event(), local=local)
        if passive:
            self._passive.add(watch)
            return watch
        self._watches.add(watch)
        self._ensure_running()
        return watch

    def discard(self, watch: ChangeWatch) -> None:
        self._passive.discard(watch)
        self._watches.discard(watch)
        if not self._watches and self._poller is not None:
            self._poller.stop()
            self._poller = None

    def _ensure_running(self) -> None:
        loop = asyncio.get_running_loop()
        poller = self._poller
        if poller is not None and poller.is_alive() and poller.loop is loop:
            return
        if poller is not None:
            poller.stop()
        self._poller = _Poller(self, loop)
        self._poller.start()

    # -- called by the poller thread ------------------------------------------------------------

    def interval(
        self, current: float, *, hurry_until: float | None = None, ceiling: float | None = None
    ) -> float:
        """The next interval: fast until ``hurry_until`` (default: while another process was
        active lately), then doubling back to ``ceiling`` (default ``idle_s``)."""
        until = self._fast_until if hurry_until is None else hurry_until
        if time.monotonic() < until:
            return self.fast_s
        return min(self.idle_s if ceiling is None else ceiling, max(current, self.fast_s) * 2)

    # -- on the event loop --------------------------------------------------------------------

    def wake(self, *, foreign: bool, news: bool = True) -> None:
        """Set the watches' events: every watch's for another process's commit, else the
        ``local`` ones'. Another process's commit (``news``) makes the poller hurry."""
        if foreign and news:
            self._fast_until = time.monotonic() + self.fast_for_s
        self.wakes += 1
        for watch in [*self._watches, *self._passive]:
            if foreign or watch.local:
                watch.event.set()

    async def sort_out(self, local: bool = True) -> None:
        """This process and maybe another committed since the last poll: the store's own
        ``data_version()`` (moved by other connections only) tells whether another did.
        ``local=False``: none of this process's commits counted since the last poll changes
        what a watch reads (quiet ones, or none yet: a loud one counted later wakes the local
        watches at the next poll)."""
        if not self._watches or not getattr(self.store, "connected", True):
            return  # stopped, or the store closed, meanwhile: a query would reopen it
        try:
            version = await self.store.data_version()
        except Exception:
            version = None
        if self._own_version is None:  # no look yet: the store's own first one, if it took one
            self._own_version = getattr(self.store, "opened_data_version", None)
        foreign = version is None or version != self._own_version
        self._own_version = version
        if foreign or local:
            self.wake(foreign=foreign)


class _Poller(threading.Thread):
    """The feed's poll loop, in its own thread: the event loop is only woken by a change."""

    def __init__(self, feed: ChangeFeed, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name="tui-agent change feed", daemon=True)
        self.feed = feed
        self.loop = loop
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._stop_pipe: tuple[int, int] | None = None  # interrupts select() on stop()
        self._told: WalWatch | None = None
        path = getattr(feed.store, "path", None)
        self._path = path if isinstance(path, str) and path != ":memory:" else None

    def stop(self) -> None:
        with self._stop_lock:
            self._stopped.set()
            if self._stop_pipe is not None:
                os.write(self._stop_pipe[1], b"x")

    def run(self) -> None:
        if not self._file_made():
            return
        try:
            probe, close = self._open_probe()
        except Exception:  # the store's file is not there (yet): poll through the store
            log.debug("change feed: no probe connection", exc_info=True)
            probe, close = self._probe_through_loop, None
        if close is not None:
            self._open_wal_watch()
        try:
            self._loop(probe, sees_own=close is not None)
        except RuntimeError:  # the event loop is closed: nobody is left to wake
            pass
        finally:
            if close is not None:
                close()
            self._close_wal_watch()

    def _file_made(self) -> bool:
        """Until the store's file exists (nothing can be committed before; the first marker
        then wakes every watch). False if stopped first."""
        while self._path is not None and not os.path.exists(self._path):
            if self._stopped.wait(self.feed.idle_s) or self.loop.is_closed():
                return False
        return True

    def _loop(self, probe: Callable[[], int], *, sees_own: bool) -> None:
        feed = self.feed
        version, commits, ended = self._first_marker(probe)
        interval = feed.idle_s
        hurry_until = 0.0  # after a write was heard: its commit shows a moment later
        while (told := self._wait(interval)) is not None:
            if self.loop.is_closed() or not feed.store_alive:
                return  # nobody is left to wake (a program that never closed its watches)
            try:
                ended_now = _writes_ended(feed.store)  # before the probe, begun after it:
                new_version = probe()
                new_commits = feed.store.local_commits
                begun = _writes_begun(feed.store)  # the window any write of ours may be in
            except Exception:  # the store is unreadable or gone: its readers will say why
                log.debug("change feed poll failed", exc_info=True)
                self._to_loop(feed.wake, foreign=True, news=False)
                interval = ERROR_BACKOFF_S
                continue
            feed.polls += 1
            moved, local = new_version != version, new_commits != commits
            # Ours, maybe: a write of ours that had not ended before the last probe, or began
            # since, may be what moved (a commit shows before it is counted, and a count may
            # come before its commit shows); else the move is another process's alone.
            ours = moved and begun != ended
            version, commits, ended = new_version, new_commits, ended_now
            if ours and sees_own:
                self._to_loop(self._sort_out, local=local)  # ours, or ours and another's?
            elif moved or local:
                self._to_loop(feed.wake, foreign=moved)
            if told:
                hurry_until = time.monotonic() + HURRY_S
            if getattr(feed.store, "pushes_changes", False):
                interval = SAFETY_S  # the store wakes the feed itself: this only keeps it up
            elif self._told is None:
                interval = feed.interval(interval)
            else:
                interval = feed.interval(interval, hurry_until=hurry_until, ceiling=SAFETY_S)

    def _wait(self, timeout: float) -> bool | None:
        """Sleep ``timeout`` seconds, or less if a write to the store's file is heard: None
        once stopped, else whether a write was heard."""
        watch = self._told
        if watch is None or self._stop_pipe is None:
            return None if self._stopped.wait(timeout) else False
        deadline = time.monotonic() + timeout
        while True:
            ready = select.select([watch, self._stop_pipe[0]], [], [],
                                  max(0.0, deadline - time.monotonic()))[0]
            if self._stopped.is_set():
                return None
            if watch in ready and watch.drain():
                return True
            if time.monotonic() >= deadline:
                return False

    def _open_wal_watch(self) -> None:
        assert self._path is not None
        try:
            from tui_agent.store.wal_watch import WalWatch

            self._told = WalWatch.open(self._path)
        except OSError:
            log.debug("change feed: no inotify", exc_info=True)
        if self._told is not None:
            with self._stop_lock:
                self._stop_pipe = os.pipe()
                if self._stopped.is_set():
                    os.write(self._stop_pipe[1], b"x")
        self.feed.told = self._told is not None

    def _close_wal_watch(self) -> None:
        with self._stop_lock:
            if self._stop_pipe is not None:
                for fd in self._stop_pipe:
                    os.close(fd)
                self._stop_pipe = None
        if self._told is not None:
            self._told.close()

    def _first_marker(self, probe: Callable[[], int]) -> tuple[int, int, int]:
        """The marker to compare with (version, local commits, writes ended before it), then
        every watch woken once: one that read before this marker was taken must read again (a
        commit may lie between its read and this)."""
        ended = _writes_ended(self.feed.store)
        try:
            version = probe()
            self.feed.polls += 1
        except Exception:
            version = -1  # the first poll retries and reports
        commits = self.feed.store.local_commits
        self._to_loop(self.feed.wake, foreign=True, news=False)
        return version, commits, ended

    def _open_probe(self) -> tuple[Callable[[], int], Callable[[], None] | None]:
        if self._path is None:
            return self._probe_through_loop, None
        # Never creates the file (mode=rw); it only ever reads the marker.
        uri = Path(self._path).resolve().as_uri() + "?mode=rw"
        connection = sqlite3.connect(uri, uri=True, isolation_level=None)

        def probe() -> int:
            return int(connection.execute("PRAGMA data_version").fetchone()[0])

        return probe, connection.close

    def _probe_through_loop(self) -> int:
        future = asyncio.run_coroutine_threadsafe(self._version_unless_stopped(), self.loop)
        try:
            return future.result(PROBE_TIMEOUT_S)
        except FutureTimeout:
            future.cancel()
            raise

    async def _version_unless_stopped(self) -> int:
        # Stopped meanwhile: the store may be closed by now, and a query would reopen it.
        return -1 if self._stopped.is_set() else await self.feed.store.data_version()

    def _sort_out(self, local: bool = True) -> None:
        task = self.loop.create_task(self.feed.sort_out(local),
                                     name="tui-agent change feed: sort out")
        self.feed.tasks.add(task)  # asyncio keeps only a weak reference
        task.add_done_callback(self.feed.tasks.discard)

    def _to_loop(self, callback: Callable[..., None], **kwargs: bool) -> None:
        if self._stopped.is_set():
            return
        self.loop.call_soon_threadsafe(lambda: self._stopped.is_set() or callback(**kwargs))
