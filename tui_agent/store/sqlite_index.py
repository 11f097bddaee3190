"""SQLite's search index trailing the log (migration 7, issue 22): when the store's writer
indexes the messages its writes stored, and how.

Not in the write's own transaction, and not at once after it: a woken run's model call starts
right after its routing commits, and an index transaction then (the writer's thread, the GIL,
two cores) slowed its first delta more than the index inside the routing did. So the messages
past ``search_mark`` are indexed :data:`INDEX_AFTER_S` after the first commit that stored them,
all at once, in one transaction of their own after the writes queued then; a search first
indexes whatever still trails, any process's (``store/search.py``). That transaction is
*quiet*: not in the store's ``local_commits`` (it changes nothing a change-feed watch reads),
counted in :attr:`TrailingIndex.quiet_commits` instead. Tested by tests/test_search.py and
tests/test_change_feed.py (the index catching up wakes no watch).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import tui_agent.store.txn as txn
from tui_agent.store.search import index_trailing, trails
from tui_agent.store.sqlite_turns import ConnectionTurns, WriteLock

INDEX_AFTER_S = 0.2  # how long stored messages wait for the search index (a search: none)


@dataclass(slots=True)
class _LoopTimer:
    loop: asyncio.AbstractEventLoop
    handle: asyncio.TimerHandle


class TrailingIndex:
    """The index step of one store: due :data:`INDEX_AFTER_S` after :meth:`soon`, then run by
    the store's writer (``start_writer`` wakes it; it checks :attr:`due` between groups)."""

    def __init__(self, start_writer: Callable[[], None]) -> None:
        self._start_writer = start_writer
        self._timer: _LoopTimer | None = None
        #: The step's time came: the writer runs it once the writes queued before are done.
        self.due = False
        #: The index's own transactions: quiet commits (see the module docstring).
        self.quiet_commits = 0

    def soon(self) -> None:
        """Messages were stored: the step is due :data:`INDEX_AFTER_S` from now. Messages
        stored meanwhile join the same step."""
        loop = asyncio.get_running_loop()
        timer = self._timer
        if timer is None or timer.loop is not loop:  # none yet, or one of a loop gone since
            self._timer = _LoopTimer(loop, loop.call_later(INDEX_AFTER_S, self.now))

    def now(self) -> None:
        """The step is due now (its timer fired, or the store is closing)."""
        if self._timer is not None:
            self._timer.handle.cancel()
            self._timer = None
        self.due = True
        self._start_writer()

    @property
    def waiting(self) -> bool:
        """A step is timed and not due yet."""
        return self._timer is not None

    async def step(self, turns: ConnectionTurns, write_lock: WriteLock) -> None:
        """Index what trails, in a quiet transaction on the connection's worker under the
        store's write lock: only if something trails (another process's search or index step
        may have taken it meanwhile)."""
        async with write_lock:
            quiet = self.quiet_commits
            await turns.on_worker(self._index_if_trailing)
            if self.quiet_commits != quiet:
                turns.committed()

    def _index_if_trailing(self, conn: sqlite3.Connection) -> None:
        if trails(conn):
            txn.in_transaction(conn, self._counted_quiet)

    def _counted_quiet(self, conn: sqlite3.Connection) -> None:
        index_trailing(conn)
        self.quiet_commits += 1  # only the worker's thread writes it (the loop reads it)
