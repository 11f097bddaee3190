"""The embedded default store: one SQLite file in WAL mode, through aiosqlite.

Every write runs inside a ``BEGIN IMMEDIATE`` transaction, so several processes can share the
file: SQLite serialises writers, ``busy_timeout`` makes the others wait instead of failing, and the
decisions that must be atomic across processes (who holds a thread's run lease, whether a signal
goes into a live run or wakes a new one) are taken inside one such transaction.

Group commit: one writer per store drains a queue. Writes queued until its next turn (one loop
iteration's, and those arriving while a transaction is in flight) share one transaction, run in
arrival order (so per-thread order holds), each inside its own savepoint: a write that raises is
rolled back alone and only its caller gets the error. Each caller's ``await`` returns only once
the transaction holding its write has committed, so a burst of 200 signals costs a few commits,
every accepted one is stored, and a kill -9 leaves a write wholly in or wholly out. Which
thread runs a transaction (the event loop's, or aiosqlite's worker): ``sqlite_turns.py``. A
write queued with ``submit_then`` has no future: the writer calls its completion itself, for
the whole group in one pass (a burst's receipts settle with no event-loop callback each).
Tests: ``tests/test_group_commit.py``.

Readers in other processes learn about new rows by polling ``PRAGMA data_version`` (cheap: no
table is read) and then reading the event log past their cursor.

``SqliteStore`` implements ``tui_agent.store.Store``: what is SQLite's own is here (the
connection, opened by ``sqlite_open.py``; group commit, the queued forms of appends and signal
routing, listeners, aborting from plain code); the transactions are written once for both stores
(``writes.py``, driven on the connection's thread by ``txn.py``) and so are the reads, state
lanes and the inbox, role objects (``composed.py``) on this store's :class:`SqliteDatabase` and
on :meth:`run_write`.
Tests: ``tests/test_store.py`` and the contract, ``tests/test_store_contract.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple

import tui_agent.store.txn as txn
from tui_agent.errors import StoreError, StoreFullError
from tui_agent.events import echo_source, echo_type
from tui_agent.store.codec import dumps, loads, new_id
from tui_agent.store.composed import ComposedStore
from tui_agent.store.compound import CompoundCall
from tui_agent.store.dialect import SQLITE, Dialect
from tui_agent.store.files import prepare_store_file, unusable_store_error
from tui_agent.store.location import MEMORY, default_location, sqlite_path
from tui_agent.store.reads import FLAG_ABORT, RunReads
from tui_agent.store.records import (
    EventIn,
    FinishOutcome,
    MessageIn,
    RouteResult,
    SignalIn,
)
from tui_agent.store.roles import Args, Door, Row, Session
from tui_agent.store.search import trails
from tui_agent.store.sqlite_index import TrailingIndex
from tui_agent.store.sqlite_open import BUSY_TIMEOUT_MS, open_connection
from tui_agent.store.sqlite_turns import ConnectionTurns, WriteLock
from tui_agent.store.statements import Txn

if TYPE_CHECKING:
    import aiosqlite  # loaded on first use: ``import tui_agent`` stays fast

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
# A write transaction's body: ``body(conn, *args)`` on the raw connection (``txn.py``).
Body = Callable[[sqlite3.Connection, *Ts], T]

log = logging.getLogger(__name__)

__all__ = [  # the records' own module is tui_agent.store.records; these stay importable here
    "EventIn",
    "FinishOutcome",
    "MessageIn",
    "RouteResult",
    "SignalIn",
    "SqliteStore",
    "dumps",
    "echo_source",
    "echo_type",
    "loads",
    "new_id",
]


class SqliteStore(ComposedStore):
    """A store on one SQLite file (a path or ``sqlite:///path``; ``:memory:`` for one that
    lives as long as its connection, in this process only). ``path`` defaults to the settings'
    ``db`` (``$TUI_AGENT_DB``) or the XDG data dir. Implements ``tui_agent.store.Store``: its
    reads, lanes and inbox are the shared role objects (``composed.py``) on this store's
    :class:`SqliteDatabase`; its writes of the log, leases and signals are here."""

    get_run = Door("runs", RunReads.get_run)

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, group_commit: bool = True
    ) -> None:
        self.path = sqlite_path(default_location() if path is None else path)
        # An in-memory database is shared (by name) with request_abort_sync's connection.
        self._memory_uri = f"file:tui-agent-{new_id()}?mode=memory&cache=shared"
        # False: one transaction per write (the benchmark's comparison; no other use).
        self.group_commit = group_commit
        self._db: aiosqlite.Connection | None = None  # opened lazily
        self._open_lock: asyncio.Lock | None = None
        self._write_lock: WriteLock | None = None
        self._turns: ConnectionTurns | None = None  # the connection's threads (sqlite_turns.py)
        self._queue: list[_Queued] = []  # writes waiting for the next group transaction
        self._writer: asyncio.Task[None] | None = None  # drains _queue while it has writes
        self._listeners: dict[str, set[asyncio.Event]] = {}
        self._commits = 0  # write transactions committed through this object
        self._opened_version: int | None = None  # data_version() when its connection opened
        self._index = TrailingIndex(self._start_writer)  # the search index's step (sqlite_index)
        super().__init__(SqliteDatabase(self), self)

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    @property
    def location(self) -> str:
        return self.path

    def _target(self) -> tuple[str, bool]:
        """What sqlite3.connect opens: the file, or the shared in-memory database (a URI)."""
        return (self._memory_uri, True) if self.path == MEMORY else (self.path, False)

    # -- connection ---------------------------------------------------------------------------

    async def _conn(self) -> aiosqlite.Connection:
        if self._db is not None:
            return self._db
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._db is None:
                db = await self._connect()
                self._turns = ConnectionTurns(
                    db, here=self.path != MEMORY, busy_timeout_ms=BUSY_TIMEOUT_MS)
                self._write_lock = WriteLock()
                self._db = db
            return self._db

    async def _connect(self) -> aiosqlite.Connection:
        target, uri = self._target()
        db, self._opened_version = await open_connection(self.path, target, uri)
        return db

    async def close(self) -> None:
        if self._index.waiting:  # what waits for the index is indexed now
            self._index.now()
        writer = self._writer
        if writer is not None and not writer.done():
            await asyncio.gather(writer, return_exceptions=True)  # queued writes commit first
        if self._db is not None:
            assert self._turns is not None
            await self._turns.settle()
            db, self._db = self._db, None
            await db.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncGenerator[aiosqlite.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``): atomic across processes."""
        db = await self._conn()
        assert self._write_lock is not None
        async with self._write_lock:
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                await db.execute("ROLLBACK")
                raise
            await db.execute("COMMIT")
            self._commits += 1
            assert self._turns is not None
            self._turns.committed()
        self._index.soon()  # it may have stored messages: the index step looks, in a moment

    async def write(self, body: Body[*Ts, T], *args: *Ts) -> T:
        """Run ``body(conn, *args)`` (a function of ``tui_agent.store.txn``) whole inside a
        ``BEGIN IMMEDIATE`` transaction, and return once that transaction has committed. The
        writes queued until the writer's next turn share it (group commit, see the module
        docstring); a write that raises is rolled back alone. A queued write is committed even
        if its caller is cancelled meanwhile. Where it runs: ``sqlite_turns.py``."""
        try:
            return await self.submit(body, *args)
        except sqlite3.DatabaseError as error:
            raise unusable_store_error(self.path, error) or error from None

    async def run_write(
        self, thread_id: str | None, write: Callable[[Dialect, *Ts], Txn[T]], *args: *Ts
    ) -> T:
        """The shared roles' writes (``log_writes.py``): ``write`` driven on the connection's
        thread as :meth:`write` runs a body (``thread_id`` needs nothing more here: the writer
        keeps arrival order)."""
        return await self.write(txn.in_dialect, write, *args)

    def _typed(self, error: BaseException) -> BaseException:
        """A full disk (or ``max_page_count``) as one clear ``StoreFullError`` naming the
        store; any other error as it is."""
        if isinstance(error, sqlite3.Error) and "full" in str(error):
            return StoreFullError(f"the store {self.path} is full ({error}): nothing was written")
        return error

    def submit(self, body: Body[*Ts, T], *args: *Ts) -> asyncio.Future[T]:
        """Queue ``body(conn, *args)`` as :meth:`write` does, without waiting: the future
        resolves once its transaction has committed (for hot paths that would otherwise need a
        task per write)."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._enqueue(_Queued(body, args, future))
        return future

    def submit_then(
        self, then: Callable[[txn.Outcome], None], body: Body[*Ts, object], *args: *Ts
    ) -> None:
        """Queue ``body(conn, *args)`` as :meth:`submit` does, with no future: the writer calls
        ``then(outcome)`` itself once the transaction holding the write has committed (or
        failed), for every write of the group in one pass — no event-loop callback per write.
        ``then`` must not block; an error it raises goes to the loop's exception handler."""
        self._enqueue(_Queued(body, args, None, then))

    def _enqueue(self, queued: _Queued) -> None:
        self._queue.append(queued)
        self._start_writer()

    def _start_writer(self) -> None:
        if self._writer is None:
            loop = asyncio.get_running_loop()
            self._writer = loop.create_task(self._drain(), name=f"{self!r} writer")

    async def _drain(self) -> None:
        """The store's one writer: commit the queue, a group at a time, until it is empty; and
        index for search what its writes stored, when that is due."""
        try:
            await self._conn()
            while self._queue or self._index.due:
                if not self._queue:
                    self._index.due = False
                    await self._index_step()
                    continue
                if self.group_commit:
                    group, self._queue = self._queue, []
                else:
                    group = [self._queue.pop(0)]
                await self._commit_group(group)
        except BaseException as error:
            # The file cannot be opened, or the writer was cancelled (the loop is closing): every
            # waiting caller hears of it, nobody waits forever.
            for queued in self._queue:
                _settle(queued, txn.Outcome(error=_as_exception(error)))
            self._queue = []
            if not isinstance(error, Exception):
                raise
        finally:
            self._writer = None

    async def _commit_group(self, group: list[_Queued]) -> None:
        assert self._write_lock is not None
        try:
            async with self._write_lock:  # transaction() holds it across awaits
                outcomes = await self._run_group(group)
        except BaseException as error:  # nothing of the group was stored
            for queued in group:
                _settle(queued, txn.Outcome(error=_as_exception(self._typed(error))))
            if not isinstance(error, Exception):
                raise
            return  # the writes queued behind this group still get their own transaction
        for queued, outcome in zip(group, outcomes, strict=True):
            if outcome.error is not None:
                outcome.error = self._typed(outcome.error)
            _settle(queued, outcome)

    async def _run_group(self, group: list[_Queued]) -> list[txn.Outcome]:
        turns = self._turns
        assert turns is not None
        if len(group) == 1:  # alone: no savepoint needed, an error rolls back the whole
            try:
                alone = group[0]
                value, unindexed = await turns.transaction(  # writes of any arguments
                    _with_trails, alone.body, *alone.args)  # pyright: ignore[reportArgumentType]
            except Exception as error:
                return [txn.Outcome(error=error)]
            self._commits += 1
            if unindexed:
                self._index.soon()
            return [txn.Outcome(value)]
        writes = [(queued.body, queued.args) for queued in group]
        outcomes, unindexed = await turns.transaction(_with_trails, txn.group, writes)
        self._commits += 1
        if unindexed:
            self._index.soon()
        return outcomes

    async def _index_step(self) -> None:
        """The writer's index step (``sqlite_index.py``). A failure is only logged: the mark
        stays, and the next search (or index step) takes them."""
        assert self._write_lock is not None and self._turns is not None
        try:
            await self._index.step(self._turns, self._write_lock)
        except Exception as error:
            log.warning("indexing messages for search in %s failed: %s", self.path, error)

    async def index_trailing_messages(self) -> None:
        """Index for search the messages stored (by any process) and not indexed yet: a
        search sees every committed message (``store/search.py``)."""
        await self._conn()
        assert self._turns is not None
        if await self._turns.on_worker(trails):  # a read: no write lock when none trail
            assert self._write_lock is not None
            await self._index.step(self._turns, self._write_lock)  # a quiet commit

    async def fetchall(self, sql: str, params: Args = ()) -> list[Row]:
        await self._conn()
        assert self._turns is not None
        try:
            return await self._turns.on_worker(_fetchall, sql, params)
        except sqlite3.DatabaseError as error:
            raise unusable_store_error(self.path, error) or error from None

    async def fetchone(self, sql: str, params: Args = ()) -> Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    # -- change notification ------------------------------------------------------------------

    def add_listener(self, thread_id: str, event: asyncio.Event | None = None) -> asyncio.Event:
        """An event (``event``, or a new one) set whenever this process appends to
        ``thread_id``'s log (the listener clears it). Other processes' appends are seen by
        polling :meth:`data_version`."""
        event = asyncio.Event() if event is None else event
        self._listeners.setdefault(thread_id, set()).add(event)
        return event

    def remove_listener(self, thread_id: str, event: asyncio.Event) -> None:
        listeners = self._listeners.get(thread_id)
        if listeners is not None:
            listeners.discard(event)
            if not listeners:
                del self._listeners[thread_id]

    def notify(self, thread_id: str) -> None:
        """Wake this store's listeners of the thread."""
        for event in self._listeners.get(thread_id, ()):
            event.set()

    async def data_version(self) -> int:
        """Changes when another connection commits: the cheap cross-process poll."""
        row = await self.fetchone("PRAGMA data_version")
        assert row is not None  # a pragma always answers
        return int(row[0])

    @property
    def connected(self) -> bool:
        """Its connection is open: a query now would not open it (nor reopen a closed store)."""
        return self._db is not None

    @property
    def opened_data_version(self) -> int | None:
        """:meth:`data_version` as its connection read it when it opened: the change feed's
        first look, for a store it has not looked at yet (None before the store opened)."""
        return self._opened_version

    @property
    def quiet_commits(self) -> int:
        """The search index's transactions (``store/search.py``), not in
        :attr:`local_commits`: they change nothing a watch reads, so the change feed wakes
        nobody for them, and does not take them for another process's commits."""
        return self._index.quiet_commits

    @property
    def writes_begun(self) -> int:
        """Write transactions of this object that took the write lock (``WriteLock``)."""
        return 0 if self._write_lock is None else self._write_lock.begun

    @property
    def writes_ended(self) -> int:
        """Write transactions of this object that ended (committed or rolled back): with
        :attr:`writes_begun`, what the change feed needs to tell its own commits from another
        process's."""
        return 0 if self._write_lock is None else self._write_lock.ended

    @property
    def local_commits(self) -> int:
        """How many write transactions were committed through this store object. Its own
        commits do not change :meth:`data_version`; with both, a reader learns of every
        commit, from this process or another, without reading a table."""
        return self._commits

    def append_soon(
        self,
        thread_id: str,
        resource_id: str,
        *,
        messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (),
        fence: str | None = None,
    ) -> asyncio.Future[None]:
        """:meth:`append`, queued at once for the writer's next group commit, never run alone
        (as a lone :meth:`append` is): appends made in the same loop iteration, such as the
        delta flushes of several runs on one tick, share one transaction. The future resolves
        once it is committed."""
        appended = self.submit(
            txn.append_as_run, thread_id, resource_id, list(messages), list(events), fence
        )
        appended.add_done_callback(partial(self._notify_committed, thread_id))
        return appended

    def _notify_committed(self, thread_id: str, write: asyncio.Future[Any]) -> None:
        if not write.cancelled() and write.exception() is None:
            self.notify(thread_id)

    def request_abort_sync(self, thread_id: str) -> str | None:
        """Flag the thread's live run for abort, from plain (non-async) code: the run's owner,
        in whichever process, sees the flag and stops. Returns the run id, or None."""
        target, uri = self._target()
        if not uri:
            prepare_store_file(self.path)  # it may be the first to create the file
        with sqlite3.connect(target, timeout=BUSY_TIMEOUT_MS / 1000, uri=uri) as db:
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            try:
                row = _retry_locked(lambda: db.execute(
                    SQLITE.sql(FLAG_ABORT), (thread_id, *SQLITE.now_args())
                ).fetchone())
            except sqlite3.OperationalError as error:
                if "no such table" not in str(error):
                    raise
                return None  # a store nothing has used yet has no live run
        return None if row is None else row[0]

    def route_signal_soon(
        self, thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str,
        if_idle: str, queue: bool = False, owner: str, ttl_s: float,
        agent_id: str | None = None, echo_when_idle: SignalIn | None = None,
        claim_on_wake: int | None = None,
    ) -> asyncio.Future[RouteResult]:
        """:meth:`route_signal`, queued at once: the future resolves once the decision is
        committed. A burst of sends routes with no task per signal, in one group commit."""
        routed = self.submit(
            txn.route_signal, thread_id, resource_id, signal, echo_when_idle or signal,
            if_active, if_idle, queue, owner, ttl_s, agent_id, claim_on_wake,
        )
        routed.add_done_callback(partial(self._notify_routed, thread_id))
        return routed

    def route_signal_then(
        self, then: Callable[[RouteResult | None, BaseException | None], None],
        thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str, if_idle: str,
        queue: bool = False, owner: str, ttl_s: float, agent_id: str | None = None,
        echo_when_idle: SignalIn | None = None, claim_on_wake: int | None = None,
    ) -> None:
        """:meth:`route_signal_soon` with no future: the writer calls ``then(result, error)``
        once the decision is committed, for all the signals of a group in one pass."""
        self._enqueue(_Queued(  # submit_then's, inline: a burst queues hundreds
            txn.route_signal,
            (thread_id, resource_id, signal, echo_when_idle or signal, if_active, if_idle, queue,
             owner, ttl_s, agent_id, claim_on_wake),
            None, partial(self._after_route, thread_id, then),
        ))

    def route_compound_then(
        self, then: Callable[[Any, RouteResult | None, BaseException | None], None],
        call: CompoundCall,
    ) -> None:
        """A write and the routing of the signal it makes, in one transaction (``compound.py``),
        queued for the next group commit: ``then(value, routed, error)`` once it is committed
        (``routed`` None: nothing was routed). A burst of them is one batch of the group."""
        self.submit_then(partial(self._after_compound, call.thread_id, then), txn.compound, call)

    def _after_compound(
        self, thread_id: str,
        then: Callable[[Any, RouteResult | None, BaseException | None], None],
        outcome: txn.Outcome,
    ) -> None:
        if outcome.error is not None:
            then(None, None, outcome.error)
            return
        value, routed = outcome.value
        if routed is not None and routed.action != "discard":
            self.notify(thread_id)
        then(value, routed, None)

    def _after_route(
        self,
        thread_id: str,
        then: Callable[[RouteResult | None, BaseException | None], None],
        outcome: txn.Outcome,
    ) -> None:
        if outcome.error is None and outcome.value.action != "discard":
            self.notify(thread_id)
        then(outcome.value, outcome.error)

    def _notify_routed(self, thread_id: str, routed: asyncio.Future[RouteResult]) -> None:
        if routed.cancelled() or routed.exception() is not None:
            return
        if routed.result().action != "discard":
            self.notify(thread_id)

    async def route_signal(
        self, thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str,
        if_idle: str, queue: bool = False, owner: str, ttl_s: float,
        agent_id: str | None = None, echo_when_idle: SignalIn | None = None,
        claim_on_wake: int | None = None,
    ) -> RouteResult:
        """Decide, atomically across processes, what happens to a signal:

        - live run: ``deliver`` (pending, taken by that run between steps), ``persist``,
          ``discard``; with ``queue`` it waits as ``queued`` and starts its own run later.
        - idle: ``wake`` (we take the lease: a new run, its ``start`` event, the signal pending
          for it), ``persist`` (stored and echoed, with no run and no model call), ``discard``.

        ``echo_when_idle`` is the signal as rendered for the idle branch (attributes differ).
        """
        return await self.route_signal_soon(
            thread_id, resource_id, signal, if_active=if_active, if_idle=if_idle, queue=queue,
            owner=owner, ttl_s=ttl_s, agent_id=agent_id, echo_when_idle=echo_when_idle,
            claim_on_wake=claim_on_wake,
        )



@dataclass(slots=True)
class _Queued:
    """A write waiting for the writer: ``body(conn, *args)``, and how its caller hears the
    outcome: a future, or ``then`` called by the writer (see ``submit_then``)."""

    body: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future[Any] | None
    then: Callable[[txn.Outcome], None] | None = None


def _settle(queued: _Queued, outcome: txn.Outcome) -> None:
    if queued.then is not None:
        try:
            queued.then(outcome)
        except Exception as error:  # the other writes of the group must still be settled
            asyncio.get_running_loop().call_exception_handler(
                {"message": "a store write's completion callback failed", "exception": error}
            )
        return
    future = queued.future
    assert future is not None
    if future.done():  # its caller was cancelled: the write is committed all the same
        return
    if outcome.error is None:
        future.set_result(outcome.value)
    elif isinstance(outcome.error, asyncio.CancelledError):
        future.cancel()
    else:
        future.set_exception(outcome.error)


def _as_exception(error: BaseException) -> BaseException:
    """What the callers of a group that never committed get: the error, or for a
    KeyboardInterrupt/SystemExit in the writer, a StoreError naming it."""
    if isinstance(error, Exception | asyncio.CancelledError):
        return error
    return StoreError(f"the store's writer stopped: {type(error).__name__}: {error}")


def _retry_locked(statement: Callable[[], T]) -> T:
    """Run ``statement``, retrying while a shared-cache (in-memory) table lock is held:
    SQLite does not apply busy_timeout to those. A file store never sees this error."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            return statement()
        except sqlite3.OperationalError as error:
            if "table is locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.001)


def _with_trails(
    conn: sqlite3.Connection, body: Callable[..., T], *args: Any
) -> tuple[T, bool]:
    """``body(conn, *args)``, then whether messages wait to be indexed for search: one more
    read in the same transaction."""
    return body(conn, *args), trails(conn)


def _fetchall(conn: sqlite3.Connection, sql: str, params: Args) -> list[Row]:
    return conn.execute(sql, params).fetchall()


class SqliteDatabase:
    """The shared roles' way into a :class:`SqliteStore`: reads through its ``fetchall`` (one
    hop to the connection's thread each), writes in its ``BEGIN IMMEDIATE`` transaction."""

    @property
    def dialect(self) -> Dialect:
        return SQLITE

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    async def rows(self, sql: str, args: Args = ()) -> list[Row]:
        return await self.store.fetchall(SQLITE.sql(sql), args)

    @asynccontextmanager
    async def transaction(self) -> AsyncGenerator[Session]:
        async with self.store.transaction() as db:
            yield _SqliteSession(db)

    async def index_trailing_messages(self) -> None:
        await self.store.index_trailing_messages()


class _SqliteSession:
    """Statements on the aiosqlite connection, inside the store's open transaction."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    async def rows(self, sql: str, args: Args = ()) -> list[Row]:
        return list(await self.db.execute_fetchall(sql, args))

    async def run(self, sql: str, args: Args = ()) -> int:
        cursor = await self.db.execute(sql, args)
        return cursor.rowcount

    async def run_many(self, sql: str, rows: Sequence[Args]) -> None:
        await self.db.executemany(sql, rows)
