"""The embedded default store: one SQLite file in WAL mode, through aiosqlite.

Every write is one ``BEGIN IMMEDIATE`` transaction, so several processes can share the file:
SQLite serialises writers, ``busy_timeout`` makes the others wait instead of failing, and the
decisions that must be atomic across processes (who holds a thread's run lease, whether a signal
goes into a live run or wakes a new one) are taken inside one such transaction.

Readers in other processes learn about new rows by polling ``PRAGMA data_version`` (cheap: no
table is read) and then reading the event log past their cursor.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui_agent.errors import StoreError
from tui_agent.paths import default_db_path
from tui_agent.store.records import (
    ActiveRun,
    MessageRecord,
    RunRecord,
    ThreadRecord,
    to_datetime,
)
from tui_agent.store.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 30_000


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(slots=True)
class EventIn:
    """An event to append to a thread's log. ``type`` is the chunk type a reader sees."""

    type: str
    payload: Any = None
    run_id: str | None = None
    source: str = "AGENT"


@dataclass(slots=True)
class MessageIn:
    role: str
    content: Any
    run_id: str | None = None
    id: str = field(default_factory=new_id)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SignalIn:
    """A signal as routed: ``message`` is the model-facing message (already rendered with the
    attributes of the branch taken); ``data`` is the signal itself, echoed to subscribers."""

    id: str
    type: str
    message: dict[str, Any]
    data: dict[str, Any]


@dataclass(slots=True)
class RouteResult:
    action: str  # wake | deliver | persist | discard
    run_id: str | None = None


@dataclass(slots=True)
class FinishOutcome:
    finished: bool  # False: signals arrived meanwhile, the run must continue
    next_run_id: str | None = None  # a queued message starts this run (lease kept)


def event_chunk(row: Sequence[Any]) -> dict[str, Any]:
    """A stored event row (seq, run_id, type, source, payload, created_at) as a stream chunk."""
    seq, run_id, type_, source, payload, _created = row
    return {"type": type_, "run_id": run_id, "from": source, "payload": loads(payload), "seq": seq}


class SqliteStore:
    """A store on one SQLite file. ``path`` defaults to ``$TUI_AGENT_DB`` or the XDG data dir."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        chosen = path or os.environ.get("TUI_AGENT_DB") or default_db_path()
        self.path = str(chosen)
        self._db: Any = None  # aiosqlite.Connection, opened lazily
        self._open_lock: asyncio.Lock | None = None
        self._write_lock: asyncio.Lock | None = None
        self._listeners: dict[str, set[asyncio.Event]] = {}

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    # -- connection ---------------------------------------------------------------------------

    async def _conn(self) -> Any:
        if self._db is not None:
            return self._db
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._db is None:
                self._db = await self._connect()
                self._write_lock = asyncio.Lock()
        return self._db

    async def _connect(self) -> Any:
        import aiosqlite

        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        connection = aiosqlite.connect(
            self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
        )
        # aiosqlite's worker thread is not a daemon: a program that never closes its store
        # would hang at exit. Every write is awaited to its COMMIT, so nothing is lost.
        worker = getattr(connection, "_thread", None)
        if worker is not None:
            worker.daemon = True
        db = await connection
        try:
            await db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await _enable_wal(db)
            await db.execute("PRAGMA synchronous=NORMAL")
            await db.execute("PRAGMA foreign_keys=ON")
            await self._migrate(db)
        except BaseException:
            await db.close()  # a file we cannot use (e.g. newer schema) must not leak a thread
            raise
        return db

    async def _migrate(self, db: Any) -> None:
        await db.execute("BEGIN IMMEDIATE")
        try:
            (version,) = await (await db.execute("PRAGMA user_version")).fetchone()
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema version {version}, newer than this tui-agent "
                    f"({SCHEMA_VERSION}); upgrade tui-agent"
                )
            for number in range(version, SCHEMA_VERSION):
                await _run_script(db, MIGRATIONS[number])
            if version != SCHEMA_VERSION:
                await db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            await db.execute("COMMIT")
        except BaseException:
            await db.execute("ROLLBACK")
            raise

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
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

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        db = await self._conn()
        return list(await db.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    # -- change notification ------------------------------------------------------------------

    def add_listener(self, thread_id: str) -> asyncio.Event:
        """An event set whenever this process appends to ``thread_id``'s log (the listener
        clears it). Other processes' appends are seen by polling :meth:`data_version`."""
        event = asyncio.Event()
        self._listeners.setdefault(thread_id, set()).add(event)
        return event

    def remove_listener(self, thread_id: str, event: asyncio.Event) -> None:
        listeners = self._listeners.get(thread_id)
        if listeners is not None:
            listeners.discard(event)
            if not listeners:
                del self._listeners[thread_id]

    def _notify(self, thread_id: str) -> None:
        for event in self._listeners.get(thread_id, ()):
            event.set()

    async def data_version(self) -> int:
        """Changes when another connection commits: the cheap cross-process poll."""
        row = await self.fetchone("PRAGMA data_version")
        return int(row[0])

    # -- threads ------------------------------------------------------------------------------

    async def ensure_thread(
        self,
        thread_id: str,
        resource_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ThreadRecord:
        """Create the thread, or update the title/metadata given. A thread belongs to one
        resource: asking for it under another is an error."""
        async with self.transaction() as db:
            await self._ensure_thread_in(db, thread_id, resource_id, title, metadata)
        thread = await self.get_thread(thread_id)
        assert thread is not None
        return thread

    async def _ensure_thread_in(
        self,
        db: Any,
        thread_id: str,
        resource_id: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        now = time.time()
        rows = await db.execute_fetchall("SELECT resource_id FROM threads WHERE id=?", (thread_id,))
        if not rows:
            await db.execute(
                "INSERT INTO threads(id, resource_id, title, metadata, created_at, updated_at)"
                " VALUES (?,?,?,?,?,?)",
                (thread_id, resource_id, title, dumps(metadata or {}), now, now),
            )
            return
        if rows[0][0] != resource_id:
            raise StoreError(
                f"thread {thread_id!r} belongs to resource {rows[0][0]!r}, not {resource_id!r}"
            )
        if title is not None or metadata is not None:
            await self._update_thread_in(db, thread_id, title, metadata, now)

    async def _update_thread_in(
        self,
        db: Any,
        thread_id: str,
        title: str | None,
        metadata: dict[str, Any] | None,
        now: float,
    ) -> None:
        sets, params = ["updated_at=?"], [now]
        if title is not None:
            sets.append("title=?")
            params.append(title)
        if metadata is not None:
            sets.append("metadata=?")
            params.append(dumps(metadata))
        await db.execute(f"UPDATE threads SET {', '.join(sets)} WHERE id=?", (*params, thread_id))

    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> ThreadRecord:
        async with self.transaction() as db:
            cursor = await db.execute("SELECT 1 FROM threads WHERE id=?", (thread_id,))
            if await cursor.fetchone() is None:
                raise StoreError(f"no thread {thread_id!r}")
            await self._update_thread_in(db, thread_id, title, metadata, time.time())
        thread = await self.get_thread(thread_id)
        assert thread is not None
        return thread

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        row = await self.fetchone(
            "SELECT id, resource_id, title, metadata, created_at, updated_at FROM threads"
            " WHERE id=?",
            (thread_id,),
        )
        return None if row is None else _thread(row)

    async def list_threads(self, resource_id: str | None = None) -> list[ThreadRecord]:
        sql = "SELECT id, resource_id, title, metadata, created_at, updated_at FROM threads"
        params: tuple[Any, ...] = ()
        if resource_id is not None:
            sql += " WHERE resource_id=?"
            params = (resource_id,)
        rows = await self.fetchall(sql + " ORDER BY updated_at DESC", params)
        return [_thread(row) for row in rows]

    # -- messages and events ------------------------------------------------------------------

    async def append(
        self,
        thread_id: str,
        resource_id: str,
        *,
        messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (),
    ) -> None:
        """Append messages and events to a thread in one transaction."""
        async with self.transaction() as db:
            await self._append_in(db, thread_id, resource_id, list(messages), list(events))
        self._notify(thread_id)

    async def _append_in(
        self,
        db: Any,
        thread_id: str,
        resource_id: str,
        messages: list[MessageIn],
        events: list[EventIn],
    ) -> None:
        now = time.time()
        if messages:
            await db.executemany(
                "INSERT INTO messages(id, thread_id, resource_id, role, content, run_id,"
                " metadata, created_at) VALUES (?,?,?,?,?,?,?,?)",
                [
                    (
                        m.id,
                        thread_id,
                        resource_id,
                        m.role,
                        dumps(m.content),
                        m.run_id,
                        dumps(m.metadata),
                        now,
                    )
                    for m in messages
                ],
            )
            await db.execute("UPDATE threads SET updated_at=? WHERE id=?", (now, thread_id))
        if events:
            await db.executemany(
                "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
                " VALUES (?,?,?,?,?,?)",
                [(thread_id, e.run_id, e.type, e.source, dumps(e.payload), now) for e in events],
            )

    async def append_events(self, thread_id: str, events: Iterable[EventIn]) -> None:
        async with self.transaction() as db:
            await self._append_in(db, thread_id, "", [], list(events))
        self._notify(thread_id)

    async def list_messages(
        self, thread_id: str, *, limit: int = 50, before: str | None = None
    ) -> list[MessageRecord]:
        """The ``limit`` messages just older than message ``before`` (or the newest), oldest
        first."""
        columns = "seq, id, thread_id, resource_id, role, content, run_id, metadata, created_at"
        if before is None:
            rows = await self.fetchall(
                f"SELECT {columns} FROM messages WHERE thread_id=? ORDER BY seq DESC LIMIT ?",
                (thread_id, limit),
            )
        else:
            rows = await self.fetchall(
                f"SELECT {columns} FROM messages WHERE thread_id=? AND seq <"
                " (SELECT seq FROM messages WHERE id=?) ORDER BY seq DESC LIMIT ?",
                (thread_id, before, limit),
            )
        return [_message(row) for row in reversed(rows)]

    async def read_events(
        self, thread_id: str, after_seq: int, limit: int = 1000
    ) -> list[dict[str, Any]]:
        rows = await self.fetchall(
            "SELECT seq, run_id, type, source, payload, created_at FROM events"
            " WHERE thread_id=? AND seq>? ORDER BY seq LIMIT ?",
            (thread_id, after_seq, limit),
        )
        return [event_chunk(row) for row in rows]

    async def last_event_seq(self, thread_id: str) -> int:
        row = await self.fetchone("SELECT MAX(seq) FROM events WHERE thread_id=?", (thread_id,))
        return int(row[0] or 0)

    # -- runs and leases ----------------------------------------------------------------------

    async def active_run(self, thread_id: str) -> ActiveRun | None:
        """The thread's live run (a lease that has not expired), if any."""
        row = await self.fetchone(
            "SELECT l.run_id, l.owner, r.start_seq, l.expires_at, l.abort_requested"
            " FROM leases l LEFT JOIN runs r ON r.id=l.run_id WHERE l.thread_id=?",
            (thread_id,),
        )
        if row is None or row[3] <= time.time():
            return None
        return ActiveRun(
            run_id=row[0],
            owner=row[1],
            start_seq=row[2],
            expires_at=to_datetime(row[3]),
            abort_requested=bool(row[4]),
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await self.fetchone(
            "SELECT id, thread_id, resource_id, agent_id, owner, status, start_seq,"
            " finish_reason, error, scores, started_at, ended_at FROM runs WHERE id=?",
            (run_id,),
        )
        return None if row is None else _run(row)

    async def list_runs(self, thread_id: str, limit: int = 20) -> list[RunRecord]:
        rows = await self.fetchall(
            "SELECT id, thread_id, resource_id, agent_id, owner, status, start_seq,"
            " finish_reason, error, scores, started_at, ended_at FROM runs WHERE thread_id=?"
            " ORDER BY started_at DESC LIMIT ?",
            (thread_id, limit),
        )
        return [_run(row) for row in rows]

    async def start_run(
        self,
        thread_id: str,
        resource_id: str,
        run_id: str,
        *,
        owner: str,
        ttl_s: float,
        agent_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Take the thread's lease for a new run (False if another live run holds it)."""
        async with self.transaction() as db:
            await self._ensure_thread_in(db, thread_id, resource_id, title, metadata)
            if await self._live_lease_in(db, thread_id) is not None:
                return False
            await self._begin_run_in(db, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
        self._notify(thread_id)
        return True

    async def _live_lease_in(self, db: Any, thread_id: str) -> tuple[str, str] | None:
        """(run_id, owner) of the live lease; an expired lease is reaped on the way."""
        rows = await db.execute_fetchall(
            "SELECT run_id, owner, expires_at FROM leases WHERE thread_id=?", (thread_id,)
        )
        if not rows:
            return None
        run_id, owner, expires_at = rows[0]
        if expires_at > time.time():
            return run_id, owner
        await self._interrupt_in(db, thread_id, run_id)
        return None

    async def _interrupt_in(self, db: Any, thread_id: str, run_id: str) -> None:
        """The owner of ``run_id`` stopped renewing its lease (it died): end the run."""
        now = time.time()
        await db.execute("DELETE FROM leases WHERE thread_id=?", (thread_id,))
        await db.execute(
            "UPDATE runs SET status='interrupted', finish_reason='interrupted', ended_at=?"
            " WHERE id=? AND status='running'",
            (now, run_id),
        )
        payload = {"reason": "interrupted", "detail": "the run's owner stopped renewing its lease"}
        await db.execute(
            "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
            " VALUES (?,?,?,?,?,?)",
            (thread_id, run_id, "interrupted", "AGENT", dumps(payload), now),
        )

    async def _begin_run_in(
        self,
        db: Any,
        thread_id: str,
        resource_id: str,
        run_id: str,
        owner: str,
        ttl_s: float,
        agent_id: str | None,
    ) -> None:
        now = time.time()
        await db.execute(
            "INSERT INTO leases(thread_id, run_id, owner, expires_at, abort_requested)"
            " VALUES (?,?,?,?,0)"
            " ON CONFLICT(thread_id) DO UPDATE SET run_id=excluded.run_id, owner=excluded.owner,"
            " expires_at=excluded.expires_at, abort_requested=0",
            (thread_id, run_id, owner, now + ttl_s),
        )
        cursor = await db.execute(
            "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
            " VALUES (?,?,?,?,?,?)",
            (thread_id, run_id, "start", "AGENT", dumps({"agent_id": agent_id}), now),
        )
        await db.execute(
            "INSERT INTO runs(id, thread_id, resource_id, agent_id, owner, status, start_seq,"
            " started_at) VALUES (?,?,?,?,?,'running',?,?)",
            (run_id, thread_id, resource_id, agent_id, owner, cursor.lastrowid, now),
        )

    async def renew_lease(
        self, thread_id: str, run_id: str, owner: str, ttl_s: float
    ) -> tuple[bool, bool]:
        """Extend our lease. Returns (still ours, abort requested)."""
        async with self.transaction() as db:
            cursor = await db.execute(
                "UPDATE leases SET expires_at=? WHERE thread_id=? AND run_id=? AND owner=?",
                (time.time() + ttl_s, thread_id, run_id, owner),
            )
            if cursor.rowcount == 0:
                return False, False
            rows = await db.execute_fetchall(
                "SELECT abort_requested FROM leases WHERE thread_id=?", (thread_id,)
            )
        return True, bool(rows[0][0])

    async def abort_requested(self, thread_id: str, run_id: str) -> bool:
        row = await self.fetchone(
            "SELECT abort_requested FROM leases WHERE thread_id=? AND run_id=?",
            (thread_id, run_id),
        )
        return bool(row and row[0])

    def request_abort_sync(self, thread_id: str) -> str | None:
        """Flag the thread's live run for abort, from plain (non-async) code: the run's owner,
        in whichever process, sees the flag and stops. Returns the run id, or None."""
        with sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000) as db:
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            row = db.execute(
                "UPDATE leases SET abort_requested=1 WHERE thread_id=? AND expires_at>?"
                " RETURNING run_id",
                (thread_id, time.time()),
            ).fetchone()
        return None if row is None else row[0]

    async def reap_expired_lease(self, thread_id: str) -> bool:
        """End a run whose owner died. True if one was interrupted."""
        row = await self.fetchone("SELECT expires_at FROM leases WHERE thread_id=?", (thread_id,))
        if row is None or row[0] > time.time():
            return False
        async with self.transaction() as db:
            rows = await db.execute_fetchall(
                "SELECT run_id, expires_at FROM leases WHERE thread_id=?", (thread_id,)
            )
            if not rows or rows[0][1] > time.time():
                return False  # renewed, or reaped by someone else, meanwhile
            await self._interrupt_in(db, thread_id, rows[0][0])
        self._notify(thread_id)
        return True

    async def finish_run(
        self,
        thread_id: str,
        resource_id: str,
        run_id: str,
        *,
        owner: str,
        status: str,
        finish_reason: str | None,
        error: str | None = None,
        messages: Sequence[MessageIn] = (),
        events: Sequence[EventIn] = (),
        force: bool = False,
    ) -> FinishOutcome:
        """End the run and release the lease, atomically with its last messages and events —
        unless signals arrived for it meanwhile (then nothing is written: the run continues).
        ``force`` (abort, failure) ends it regardless; signals still pending then are kept in
        the thread's history as persisted (echoed before the run's last event), so nothing that
        was accepted is left in limbo. A queued message then starts the next run under the
        same lease."""
        events = list(events)
        async with self.transaction() as db:
            if not force and await self._count_pending_in(db, thread_id):
                return FinishOutcome(finished=False)
            await self._append_in(db, thread_id, resource_id, list(messages), events[:-1])
            if force:
                await self._persist_pending_in(db, thread_id, resource_id, run_id)
            await self._append_in(db, thread_id, resource_id, [], events[-1:])
            await db.execute(
                "UPDATE runs SET status=?, finish_reason=?, error=?, ended_at=? WHERE id=?",
                (status, finish_reason, error, time.time(), run_id),
            )
            next_run_id = await self._start_next_queued_in(db, thread_id, owner)
            if next_run_id is None:
                await db.execute(
                    "DELETE FROM leases WHERE thread_id=? AND run_id=?", (thread_id, run_id)
                )
        self._notify(thread_id)
        return FinishOutcome(finished=True, next_run_id=next_run_id)

    async def _persist_pending_in(
        self, db: Any, thread_id: str, resource_id: str, run_id: str
    ) -> None:
        rows = await db.execute_fetchall(
            "SELECT id, type, message, data FROM signals WHERE thread_id=? AND"
            " status='pending' ORDER BY seq",
            (thread_id,),
        )
        if not rows:
            return
        await db.execute(
            "UPDATE signals SET status='persisted', run_id=? WHERE thread_id=? AND"
            " status='pending'",
            (run_id, thread_id),
        )
        signals = [
            {"id": sid, "type": type_, "message": loads(message), "data": loads(data)}
            for sid, type_, message, data in rows
        ]
        await self._append_in(
            db,
            thread_id,
            resource_id,
            [signal_message(s, run_id) for s in signals],
            [
                EventIn(echo_type(s["type"]), s["data"], run_id, echo_source(s["type"]))
                for s in signals
            ],
        )

    async def _start_next_queued_in(self, db: Any, thread_id: str, owner: str) -> str | None:
        rows = await db.execute_fetchall(
            "SELECT id, run_id, resource_id FROM signals WHERE thread_id=? AND status='queued'"
            " ORDER BY seq LIMIT 1",
            (thread_id,),
        )
        if not rows:
            return None
        signal_id, run_id, resource_id = rows[0]
        ttl = await self._lease_ttl_in(db, thread_id)
        await db.execute("UPDATE signals SET status='pending' WHERE id=?", (signal_id,))
        await self._begin_run_in(db, thread_id, resource_id, run_id, owner, ttl, None)
        return run_id

    async def _lease_ttl_in(self, db: Any, thread_id: str) -> float:
        rows = await db.execute_fetchall(
            "SELECT expires_at FROM leases WHERE thread_id=?", (thread_id,)
        )
        return max(1.0, rows[0][0] - time.time()) if rows else 15.0

    # -- signals ------------------------------------------------------------------------------

    async def _count_pending_in(self, db: Any, thread_id: str) -> int:
        rows = await db.execute_fetchall(
            "SELECT COUNT(*) FROM signals WHERE thread_id=? AND status='pending'", (thread_id,)
        )
        return int(rows[0][0])

    async def route_signal(
        self,
        thread_id: str,
        resource_id: str,
        signal: SignalIn,
        *,
        if_active: str,
        if_idle: str,
        queue: bool = False,
        owner: str,
        ttl_s: float,
        agent_id: str | None = None,
        echo_when_idle: SignalIn | None = None,
    ) -> RouteResult:
        """Decide, atomically across processes, what happens to a signal:

        - live run: ``deliver`` (pending, taken by that run between steps), ``persist``,
          ``discard``; with ``queue`` it waits as ``queued`` and starts its own run later.
        - idle: ``wake`` (we take the lease: a new run, its ``start`` event, the signal pending
          for it), ``persist`` (stored, echoed as a tiny run with no model call), ``discard``.

        ``echo_when_idle`` is the signal as rendered for the idle branch (attributes differ).
        """
        async with self.transaction() as db:
            live = await self._live_lease_in(db, thread_id)
            if live is not None:
                result = await self._route_active_in(
                    db, thread_id, resource_id, signal, if_active, queue, live[0]
                )
            else:
                idle_signal = echo_when_idle or signal
                result = await self._route_idle_in(
                    db, thread_id, resource_id, idle_signal, if_idle, owner, ttl_s, agent_id
                )
        if result.action != "discard":
            self._notify(thread_id)
        return result

    async def _route_active_in(
        self,
        db: Any,
        thread_id: str,
        resource_id: str,
        signal: SignalIn,
        behavior: str,
        queue: bool,
        live_run_id: str,
    ) -> RouteResult:
        if queue:
            run_id = new_id()
            await self._insert_signal_in(db, thread_id, resource_id, signal, "queued", run_id)
            return RouteResult("deliver", run_id)
        if behavior == "deliver":
            await self._insert_signal_in(db, thread_id, resource_id, signal, "pending", live_run_id)
            return RouteResult("deliver", live_run_id)
        if behavior == "persist":
            await self._persist_in(db, thread_id, resource_id, signal, tiny_run=False)
            return RouteResult("persist")
        return RouteResult("discard")

    async def _route_idle_in(
        self,
        db: Any,
        thread_id: str,
        resource_id: str,
        signal: SignalIn,
        behavior: str,
        owner: str,
        ttl_s: float,
        agent_id: str | None,
    ) -> RouteResult:
        if behavior == "wake":
            await self._ensure_thread_in(db, thread_id, resource_id)
            run_id = new_id()
            await self._begin_run_in(db, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
            await self._insert_signal_in(db, thread_id, resource_id, signal, "pending", run_id)
            return RouteResult("wake", run_id)
        if behavior == "persist":
            await self._ensure_thread_in(db, thread_id, resource_id)
            await self._persist_in(db, thread_id, resource_id, signal, tiny_run=True)
            return RouteResult("persist")
        return RouteResult("discard")

    async def _insert_signal_in(
        self,
        db: Any,
        thread_id: str,
        resource_id: str,
        signal: SignalIn,
        status: str,
        run_id: str | None,
    ) -> None:
        await db.execute(
            "INSERT INTO signals(id, thread_id, resource_id, type, status, run_id, message, data,"
            " created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                signal.id,
                thread_id,
                resource_id,
                signal.type,
                status,
                run_id,
                dumps(signal.message),
                dumps(signal.data),
                time.time(),
            ),
        )

    async def _persist_in(
        self, db: Any, thread_id: str, resource_id: str, signal: SignalIn, *, tiny_run: bool
    ) -> None:
        """Store the signal in history (no model call). On an idle thread subscribers see it as
        a tiny run: start, the echo, finish."""
        await self._insert_signal_in(db, thread_id, resource_id, signal, "persisted", None)
        run_id = new_id() if tiny_run else None
        message = signal_message(
            {"id": signal.id, "type": signal.type, "message": signal.message, "data": signal.data},
            run_id,
        )
        events = [EventIn(echo_type(signal.type), signal.data, run_id, echo_source(signal.type))]
        if tiny_run:
            events.insert(0, EventIn("start", {"persisted": True}, run_id))
            events.append(EventIn("finish", {"finish_reason": "stop", "persisted": True}, run_id))
        await self._append_in(db, thread_id, resource_id, [message], events)

    async def claim_signals(
        self,
        thread_id: str,
        resource_id: str,
        run_id: str,
        *,
        messages_before: Sequence[MessageIn] = (),
        events_before: Sequence[EventIn] = (),
    ) -> list[dict[str, Any]]:
        """Take every pending signal of the thread (arrival order) into run ``run_id``: each
        becomes a stored user message and an echo in the log, after ``messages_before`` and
        ``events_before`` (the run's own output so far, so the log keeps the order the model
        saw). Returns ``[{"id", "type", "message", "data"}]``."""
        async with self.transaction() as db:
            await self._append_in(
                db, thread_id, resource_id, list(messages_before), list(events_before)
            )
            rows = await db.execute_fetchall(
                "SELECT id, type, message, data FROM signals WHERE thread_id=? AND"
                " status='pending' ORDER BY seq",
                (thread_id,),
            )
            taken = [
                {"id": sid, "type": type_, "message": loads(message), "data": loads(data)}
                for sid, type_, message, data in rows
            ]
            if taken:
                await db.execute(
                    "UPDATE signals SET status='delivered', run_id=?, delivered_at=?"
                    " WHERE thread_id=? AND status='pending'",
                    (run_id, time.time(), thread_id),
                )
                await self._append_in(
                    db,
                    thread_id,
                    resource_id,
                    [signal_message(s, run_id) for s in taken],
                    [
                        EventIn(echo_type(s["type"]), s["data"], run_id, echo_source(s["type"]))
                        for s in taken
                    ],
                )
        if taken or messages_before or events_before:
            self._notify(thread_id)
        return taken

    async def set_run_scores(self, run_id: str, scores: dict[str, Any]) -> None:
        async with self.transaction() as db:
            await db.execute("UPDATE runs SET scores=? WHERE id=?", (dumps(scores), run_id))

    async def has_pending_signals(self, thread_id: str) -> bool:
        row = await self.fetchone(
            "SELECT 1 FROM signals WHERE thread_id=? AND status='pending' LIMIT 1", (thread_id,)
        )
        return row is not None


def signal_message(signal: dict[str, Any], run_id: str | None) -> MessageIn:
    """The stored user message of a delivered or persisted signal."""
    return MessageIn(
        role="user",
        content=signal["message"].get("content"),
        run_id=run_id,
        metadata={
            "signal_id": signal["id"],
            "signal_type": signal["type"],
            "signal": signal["data"],
        },
    )


def echo_source(signal_type: str) -> str:
    """The ``from`` of a signal's echo: people send user messages, the rest is the system's."""
    return "USER" if signal_type == "user" else "SYSTEM"


def echo_type(signal_type: str) -> str:
    return "data-user-message" if signal_type == "user" else "data-signal"


async def _enable_wal(db: Any) -> None:
    """Switching a new file to WAL needs an exclusive lock that SQLite does not wait for
    (busy_timeout does not apply): processes opening a fresh store at the same moment could
    fail with "database is locked". Retry until the busy timeout instead."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.005)


async def _run_script(db: Any, script: str) -> None:
    """Run a migration's statements one by one inside the open transaction
    (``executescript`` would COMMIT first)."""
    for statement in script.split(";"):
        if statement.strip():
            await db.execute(statement)


def _thread(row: Sequence[Any]) -> ThreadRecord:
    return ThreadRecord(
        id=row[0],
        resource_id=row[1],
        title=row[2],
        metadata=loads(row[3]) or {},
        created_at=to_datetime(row[4]),
        updated_at=to_datetime(row[5]),
    )


def _message(row: Sequence[Any]) -> MessageRecord:
    return MessageRecord(
        seq=row[0],
        id=row[1],
        thread_id=row[2],
        resource_id=row[3],
        role=row[4],
        content=loads(row[5]),
        run_id=row[6],
        metadata=loads(row[7]) or {},
        created_at=to_datetime(row[8]),
    )


def _run(row: Sequence[Any]) -> RunRecord:
    return RunRecord(
        id=row[0],
        thread_id=row[1],
        resource_id=row[2],
        agent_id=row[3],
        owner=row[4],
        status=row[5],
        start_seq=row[6],
        finish_reason=row[7],
        error=row[8],
        scores=loads(row[9]),
        started_at=to_datetime(row[10]),
        ended_at=to_datetime(row[11]),
    )
