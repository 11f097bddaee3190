"""A thread whole, out of a store and into another (either engine): ``export_thread`` reads it
as a :class:`~tui_agent.store.records.ThreadArchive` (rows as stored, in order, without the
store's own row numbers); ``import_thread`` writes one in one transaction, refusing a thread
the store has unless told to replace it (then the old thread goes first, in the same
transaction, its every row: messages and their search index, events, runs, lease, signals,
lanes, inbox). What is read back from an imported thread is what was exported
(tests/test_export_import.py, on SQLite and PostgreSQL; the contract suite)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from tui_agent.errors import StoreError
from tui_agent.store.codec import dumps, loads
from tui_agent.store.reads import RESUME
from tui_agent.store.records import (
    ArchivedLane,
    ArchivedLaneVersion,
    ArchivedMessage,
    ArchivedNotification,
    ArchivedRun,
    ArchivedSignal,
    ArchivedThread,
    ThreadArchive,
)
from tui_agent.store.roles import Database, Session, first
from tui_agent.store.rows import NOTIFICATION_COLUMNS, THREAD_COLUMNS, at, notification_of

_MESSAGES: Final = (
    "SELECT id, role, content, run_id, metadata, signal_id, created_at FROM messages"
    " WHERE thread_id=? ORDER BY seq"
)
_SIGNALS: Final = (
    "SELECT s.id, s.type, s.status, s.run_id, s.message, {signal_data}, s.created_at,"
    " s.delivered_at FROM signals s WHERE s.thread_id=? AND s.type!=? ORDER BY s.seq"
)
_RUNS: Final = (
    "SELECT id, agent_id, owner, status, finish_reason, error, scores, started_at, ended_at"
    " FROM runs WHERE thread_id=? ORDER BY started_at, id"
)
_LANES: Final = (
    "SELECT lane_id, version, mode, cache_key, value, updated_at FROM state_lanes"
    " WHERE thread_id=? ORDER BY lane_id"
)
_HISTORY: Final = (
    "SELECT lane_id, version, mode, cache_key, value, delta, contents, updated_at"
    " FROM state_lane_history WHERE thread_id=? ORDER BY lane_id, version"
)
_NOTIFICATIONS: Final = (
    f"SELECT {', '.join(NOTIFICATION_COLUMNS)} FROM notifications WHERE thread_id=?"
    " ORDER BY created_at, {rownum}"
)
# Where a dialect keeps large signal data out of line (SQLite): deleted first, found through
# the signals it belongs to.
_SPILLED_ROWS: Final = (
    "DELETE FROM signal_data WHERE id IN (SELECT id FROM signals WHERE thread_id=?)"
)
# Every table holding a thread's rows.
_THREAD_ROWS: Final = (
    "DELETE FROM messages WHERE thread_id=?",
    "DELETE FROM events WHERE thread_id=?",
    "DELETE FROM runs WHERE thread_id=?",
    "DELETE FROM leases WHERE thread_id=?",
    "DELETE FROM signals WHERE thread_id=?",
    "DELETE FROM state_lanes WHERE thread_id=?",
    "DELETE FROM state_lane_history WHERE thread_id=?",
    "DELETE FROM notifications WHERE thread_id=?",
    "DELETE FROM threads WHERE id=?",
)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _at(value: float | None) -> datetime | None:
    return None if value is None else at(value)


class ThreadTransfer:
    """A thread whole, read out and written in (see the module docstring)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def export_thread(self, thread_id: str) -> ThreadArchive | None:
        """The thread whole as stored (None: no such thread)."""
        db = self.database
        row = await first(db, f"SELECT {THREAD_COLUMNS} FROM threads WHERE id=?", (thread_id,))
        if row is None:
            return None
        thread = ArchivedThread(id=row[0], resource_id=row[1], title=row[2],
                                metadata=loads(row[3]) or {}, created_at=at(row[4]),
                                updated_at=at(row[5]))
        messages = [
            ArchivedMessage(id=r[0], role=r[1], content=loads(r[2]), run_id=r[3],
                            metadata=loads(r[4]) or {}, signal_id=r[5], created_at=at(r[6]))
            for r in await db.rows(_MESSAGES, (thread_id,))
        ]
        signals = [
            ArchivedSignal(id=r[0], type=r[1], status=r[2], run_id=r[3], message=loads(r[4]),
                           data=loads(r[5]), created_at=at(r[6]), delivered_at=_at(r[7]))
            for r in await db.rows(_SIGNALS, (thread_id, RESUME))
        ]
        runs = [
            ArchivedRun(id=r[0], agent_id=r[1], owner=r[2], status=r[3], finish_reason=r[4],
                        error=r[5], scores=loads(r[6]), started_at=at(r[7]), ended_at=_at(r[8]))
            for r in await db.rows(_RUNS, (thread_id,))
        ]
        return ThreadArchive(
            thread=thread, messages=messages, signals=signals, runs=runs,
            state_lanes=await self._lanes(thread_id),
            notifications=[ArchivedNotification(**notification_of(r).model_dump())
                           for r in await db.rows(_NOTIFICATIONS, (thread_id,))],
        )

    async def _lanes(self, thread_id: str) -> list[ArchivedLane]:
        history: dict[str, list[ArchivedLaneVersion]] = {}
        for r in await self.database.rows(_HISTORY, (thread_id,)):
            history.setdefault(r[0], []).append(ArchivedLaneVersion(
                version=r[1], mode=r[2], cache_key=r[3], value=loads(r[4]), delta=loads(r[5]),
                contents=r[6], updated_at=at(r[7])))
        return [
            ArchivedLane(id=r[0], version=r[1], mode=r[2], cache_key=r[3], value=loads(r[4]),
                         updated_at=at(r[5]), history=history.get(r[0], []))
            for r in await self.database.rows(_LANES, (thread_id,))
        ]

    async def import_thread(self, archive: ThreadArchive, *, replace: bool = False) -> None:
        """Write ``archive`` in one transaction. A thread of that id already in the store is
        refused (``StoreError``, nothing written) unless ``replace``: then it is deleted whole
        first, in the same transaction; a thread with a live run is never replaced."""
        thread_id = archive.thread.id
        dialect = self.database.dialect
        async with self.database.transaction() as session:
            if dialect.lock_key is not None:
                await session.rows(dialect.sql(dialect.lock_key), (thread_id,))
            found = await session.rows(dialect.sql("SELECT 1 FROM threads WHERE id=?"),
                                       (thread_id,))
            if found and not replace:
                raise StoreError(f"thread {thread_id!r} exists already (replace it to import)")
            if found:
                await _delete_thread(session, database=self.database, thread_id=thread_id)
            await _write(session, self.database, archive)


async def _delete_thread(session: Session, *, database: Database, thread_id: str) -> None:
    """Every row of the thread, unless a run is live on it (``StoreError``)."""
    d = database.dialect
    live = await session.rows(d.sql(
        "SELECT run_id FROM leases WHERE thread_id=? AND expires_at > {now}"),
        (thread_id, *d.now_args()))
    if live:
        raise StoreError(f"thread {thread_id!r} has a live run: it is not replaced")
    spilled = (_SPILLED_ROWS,) if d.spill_chars is not None else ()
    for statement in (*spilled, *_THREAD_ROWS):
        await session.run(d.sql(statement), (thread_id,))


async def _write(session: Session, database: Database, archive: ThreadArchive) -> None:
    d = database.dialect
    t = archive.thread
    tid, rid = t.id, t.resource_id
    await session.run(d.sql(
        "INSERT INTO threads(id, resource_id, title, metadata, created_at, updated_at)"
        " VALUES (?,?,?,?,?,?)"),
        (tid, rid, t.title, dumps(t.metadata), t.created_at.timestamp(),
         t.updated_at.timestamp()))
    # Signals before messages: a signal's history message is indexed from its signal's row.
    await _many(session, d.sql(
        "INSERT INTO signals(id, thread_id, resource_id, type, status, run_id, message, data,"
        " created_at, delivered_at) VALUES (?,?,?,?,?,?,?,?,?,?)"),
        [(s.id, tid, rid, s.type, s.status, s.run_id, dumps(s.message), dumps(s.data),
          s.created_at.timestamp(), _ts(s.delivered_at)) for s in archive.signals])
    await _many(session, d.sql(
        "INSERT INTO messages(id, thread_id, resource_id, role, content, run_id, metadata,"
        " created_at, signal_id) VALUES (?,?,?,?,?,?,?,?,?)"),
        [(m.id, tid, rid, m.role, dumps(m.content), m.run_id, dumps(m.metadata),
          m.created_at.timestamp(), m.signal_id) for m in archive.messages])
    await _many(session, d.sql(
        "INSERT INTO runs(id, thread_id, resource_id, agent_id, owner, status, finish_reason,"
        " error, scores, started_at, ended_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)"),
        [(r.id, tid, rid, r.agent_id, r.owner, r.status, r.finish_reason, r.error,
          None if r.scores is None else dumps(r.scores), r.started_at.timestamp(),
          _ts(r.ended_at)) for r in archive.runs])
    await _many(session, d.sql(
        "INSERT INTO state_lanes(thread_id, lane_id, version, mode, cache_key, value,"
        " updated_at) VALUES (?,?,?,?,?,?,?)"),
        [(tid, lane.id, lane.version, lane.mode, lane.cache_key, dumps(lane.value),
          lane.updated_at.timestamp()) for lane in archive.state_lanes])
    await _many(session, d.sql(
        "INSERT INTO state_lane_history(thread_id, lane_id, version, mode, cache_key, value,"
        " delta, contents, updated_at) VALUES (?,?,?,?,?,?,?,?,?)"),
        [(tid, lane.id, v.version, v.mode, v.cache_key, dumps(v.value),
          None if v.delta is None else dumps(v.delta), v.contents, v.updated_at.timestamp())
         for lane in archive.state_lanes for v in lane.history])
    columns = ", ".join(NOTIFICATION_COLUMNS)
    marks = ",".join("?" * len(NOTIFICATION_COLUMNS))
    await _many(session, d.sql(f"INSERT INTO notifications({columns}) VALUES ({marks})"),
                [_notification_row(n) for n in archive.notifications])


def _notification_row(record: ArchivedNotification) -> tuple[Any, ...]:
    values: list[Any] = []
    for name in NOTIFICATION_COLUMNS:
        value = getattr(record, name)
        if name in ("payload", "attributes", "metadata"):
            value = None if value is None else dumps(value)
        elif isinstance(value, datetime):
            value = value.timestamp()
        values.append(value)
    return tuple(values)


async def _many(session: Session, sql: str, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        await session.run_many(sql, rows)
