"""Whose turn it is on a SQLite store's one connection: aiosqlite's worker thread, or the event
loop's own.

Every transaction used to hop to the connection's worker thread and back: two thread wakes,
each 50–150 µs on a VM whose threads sleep between them. For an idle thread's wake that was
most of its routing (issue 22: ~0.34 ms from the send to the decision for a ~0.1 ms
transaction), and ~1.3 µs of each signal of a burst. So a write transaction runs on the event
loop's thread when it can begin at once: nothing is in flight on the worker (every job handed
to it goes through :meth:`ConnectionTurns.on_worker`, which counts it) and ``BEGIN IMMEDIATE``
gets SQLite's write lock without waiting (the busy timeout is 0 for that statement alone).
Otherwise the transaction goes to the worker as before, which waits for the lock (another
process's write) with the store's busy timeout. The loop is held for the transaction's own
time (~0.1 ms for a wake's routing, ~1 ms for a burst of 200 signals): in the worker, the same
Python held the GIL for most of it anyway.

The connection is opened with ``check_same_thread=False`` and only ever used by one thread at a
time: the loop uses it only while the worker has nothing in flight, and, being a synchronous
call, hands the worker nothing meanwhile. It never checkpoints on its own
(``wal_autocheckpoint=0``: a checkpoint syncs the file, which must not stall the loop): every
:data:`CHECKPOINT_EVERY` commits, and when the store closes, the worker runs a passive one. A
store in memory (shared with ``request_abort_sync``'s connection, whose table locks SQLite does
not wait for) keeps every transaction on the worker. Tested by tests/test_sqlite_turns.py.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple

import tui_agent.store.txn as txn
from tui_agent.store.aiosqlite_private import raw_connection, run_with_connection

if TYPE_CHECKING:
    import aiosqlite

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

CHECKPOINT_EVERY = 64  # commits between two passive checkpoints (SQLite's own: 1,000 pages)

log = logging.getLogger(__name__)


class WriteLock:
    """The store's write lock (one write transaction of this process at a time), counting the
    writes that took it (``begun``) and those that let it go (``ended``, after their COMMIT or
    ROLLBACK). With both, the change feed tells a version move that may be this process's own
    (a write under way, or ended since its last look) from one only another process made
    (``store/changes.py``; tests/test_change_feed.py)."""

    __slots__ = ("_lock", "begun", "ended")

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self.begun = 0
        self.ended = 0

    async def __aenter__(self) -> None:
        await self._lock.acquire()
        self.begun += 1

    async def __aexit__(self, *_exc: object) -> None:
        self.ended += 1
        self._lock.release()


class ConnectionTurns:
    """The store's connection ``db``, its transactions run on the loop's thread when they can
    begin at once (``here``; False: always on the worker), else on its worker thread."""

    def __init__(self, db: aiosqlite.Connection, *, here: bool, busy_timeout_ms: int) -> None:
        self._db = db
        self._raw = raw_connection(db)
        self._here = here
        self._busy_timeout_ms = busy_timeout_ms
        self._in_flight = 0  # jobs handed to the worker and not answered yet
        self._since_checkpoint = 0
        self._checkpoint: asyncio.Task[None] | None = None
        #: Transactions committed on the loop's thread, and those run on the worker (what the
        #: tests read).
        self.ran_here = 0
        self.ran_on_worker = 0

    async def on_worker(self, fn: Callable[[sqlite3.Connection, *Ts], T], *args: *Ts) -> T:
        """``fn(conn, *args)`` on the worker thread, counted in flight until it answers."""
        self._in_flight += 1
        try:
            return await run_with_connection(self._db, fn, *args)
        finally:
            self._in_flight -= 1

    async def transaction(self, body: Callable[[sqlite3.Connection, *Ts], T], *args: *Ts) -> T:
        """``body(conn, *args)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT``, here if it can begin at
        once, else on the worker (``txn.in_transaction``). The caller holds the store's write
        lock (no other transaction of this process is open)."""
        if self._here and self._in_flight == 0 and self._began():
            result = txn.committed(self._raw, body, *args)
            self.ran_here += 1
        else:
            result = await self.on_worker(txn.in_transaction, body, *args)
            self.ran_on_worker += 1
        self.committed()
        return result

    def _began(self) -> bool:
        """``BEGIN IMMEDIATE`` here, unless another connection holds the write lock (False:
        nothing began)."""
        conn = self._raw
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
                return False
            raise
        finally:
            conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
        return True

    # -- checkpoints ---------------------------------------------------------------------------

    def committed(self) -> None:
        """A transaction committed on this connection (here, on the worker, or the store's own
        ``transaction()``): every :data:`CHECKPOINT_EVERY`, a passive checkpoint on the worker."""
        if not self._here:
            return  # in memory: no WAL
        self._since_checkpoint += 1
        if self._since_checkpoint >= CHECKPOINT_EVERY and self._checkpoint is None:
            self._since_checkpoint = 0
            self._checkpoint = asyncio.get_running_loop().create_task(
                self._checkpoint_now(), name="SQLite checkpoint")

    async def _checkpoint_now(self) -> None:
        try:
            await self.on_worker(_passive_checkpoint)
        except Exception as error:  # the next one will do: a WAL only grows meanwhile
            log.warning("checkpointing the store's WAL failed: %s", error)
        finally:
            self._checkpoint = None

    async def settle(self) -> None:
        """Before the connection closes: wait for a checkpoint under way, and checkpoint what
        was committed since the last one. A short-lived process (``tui-agent notify``) commits
        fewer than :data:`CHECKPOINT_EVERY` times, and while another process keeps the file
        open its close does not checkpoint: without this, a stream of them would grow the WAL
        for as long as that process stays idle."""
        checkpoint = self._checkpoint
        if checkpoint is not None:
            await asyncio.gather(checkpoint, return_exceptions=True)
        if self._here and self._since_checkpoint:
            self._since_checkpoint = 0
            await self._checkpoint_now()


def _passive_checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
