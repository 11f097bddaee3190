"""The reads of a thread's log, its runs, leases and signals, on either store, written once
(with the few small writes that are one statement: run scores, agent overrides).

What each store does differently lives with that store: how a write transaction runs
(SQLite's group commit in ``sqlite.py``, PostgreSQL's per-thread order in ``postgres.py``),
and the dialect's spelling (``dialect.py``: whose clock a lease lives by, where a large
signal's data is kept). Checked by ``tests/test_store_contract.py`` on both stores.
"""

from __future__ import annotations

import time
from typing import Any, Final

from tui_agent.store.codec import dumps, loads
from tui_agent.store.records import (
    ActiveRun,
    MessageRecord,
    RunRecord,
    ThreadRecord,
    event_chunk,
    message_record,
)
from tui_agent.store.roles import Database, first
from tui_agent.store.rows import RUN_COLUMNS, THREAD_COLUMNS, at, run_of, thread_of

# A marker a run cancelled at exit leaves pending when it had taken signals it never answered:
# it wakes the rescue like a signal, but is taken without storing anything, so the rescuing
# run answers what history already holds. Not a valid signal type for callers.
RESUME: Final = "__resume__"

# A message row, with the data and model message of the signal it refers to (NULL for any
# other message): see records.message_record.
MESSAGES: Final = (
    "SELECT m.seq, m.id, m.thread_id, m.resource_id, m.role, m.content, m.run_id, m.metadata,"
    " m.created_at, {signal_data}, s.message FROM messages m LEFT JOIN signals s"
    " ON s.id=m.signal_id WHERE m.thread_id=?"
)
# Flag the thread's live run for abort (a statement of its own: request_abort_sync runs it on a
# connection of its own, from plain code).
FLAG_ABORT: Final = (
    "UPDATE leases SET abort_requested=true WHERE thread_id=? AND expires_at > {now}"
    " RETURNING run_id"
)


# A lease whose run still holds its thread (inside a NOT EXISTS on leases ``l``): live, or
# held by the run's wait for an answer to a tool call (migration 6, store/approvals.py).
_HELD: Final = (
    "AND (l.expires_at > {now} OR EXISTS (SELECT 1 FROM tool_approvals a"
    " WHERE a.run_id=l.run_id AND a.taken_by IS NULL))"
)
# The threads that signals wait on (pending or queued), one row each (``waiting.thread_id``; a
# NULL row ends each status's walk): a loose scan of ``signals_by_status`` that skips from one
# thread to the next, so a look costs an index probe per thread that signals wait on, not one
# per waiting signal (thousands may be queued behind one run, and a watching process looks at
# every commit of another).
_WAITING_THREADS: Final = (
    "WITH RECURSIVE waiting(status, thread_id) AS ("
    "SELECT CAST('pending' AS TEXT), (SELECT MIN(thread_id) FROM signals WHERE status='pending')"
    " UNION ALL"
    " SELECT CAST('queued' AS TEXT), (SELECT MIN(thread_id) FROM signals WHERE status='queued')"
    " UNION ALL"
    " SELECT w.status, (SELECT MIN(s.thread_id) FROM signals s WHERE s.status=w.status"
    " AND s.thread_id > w.thread_id) FROM waiting w WHERE w.thread_id IS NOT NULL) "
)
_STRANDED: Final = (
    "FROM waiting w WHERE w.thread_id IS NOT NULL"
    f" AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.thread_id=w.thread_id {_HELD})"
)
# The lease ``l``'s run was answered on every call it waits on and has not taken the answers:
# it goes on, in its owner or (its owner dead) in whoever takes it over (a rescue pass).
_ANSWERED: Final = (
    "SELECT 1 FROM tool_approvals a WHERE a.run_id=l.run_id AND a.taken_by IS NULL"
    " AND NOT EXISTS (SELECT 1 FROM tool_approvals p WHERE p.run_id=l.run_id"
    " AND p.status='pending')"
)


class LogReads:
    """Threads, messages and the event log, read."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        row = await first(
            self.database, f"SELECT {THREAD_COLUMNS} FROM threads WHERE id=?", (thread_id,)
        )
        return None if row is None else thread_of(row)

    async def list_threads(self, resource_id: str | None = None) -> list[ThreadRecord]:
        """Every thread (of ``resource_id``), most recently updated first."""
        if resource_id is None:
            found = await self.database.rows(
                f"SELECT {THREAD_COLUMNS} FROM threads ORDER BY updated_at DESC"
            )
        else:
            found = await self.database.rows(
                f"SELECT {THREAD_COLUMNS} FROM threads WHERE resource_id=?"
                " ORDER BY updated_at DESC",
                (resource_id,),
            )
        return [thread_of(row) for row in found]

    async def list_messages(
        self, thread_id: str, *, limit: int = 50, before: str | None = None
    ) -> list[MessageRecord]:
        """The ``limit`` messages just older than message ``before`` (or the newest), oldest
        first."""
        if before is None:
            found = await self.database.rows(
                f"{MESSAGES} ORDER BY m.seq DESC LIMIT ?", (thread_id, limit)
            )
        else:
            found = await self.database.rows(
                f"{MESSAGES} AND m.seq < (SELECT seq FROM messages WHERE id=?)"
                " ORDER BY m.seq DESC LIMIT ?",
                (thread_id, before, limit),
            )
        return [message_record(row) for row in reversed(found)]

    async def read_events(
        self, thread_id: str, after_seq: int, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Stream chunks with ``seq > after_seq``, in ``seq`` order."""
        # A signal's echo refers to the signal's row: its payload is the row's data. A stored
        # message's echo refers to the message: its contents are the message's content.
        found = await self.database.rows(
            "SELECT e.seq, e.run_id, e.type, e.source, COALESCE({signal_data}, e.payload),"
            " e.created_at, m.content FROM events e LEFT JOIN signals s ON s.id=e.signal_id"
            " LEFT JOIN messages m ON m.id=e.message_id"
            " WHERE e.thread_id=? AND e.seq>? ORDER BY e.seq LIMIT ?",
            (thread_id, after_seq, limit),
        )
        return [event_chunk(row) for row in found]

    async def last_event_seq(self, thread_id: str) -> int:
        """The thread's highest ``seq`` (0 for an empty log)."""
        row = await first(
            self.database, "SELECT MAX(seq) FROM events WHERE thread_id=?", (thread_id,)
        )
        return int(row[0] or 0) if row is not None else 0

    async def thread_activity(self) -> dict[str, tuple[int, bool]]:
        """Every thread's message count and whether a run is live on it (an unexpired lease)."""
        counts = await self.database.rows(
            "SELECT thread_id, COUNT(*) FROM messages GROUP BY thread_id"
        )
        live = await self.database.rows(
            "SELECT thread_id FROM leases WHERE expires_at > {now}",
            self.database.dialect.now_args(),
        )
        live_ids = {str(row[0]) for row in live}
        activity = {str(row[0]): (int(row[1]), row[0] in live_ids) for row in counts}
        for thread_id in live_ids - activity.keys():
            activity[thread_id] = (0, True)
        return activity

    async def thread_usage(self, thread_id: str) -> dict[str, int]:
        """Tokens of every ended run on the thread, summed from the runs' end events."""
        dialect = self.database.dialect
        row = await first(
            self.database,
            f"SELECT {dialect.usage('input_tokens')}, {dialect.usage('output_tokens')}"
            " FROM events WHERE thread_id=? AND type IN ('finish', 'abort', 'error')",
            (thread_id,),
        )
        assert row is not None  # an aggregate always has its row
        return {"input_tokens": int(row[0]), "output_tokens": int(row[1])}


class RunReads:
    """Runs, leases and waiting signals, read; and the small writes of a run's scores and an
    agent's overrides."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def active_run(self, thread_id: str) -> ActiveRun | None:
        """The thread's live run (a lease that has not expired), if any."""
        row = await first(
            self.database,
            "SELECT l.run_id, l.owner, r.start_seq, l.expires_at, l.abort_requested,"
            " l.expires_at > {now} FROM leases l LEFT JOIN runs r ON r.id=l.run_id"
            " WHERE l.thread_id=?",
            (*self.database.dialect.now_args(), thread_id),
        )
        if row is None or not row[5]:
            return None
        return ActiveRun(
            run_id=row[0], owner=row[1], start_seq=row[2], expires_at=at(row[3]),
            abort_requested=bool(row[4]),
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await first(
            self.database, f"SELECT {RUN_COLUMNS} FROM runs WHERE id=?", (run_id,)
        )
        return None if row is None else run_of(row)

    async def list_runs(self, thread_id: str, limit: int = 20) -> list[RunRecord]:
        """The thread's runs, newest first."""
        found = await self.database.rows(
            f"SELECT {RUN_COLUMNS} FROM runs WHERE thread_id=? ORDER BY started_at DESC"
            " LIMIT ?",
            (thread_id, limit),
        )
        return [run_of(row) for row in found]

    async def abort_requested(self, thread_id: str, run_id: str) -> bool:
        row = await first(
            self.database,
            "SELECT abort_requested FROM leases WHERE thread_id=? AND run_id=?",
            (thread_id, run_id),
        )
        return bool(row and row[0])

    async def lease_expired(self, thread_id: str) -> bool:
        """Whether the thread's lease has run out (False: live, or no lease)."""
        row = await first(
            self.database,
            "SELECT expires_at <= {now} FROM leases WHERE thread_id=?",
            (*self.database.dialect.now_args(), thread_id),
        )
        return bool(row and row[0])

    async def stranded_threads(self) -> list[str]:
        """Threads with signals waiting (pending or queued) and no live lease: one read, a
        probe of the status index per thread that signals wait on (``_WAITING_THREADS``)."""
        found = await self.database.rows(
            f"{_WAITING_THREADS}SELECT DISTINCT w.thread_id {_STRANDED}",
            self.database.dialect.now_args(),
        )
        return [row[0] for row in found]

    async def rescue_outlook(self) -> tuple[bool, float | None]:
        """(whether signals wait with no live lease now, seconds until the first live lease
        that signals wait behind runs out — None if there is none): what the rescuer needs to
        know when to look again, in one read: a probe of the status index per thread that
        signals wait on (``_WAITING_THREADS``), one per lease. The seconds are by the store's
        clock (the server's, on PostgreSQL)."""
        now = self.database.dialect.now_args()
        found = await self.database.rows(
            f"{_WAITING_THREADS}SELECT EXISTS (SELECT 1 {_STRANDED}),"
            " (SELECT MIN(l.expires_at) FROM leases l WHERE l.expires_at > {now} AND (EXISTS"
            " (SELECT 1 FROM signals s WHERE s.thread_id=l.thread_id"
            f" AND s.status IN ('pending', 'queued')) OR EXISTS ({_ANSWERED}))) - {{now}},"
            " EXISTS (SELECT 1 FROM leases l WHERE l.expires_at <= {now}"
            f" AND EXISTS ({_ANSWERED}))",
            (*now, *now, *now, *now),
        )
        stranded, due_in, resumable = found[0]
        return bool(stranded) or bool(resumable), None if due_in is None else float(due_in)

    async def has_pending_signals(self, thread_id: str) -> bool:
        row = await first(
            self.database,
            "SELECT 1 FROM signals WHERE thread_id=? AND status='pending' LIMIT 1",
            (thread_id,),
        )
        return row is not None

    async def waiting_signals(self, thread_id: str) -> list[dict[str, Any]]:
        """Signals accepted but not yet taken by a run, oldest first: ``pending`` ones wait for
        the live run's next step boundary, ``queued`` ones for their own run."""
        found = await self.database.rows(
            "SELECT s.id, s.type, s.status, s.run_id, {signal_data}, s.created_at"
            " FROM signals s WHERE s.thread_id=? AND s.status IN ('pending', 'queued')"
            " AND s.type!=? ORDER BY s.seq",
            (thread_id, RESUME),
        )
        return [
            {"id": row[0], "type": row[1], "status": row[2], "run_id": row[3],
             "data": loads(row[4]), "created_at": at(row[5])}
            for row in found
        ]

    async def set_run_scores(self, run_id: str, scores: dict[str, Any]) -> None:
        async with self.database.transaction() as session:
            await session.run(self.database.dialect.sql("UPDATE runs SET scores=? WHERE id=?"),
                              (dumps(scores), run_id))

    async def get_agent_overrides(self, agent_id: str) -> dict[str, Any] | None:
        """The editor's overrides stored for ``agent_id`` (None: none stored)."""
        row = await first(
            self.database, "SELECT overrides FROM agent_overrides WHERE agent_id=?", (agent_id,)
        )
        return None if row is None else loads(row[0])

    async def set_agent_overrides(self, agent_id: str, overrides: dict[str, Any] | None) -> None:
        """Store (replace) the editor's overrides of ``agent_id``; None removes them."""
        dialect = self.database.dialect
        async with self.database.transaction() as session:
            if overrides is None:
                await session.run(dialect.sql("DELETE FROM agent_overrides WHERE agent_id=?"),
                                  (agent_id,))
                return
            await session.run(dialect.sql(
                "INSERT INTO agent_overrides(agent_id, overrides, updated_at) VALUES (?,?,?)"
                " ON CONFLICT (agent_id) DO UPDATE SET overrides=excluded.overrides,"
                " updated_at=excluded.updated_at"), (agent_id, dumps(overrides), time.time()))
