"""The shared store: PostgreSQL through ``asyncpg`` (``pip install 'tui-agent[postgres]'``),
for threads shared past one machine. ``open_store("postgresql://user@host:port/db")`` opens it.

It implements ``tui_agent.store.Store`` with the same guarantees as SQLite, across every
process on every machine using the database:

- one pool per store object (``POOL_SIZE`` connections: enough for a process with a few panes);
  asyncpg prepares each statement once per connection and caches it;
- every write method is one transaction; those that touch a thread's log, lease or signals take
  the thread's advisory lock first (``writes.py``, run by ``postgres_txn.py``): exactly one of
  concurrent wakes wakes, and the event log's ``seq`` follows commit order;
- the inbox's claims lock their rows ``FOR UPDATE SKIP LOCKED`` (``inbox.py``, ``dialect.py``);
- a run's writes are fenced by its run id and signals stranded by a dead run are rescued, as on
  SQLite (the same transactions); a full disk (SQLSTATE 53100) is one ``StoreFullError``;
- change detection is ``LISTEN/NOTIFY`` (``postgres_changes.py``): ``data_version()`` is a
  counter the notifications bump, no query; listeners of a thread are woken by other processes'
  commits too.

The schema is migrated on first use (``postgres_schema.py``). Tests: the contract suite
(``tests/test_store_contract.py``, factory ``postgres``) and ``tests/test_postgres_store.py``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterable, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any, TypeVar, TypeVarTuple

import tui_agent.store.postgres_txn as txn
from tui_agent.errors import StoreError, StoreFullError
from tui_agent.store.composed import ComposedStore
from tui_agent.store.compound import CompoundCall, Done
from tui_agent.store.dialect import POSTGRES, Dialect
from tui_agent.store.location import without_password
from tui_agent.store.pg_driver import INSTALL_HINT, PgConnection, PgPool, require_asyncpg
from tui_agent.store.postgres_changes import ChangeListener
from tui_agent.store.postgres_group import (
    DELIVER_ONE,
    GroupBody,
    Outcome,
    RouteGroups,
    deliver_args,
)
from tui_agent.store.postgres_schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION
from tui_agent.store.reads import FLAG_ABORT
from tui_agent.store.records import (
    EventIn,
    MessageIn,
    RouteResult,
    RunRecord,
    SignalIn,
)
from tui_agent.store.roles import Args, Row, Session
from tui_agent.store.signal_writes import RouteCall
from tui_agent.store.statements import Txn

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
# A write transaction's body: ``await body(conn, *args)`` inside the open transaction.
Body = Callable[[PgConnection, *Ts], Awaitable[T]]

POOL_SIZE = 8  # a process with a few panes: each pane's subscriber reads, one run writes
CONNECT_TIMEOUT_S = 10.0
__all__ = ["INSTALL_HINT", "POOL_SIZE", "PostgresStore", "require_asyncpg"]


class PostgresStore(ComposedStore):
    """A store in a PostgreSQL database (``postgresql://`` or ``postgres://`` URL). Connects
    lazily, on first use; :meth:`close` releases the pool and the listening connection. Its
    reads, lanes and inbox are the shared role objects (``composed.py``) on this store's
    :class:`PostgresDatabase`; its writes of the log, leases and signals are here."""

    # Listeners are set by other processes' commits too (NOTIFY), not only this object's: a
    # poller may wait on them and call data_version() only now and then (≥ 0.5 s: it keeps the
    # listening connection up), instead of every few milliseconds.
    pushes_changes = True

    def __init__(self, url: str) -> None:
        require_asyncpg()
        self.url = url
        self._pool: PgPool | None = None
        self._open_lock: asyncio.Lock | None = None
        self._commits = 0
        self._thread_order: dict[str, _InCallOrder] = {}
        self._run_lookups: asyncio.Lock | None = None
        self._changes = ChangeListener(self._connect)
        self._changes.on_change = self._wake_change_feed
        self._routes = RouteGroups(self._run_route_group, self._deliver_fast, self._routed)
        super().__init__(PostgresDatabase(self), self)

    def _wake_change_feed(self, foreign: bool) -> None:
        """A notification arrived: wake this store's change-feed watchers at once (its poller
        then only keeps the listening connection up, every ``SAFETY_S``); one of this process's
        own commits wakes only its ``local`` watches."""
        from tui_agent.store.changes import ChangeFeed

        ChangeFeed.of(self).wake(foreign=foreign, news=False)

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"

    @property
    def location(self) -> str:
        return without_password(self.url)

    # -- connections --------------------------------------------------------------------------

    async def _connect(self) -> PgConnection:
        asyncpg = require_asyncpg()
        with self._unreachable_is_a_store_error():
            return await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT_S)

    @contextmanager
    def _unreachable_is_a_store_error(self) -> Generator[None]:
        """A server that cannot be reached (or refuses us) is one ``StoreError`` naming the
        store without its password, not a driver traceback."""
        asyncpg = require_asyncpg()
        try:
            yield
        except (OSError, TimeoutError, asyncpg.PostgresError,
                asyncpg.InterfaceError) as error:
            raise StoreError(
                f"cannot open the PostgreSQL store {self.location}: {error}"
            ) from error

    async def pool(self) -> PgPool:
        if self._pool is not None:
            return self._pool
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._pool is None:
                asyncpg = require_asyncpg()
                with self._unreachable_is_a_store_error():
                    pool = await asyncpg.create_pool(
                        self.url, min_size=1, max_size=POOL_SIZE, timeout=CONNECT_TIMEOUT_S,
                        init=self._own_connection,
                    )
                try:
                    async with pool.acquire() as conn:
                        await migrate(conn, self.location)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    async def _own_connection(self, conn: PgConnection) -> None:
        """Each new pooled connection: its notifications are this process's own commits."""
        self._changes.own(conn)

    async def close(self) -> None:
        await self._changes.close()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()
        # Locks belong to the loop that used them: a store reopened on another loop makes new.
        self._open_lock = self._run_lookups = None

    @asynccontextmanager
    async def transaction(self) -> AsyncGenerator[PgConnection]:
        """One write transaction on a pooled connection; counted in :attr:`local_commits`."""
        pool = await self.pool()
        with self._full_is_a_store_full_error():
            async with pool.acquire() as conn, conn.transaction():
                yield conn
        self._commits += 1

    @contextmanager
    def _full_is_a_store_full_error(self) -> Generator[None]:
        """The server's disk full (SQLSTATE 53100) as one ``StoreFullError`` naming the store
        without its password, as SQLite's full file is; the transaction was rolled back."""
        try:
            yield
        except require_asyncpg().DiskFullError as error:
            raise StoreFullError(
                f"the store {self.location} is full ({error}): nothing was written"
            ) from error

    async def write(self, body: Body[*Ts, T], *args: *Ts) -> T:
        """Run ``body(conn, *args)`` (a function of ``postgres_txn``) as one transaction."""
        async with self.transaction() as conn:
            return await body(conn, *args)

    async def write_thread(
        self, thread_id: str, body: Body[*Ts, T], *args: *Ts
    ) -> T:
        """:meth:`write` for a transaction on one thread, in this process's call order."""
        async with self._in_call_order(thread_id):
            return await self.write(body, *args)

    async def run_write(
        self, thread_id: str | None, write: Callable[[Dialect, *Ts], Txn[T]], *args: *Ts
    ) -> T:
        """The shared roles' writes (``log_writes.py``): one transaction, in this process's
        call order on ``thread_id`` if given."""
        if thread_id is None:
            return await self.write(txn.in_dialect, write, *args)
        return await self.write_thread(thread_id, txn.in_dialect, write, *args)

    @asynccontextmanager
    async def _in_call_order(self, thread_id: str) -> AsyncGenerator[None]:
        """Writes to one thread from this process, one at a time in the order called: the
        pool's connections would otherwise reach the thread's advisory lock in any order
        (three messages sent one after another must arrive in that order, as on SQLite)."""
        entry = self._thread_order.get(thread_id)
        if entry is None:
            entry = self._thread_order[thread_id] = _InCallOrder()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._thread_order[thread_id]

    async def fetchall(self, sql: str, *args: object) -> list[Row]:
        return list(await (await self.pool()).fetch(sql, *args))

    async def fetchone(self, sql: str, *args: object) -> Row | None:
        return await (await self.pool()).fetchrow(sql, *args)

    # -- change notification ------------------------------------------------------------------

    def add_listener(self, thread_id: str, event: asyncio.Event | None = None) -> asyncio.Event:
        """An event (``event``, or a new one) set on this store's writes to the thread (when
        they commit) and on other processes' commits to it (``NOTIFY``, once
        :meth:`data_version` has started listening)."""
        event = asyncio.Event() if event is None else event
        self._changes.listeners.setdefault(thread_id, set()).add(event)
        return event

    def remove_listener(self, thread_id: str, event: asyncio.Event) -> None:
        listeners = self._changes.listeners.get(thread_id)
        if listeners is not None:
            listeners.discard(event)
            if not listeners:
                del self._changes.listeners[thread_id]

    def notify(self, thread_id: str) -> None:
        """Wake this store's listeners of the thread."""
        self._changes.set_thread(thread_id)

    async def data_version(self) -> int:
        """How many change notifications this store has received from other processes'
        commits: no query (it starts the one listening connection on first call and restores
        it when dropped)."""
        await self._changes.ensure()
        return self._changes.version

    @property
    def local_commits(self) -> int:
        return self._commits

    def listener_backend_pid(self) -> int | None:
        """The server process of the listening connection (None: not listening)."""
        return self._changes.backend_pid()

    # -- messages and events ------------------------------------------------------------------

    def append_soon(
        self, thread_id: str, resource_id: str, *, messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (), fence: str | None = None,
    ) -> asyncio.Future[None]:
        """:meth:`append`, started now: the store keeps call order per thread. Each is its own
        transaction here (no group commit on PostgreSQL yet: the pool writes in parallel), so
        a refused (fenced) append fails only its own future."""
        return asyncio.ensure_future(self.append(
            thread_id, resource_id, messages=list(messages), events=list(events), fence=fence))

    # -- runs and leases ----------------------------------------------------------------------

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Lookups answer in call order (one at a time): signals sent to a run id find its
        thread in the order they were sent, then queue on the thread in that order."""
        if self._run_lookups is None:
            self._run_lookups = asyncio.Lock()
        async with self._run_lookups:
            return await self.runs.get_run(run_id)

    def request_abort_sync(self, thread_id: str) -> str | None:
        """asyncpg is async only: the flag is set from a thread of its own, on a connection
        of its own, with its own loop (never on the caller's loop, which may be running)."""
        result: list[str | None] = []
        errors: list[BaseException] = []

        def flag() -> None:
            try:
                result.append(asyncio.run(self._flag_abort(thread_id)))
            except BaseException as error:  # handed to the caller below
                errors.append(error)

        worker = threading.Thread(target=flag, name="tui-agent-abort", daemon=True)
        worker.start()
        worker.join()
        if errors:
            raise errors[0]
        return result[0]

    async def _flag_abort(self, thread_id: str) -> str | None:
        asyncpg = require_asyncpg()
        conn = await self._connect()
        try:
            return await conn.fetchval(
                POSTGRES.sql(FLAG_ABORT), thread_id, timeout=CONNECT_TIMEOUT_S
            )
        except asyncpg.UndefinedTableError:
            return None  # a database nothing has used yet has no live run
        finally:
            await conn.close()

    # -- signals ------------------------------------------------------------------------------

    def route_signal_soon(
        self, thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str,
        if_idle: str, queue: bool = False, owner: str, ttl_s: float,
        agent_id: str | None = None, echo_when_idle: SignalIn | None = None,
        claim_on_wake: int | None = None,
    ) -> asyncio.Future[RouteResult]:
        """:meth:`route_signal`, queued at once for the next group commit
        (``postgres_group.py``): the future resolves once the decision is committed."""
        routed: asyncio.Future[RouteResult] = asyncio.get_running_loop().create_future()
        self._routes.submit(
            (thread_id, resource_id, signal, echo_when_idle or signal, if_active, if_idle, queue,
             owner, ttl_s, agent_id, claim_on_wake),
            partial(_settle_future, routed),
        )
        return routed

    def route_signal_then(
        self, then: Callable[[RouteResult | None, BaseException | None], None],
        thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str, if_idle: str,
        queue: bool = False, owner: str, ttl_s: float, agent_id: str | None = None,
        echo_when_idle: SignalIn | None = None, claim_on_wake: int | None = None,
    ) -> None:
        """:meth:`route_signal_soon` with no future: ``then(result, error)`` is called once the
        decision is committed, for every signal of a group in one pass."""
        self._routes.submit(
            (thread_id, resource_id, signal, echo_when_idle or signal, if_active, if_idle, queue,
             owner, ttl_s, agent_id, claim_on_wake),
            then,
        )

    def route_compound_then(
        self, then: Callable[[Any, RouteResult | None, BaseException | None], None],
        call: CompoundCall,
    ) -> None:
        """A write and the routing of the signal it makes, in one transaction (``compound.py``),
        queued for the next routing group (``postgres_group.py``): ``then(value, routed,
        error)`` once it is committed (``routed`` None: nothing was routed)."""
        self._routes.submit(call, partial(_compound_done, then))

    async def route_signal(
        self, thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str,
        if_idle: str, queue: bool = False, owner: str, ttl_s: float,
        agent_id: str | None = None, echo_when_idle: SignalIn | None = None,
        claim_on_wake: int | None = None,
    ) -> RouteResult:
        """Decide, atomically across processes, what happens to a signal (see the contract);
        sends that arrive together share one transaction (``postgres_group.py``)."""
        return await self.route_signal_soon(
            thread_id, resource_id, signal, if_active=if_active, if_idle=if_idle, queue=queue,
            owner=owner, ttl_s=ttl_s, agent_id=agent_id, echo_when_idle=echo_when_idle,
            claim_on_wake=claim_on_wake,
        )

    @property
    def route_groups(self) -> int:
        """How many routing transactions the group writer committed (a burst of sends: few)."""
        return self._routes.groups

    @property
    def route_queue_length(self) -> int:
        """Signals queued for the next routing group, not yet taken by the group writer."""
        return self._routes.waiting

    async def _run_route_group(self, body: GroupBody) -> list[Outcome]:
        """One routing group's transaction (the group writer keeps arrival order: no per-thread
        call-order lock is needed)."""
        async with self.transaction() as conn:
            return await body(conn)

    def _routed(self, thread_id: str, result: RouteResult) -> None:
        if result.action != "discard":
            self.notify(thread_id)

    async def _deliver_fast(self, call: RouteCall) -> str | None:
        """Into a live run in one round trip and one statement (``tui_agent_deliver_signal``,
        its own transaction); None if no run is live (nothing was written)."""
        pool = await self.pool()
        with self._full_is_a_store_full_error():
            run_id = await pool.fetchval(DELIVER_ONE, *deliver_args(call))
        if run_id is not None:
            self._commits += 1
        return run_id


async def migrate(conn: PgConnection, shown: str) -> None:
    """Bring the database to ``SCHEMA_VERSION``, once however many processes open it."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS tui_agent_schema (version integer NOT NULL)"
        )
        version = await conn.fetchval("SELECT version FROM tui_agent_schema")
        if version is None:
            await conn.execute("INSERT INTO tui_agent_schema(version) VALUES (0)")
            version = 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{shown} has schema version {version}, newer than this tui-agent "
                f"({SCHEMA_VERSION}); upgrade tui-agent"
            )
        for number in range(version, SCHEMA_VERSION):
            await conn.execute(MIGRATIONS[number])
        if version != SCHEMA_VERSION:
            await conn.execute("UPDATE tui_agent_schema SET version=$1", SCHEMA_VERSION)


def _compound_done(
    then: Callable[[Any, RouteResult | None, BaseException | None], None],
    done: Done | None, error: BaseException | None,
) -> None:
    if error is not None or done is None:
        then(None, None, error)
        return
    then(done[0], done[1], None)


def _settle_future(
    routed: asyncio.Future[RouteResult], result: RouteResult | None, error: BaseException | None
) -> None:
    if routed.done():  # its caller was cancelled: the decision still stands
        return
    if error is not None:
        routed.set_exception(error)
    else:
        assert result is not None
        routed.set_result(result)



class PostgresDatabase:
    """The shared roles' way into a :class:`PostgresStore`: reads on its pool, writes in one
    of its transactions."""

    @property
    def dialect(self) -> Dialect:
        return POSTGRES

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def rows(self, sql: str, args: Args = ()) -> list[Row]:
        return await self.store.fetchall(POSTGRES.sql(sql), *args)

    @asynccontextmanager
    async def transaction(self) -> AsyncGenerator[Session]:
        async with self.store.transaction() as conn:
            yield _PostgresSession(conn)

    async def index_trailing_messages(self) -> None:
        """Nothing trails: a trigger indexes each message in the transaction storing it."""


class _PostgresSession:
    """Statements on one pooled connection, inside the store's open transaction."""

    def __init__(self, conn: PgConnection) -> None:
        self.conn = conn

    async def rows(self, sql: str, args: Args = ()) -> list[Row]:
        return list(await self.conn.fetch(sql, *args))

    async def run(self, sql: str, args: Args = ()) -> int:
        status: str = await self.conn.execute(sql, *args)  # "UPDATE 3", "INSERT 0 1"
        return int(status.rsplit(" ", 1)[-1])

    async def run_many(self, sql: str, rows: Sequence[Args]) -> None:
        await self.conn.executemany(sql, rows)


class _InCallOrder:
    """One thread's writes from this process, in call order: the lock they take in turn and
    how many are waiting for it or hold it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0
