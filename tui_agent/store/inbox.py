"""The notification inbox, on either store: the ``InboxStore`` role (``contract.py``), written
once.

Every write is one transaction, so a claim (``claimed_by``, ``claim_expires_at``) taken here
holds across processes: each due record is claimed by one dispatcher (SQLite: the claim's
``BEGIN IMMEDIATE`` excludes every other writer; PostgreSQL: the due rows are locked ``FOR
UPDATE SKIP LOCKED``, so concurrent dispatchers split them), and every outcome is written only
where its claim still stands. Checked by ``tests/test_notifications.py``,
``tests/test_dispatcher.py`` and ``tests/test_store_contract.py`` on both stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, Protocol

import tui_agent.store.writes as writes
from tui_agent.errors import ConfigError, SignalError
from tui_agent.store.codec import dumps, new_id
from tui_agent.store.contract import NotificationCursor
from tui_agent.store.dialect import Dialect
from tui_agent.store.records import NOTIFICATION_STATUSES, NotificationRecord
from tui_agent.store.roles import Args, Database, Row, first
from tui_agent.store.rows import NOTIFICATION_COLUMNS, notification_of
from tui_agent.store.statements import Statement, Txn

if TYPE_CHECKING:
    from tui_agent.store.log_writes import Writer

_ALL: Final = ", ".join(NOTIFICATION_COLUMNS)
_SELECT: Final = f"SELECT {_ALL} FROM notifications"
_CHANGED: Final = "{greatest}(updated_at, coalesce(summarized_at, 0))"  # a record's last change
_SLICE: Final = 200  # records built between two yields to the event loop
_RELEASE: Final = "claimed_by=NULL, claim_expires_at=NULL"
_UNCLAIMED: Final = "(claimed_by IS NULL OR claim_expires_at<?)"

_MERGE: Final = (
    f"{_SELECT} WHERE thread_id=? AND status='pending' AND source=? AND kind=?"
    " AND ((dedupe_key IS NOT NULL AND dedupe_key=?) OR (coalesce_key IS NOT NULL AND"
    f" coalesce_key=?)) AND {_UNCLAIMED} ORDER BY updated_at DESC LIMIT 1"
)
_INSERT: Final = (
    "INSERT INTO notifications(id, thread_id, resource_id, source, kind, priority, status,"
    " summary, payload, dedupe_key, coalesce_key, coalesced_count, attributes, metadata,"
    " created_at, updated_at, discarded_at, deliver_at, summary_at, claimed_by,"
    " claim_expires_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_MERGE_UPDATE: Final = (
    "UPDATE notifications SET summary=?, priority=?, payload=?,"
    " coalesced_count=coalesced_count+1, attributes=?, metadata=?, dedupe_key=?, coalesce_key=?,"
    " updated_at=?, status=?, discarded_at=?, deliver_at=?, summary_at=?, claimed_by=?,"
    f" claim_expires_at=? WHERE id=? AND status='pending' AND {_UNCLAIMED}"
)
# A record that was summarised (or is waiting for its digest) and has ``deliver_at`` waits for
# its thread to be idle: "a summary now, the full notification once idle". A live lease =
# active. Its arguments, in order: now (claims and leases live by it), due (the dispatcher's
# clock) twice, now again.
_DUE: Final = """
  n.status='pending' AND (n.claimed_by IS NULL OR n.claim_expires_at<?)
    AND (
      (n.summary_at IS NOT NULL AND n.summary_at<=?)
      OR (n.deliver_at IS NOT NULL AND n.deliver_at<=? AND (
            (n.summary_at IS NULL AND n.summarized_at IS NULL)
            OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.thread_id=n.thread_id
                           AND l.expires_at>?)))
    )
"""
_CLAIM_DUE: Final = f"""
UPDATE notifications SET claimed_by=?, claim_expires_at=?
WHERE id IN (
  SELECT n.id FROM notifications n WHERE {_DUE}
  ORDER BY n.created_at, n.{{rownum}} LIMIT ?{{skip_locked}}
)
RETURNING {{rownum}}, {_ALL}
"""
# Asked first, as a read: an idle pass takes no write lock and commits nothing (a commit every
# second would wake every process's change poller and every watcher of "any commit").
_ANY_DUE: Final = f"SELECT 1 FROM notifications n WHERE {_DUE} LIMIT 1"
_CLAIM_SUMMARIES: Final = (
    "UPDATE notifications SET claimed_by=?, claim_expires_at=? WHERE id IN (SELECT id FROM"
    " notifications WHERE thread_id=? AND status='pending' AND summary_at IS NOT NULL AND"
    f" summary_at<=? AND {_UNCLAIMED}{{skip_locked}})"
)
_DELIVERED: Final = (
    "UPDATE notifications SET status=CASE WHEN status='pending' THEN 'delivered' ELSE status"
    " END, delivered_at=?, updated_at=?, deliver_at=NULL, summary_at=NULL,"
    f" delivery_attempts=delivery_attempts+1, {_RELEASE} WHERE id=? AND claimed_by=?"
)
_FAILED: Final = (
    "UPDATE notifications SET status=CASE WHEN status='pending' THEN 'failed' ELSE status END,"
    f" failed_at=?, updated_at=?, delivery_attempts=?, last_delivery_error=?, {_RELEASE}"
    " WHERE id=?"
)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _filters(thread_id: str | None, status: str | None) -> tuple[list[str], list[object]]:
    clauses: list[str] = []
    args: list[object] = []
    if thread_id is not None:
        clauses.append("thread_id=?")
        args.append(thread_id)
    if status is not None:
        if status not in NOTIFICATION_STATUSES:
            raise ConfigError(
                f"unknown notification status {status!r}; statuses: {NOTIFICATION_STATUSES}"
            )
        clauses.append("status=?")
        args.append(status)
    return clauses, args


def _where(clauses: list[str]) -> str:
    return " WHERE " + " AND ".join(clauses) if clauses else ""


class Inbox:
    """The inbox methods of the store contract, on a store's :class:`Database` (reads, and
    the writes that read as they go) and ``Writer`` (the writes that need no answer between
    statements: on SQLite they join the next group commit, so a burst of notifications shares
    a few transactions)."""

    def __init__(self, database: Database, writer: Writer) -> None:
        self.database = database
        self.writer = writer

    async def get_notification(self, notification_id: str) -> NotificationRecord | None:
        row = await first(self.database, f"{_SELECT} WHERE id=?", (notification_id,))
        return None if row is None else notification_of(row)

    async def list_notifications(
        self, *, thread_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        """Newest change (``updated_at``) first; ties: the later created first."""
        clauses, args = _filters(thread_id, status)
        found = await self.database.rows(
            f"{_SELECT}{_where(clauses)} ORDER BY updated_at DESC, {{rownum}} DESC LIMIT ?",
            (*args, limit),
        )
        return [notification_of(row) for row in found]

    async def search_notifications(
        self, query: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        """Records whose summary, kind or source contains ``query`` literally, ASCII case
        ignored; ordered as :meth:`list_notifications`."""
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses, args = _filters(thread_id, None)
        clauses.append("(summary {ilike} ? ESCAPE '\\' OR kind {ilike} ? ESCAPE '\\'"
                       " OR source {ilike} ? ESCAPE '\\')")
        found = await self.database.rows(
            f"{_SELECT}{_where(clauses)} ORDER BY updated_at DESC, {{rownum}} DESC LIMIT ?",
            (*args, pattern, pattern, pattern, limit),
        )
        return [notification_of(row) for row in found]

    async def set_notification_status(
        self, notification_id: str, status: str, now: float
    ) -> bool:
        """Set ``status`` and its ``<status>_at`` and ``updated_at`` to ``now``, clearing the
        schedule. False for an unknown id."""
        if status not in NOTIFICATION_STATUSES:  # it names a column: never from outside
            raise ConfigError(f"unknown notification status {status!r}")
        return bool(await self._write(
            f"UPDATE notifications SET status=?, {status}_at=?, updated_at=?,"
            " summary_at=NULL, deliver_at=NULL WHERE id=?",
            (status, now, now, notification_id),
        ))

    async def notification_changes(
        self, after: NotificationCursor | None, limit: int
    ) -> tuple[list[NotificationRecord], NotificationCursor]:
        """The cursor is (last change, insertion order). Rows become records a slice at a time,
        with the event loop free between slices."""
        changed, rownum = after if after is not None else (-1.0, -1)
        found = await self.database.rows(
            f"SELECT {{rownum}}, {_CHANGED}, {_ALL} FROM notifications"
            f" WHERE {_CHANGED} > ? OR ({_CHANGED} = ? AND {{rownum}} > ?)"
            f" ORDER BY {_CHANGED}, {{rownum}} LIMIT ?",
            (float(changed), float(changed), int(rownum), limit),
        )
        records: list[NotificationRecord] = []
        for start in range(0, len(found), _SLICE):  # a big read never holds the loop long
            if start:
                await asyncio.sleep(0)
            records.extend(notification_of(row[2:]) for row in found[start:start + _SLICE])
        cursor = (float(found[-1][1]), int(found[-1][0])) if found else (changed, rownum)
        return records, cursor

    async def find_notification_to_merge(
        self, thread_id: str, *, source: str, kind: str, dedupe_key: str | None,
        coalesce_key: str | None, now: float,
    ) -> NotificationRecord | None:
        """The newest pending, unclaimed (or claim expired) record of the thread with this
        source and kind and the same dedupe key or coalesce key."""
        row = await first(
            self.database, _MERGE, (thread_id, source, kind, dedupe_key, coalesce_key, now)
        )
        return None if row is None else notification_of(row)

    async def save_notification(
        self, record: NotificationRecord, *, merge: bool, now: float,
        claim_token: str | None, claim_expires_at: float | None,
    ) -> NotificationRecord:
        """Store ``record`` in one transaction, merged into the stored one of its id if that
        is still pending and unclaimed (see the contract); the record as it was stored."""
        return await self.writer.run_write(
            None, _save, record, merge, now, claim_token, claim_expires_at)

    async def claim_due_summaries(
        self, thread_id: str, token: str, *, now: float, expires_at: float
    ) -> None:
        """Claim the thread's pending, unclaimed records whose digest is due at ``now``."""
        await self._write(_CLAIM_SUMMARIES, (token, expires_at, thread_id, now, now))

    async def claimed_notification_ids(self, thread_id: str, token: str) -> list[str]:
        found = await self.database.rows(
            "SELECT id FROM notifications WHERE thread_id=? AND claimed_by=? ORDER BY {rownum}",
            (thread_id, token),
        )
        return [row[0] for row in found]

    async def claim_due_notifications(
        self, token: str, *, due_at: float, now: float, expires_at: float, limit: int
    ) -> list[NotificationRecord]:
        """Claim up to ``limit`` due records, oldest first, each for one caller only; with
        nothing due, nothing is written (see the contract)."""
        due = (now, due_at, due_at, now)
        if await first(self.database, _ANY_DUE, due) is None:
            return []  # nothing due: no write transaction, no commit
        dialect = self.database.dialect
        async with self.database.transaction() as session:
            found = await session.rows(dialect.sql(_CLAIM_DUE), (token, expires_at, *due, limit))
        ordered = sorted(found, key=lambda row: (row[1 + NOTIFICATION_COLUMNS.index("created_at")],
                                                  row[0]))
        return [notification_of(row[1:]) for row in ordered]

    async def pending_notification_counts(self, thread_id: str) -> list[tuple[str, str, int]]:
        """``(source, priority, count)`` of the thread's pending records."""
        found = await self.database.rows(
            "SELECT source, priority, COUNT(*) FROM notifications WHERE thread_id=? AND"
            " status='pending' GROUP BY source, priority",
            (thread_id,),
        )
        return [(source, priority, int(n)) for source, priority, n in found]

    async def mark_notifications_delivered(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        """Where ``token``'s claim stands: delivered (if still pending), attempts + 1, the
        schedule cleared, the claim released."""
        await self._each_claimed(_DELIVERED, [(now, now, i, token) for i in ids])

    async def mark_notifications_summarized(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        """Where ``token``'s claim stands: ``summarized_at`` set, ``summary_at`` cleared, the
        claim released."""
        await self._each_claimed(
            f"UPDATE notifications SET summarized_at=?, summary_at=NULL, {_RELEASE}"
            " WHERE id=? AND claimed_by=?",
            [(now, i, token) for i in ids],
        )

    async def release_notifications(self, ids: Sequence[str], token: str) -> None:
        """Release ``token``'s claim on the records (others' claims are left alone)."""
        await self._each_claimed(
            f"UPDATE notifications SET {_RELEASE} WHERE id=? AND claimed_by=?",
            [(i, token) for i in ids],
        )

    async def record_failed_delivery(
        self, ids: Sequence[str], token: str, *, error: str, now: float, digest: bool,
        max_attempts: int, retry_at: Callable[[int], float],
    ) -> None:
        """For each record ``token`` still claims: attempts + 1; ``failed`` at
        ``max_attempts``, else due again at ``retry_at(attempts)``; the claim released."""
        retry_column = "summary_at" if digest else "deliver_at"
        dialect = self.database.dialect
        async with self.database.transaction() as session:
            for notification_id in ids:
                found = await session.rows(dialect.sql(
                    "SELECT delivery_attempts FROM notifications WHERE id=? AND claimed_by=?"
                    "{for_update}"), (notification_id, token))
                if not found:
                    continue
                attempts = int(found[0][0]) + 1
                if attempts >= max_attempts:
                    await session.run(dialect.sql(_FAILED),
                                      (now, now, attempts, error, notification_id))
                    continue
                await session.run(dialect.sql(
                    f"UPDATE notifications SET {retry_column}=?, delivery_attempts=?,"
                    f" last_delivery_error=?, updated_at=?, {_RELEASE} WHERE id=?"),
                    (retry_at(attempts), attempts, error, now, notification_id))

    async def _write(self, sql: str, args: Args) -> int:
        """One statement as its own transaction (one write of the writer): how many rows it
        touched."""
        return await self.writer.run_write(None, _one_statement, sql, args)

    async def _each_claimed(self, sql: str, rows: list[tuple[object, ...]]) -> None:
        if not rows:
            return
        await self.writer.run_write(None, _statement_per_row, sql, rows)


def _one_statement(d: Dialect, sql: str, args: Args) -> Txn[int]:
    touched: int = yield Statement(d.sql(sql), args)
    return touched


def _statement_per_row(d: Dialect, sql: str, rows: list[tuple[object, ...]]) -> Txn[None]:
    yield Statement(d.sql(sql), rows, many=True)


def _save(
    d: Dialect, rec: NotificationRecord, merge: bool, now: float, claim_token: str | None,
    claim_expires_at: float | None,
) -> Txn[NotificationRecord]:
    """``Inbox.save_notification`` as one transaction of statements."""
    schedule = (_ts(rec.discarded_at), _ts(rec.deliver_at), _ts(rec.summary_at))
    claim = (claim_token, claim_expires_at)
    common = (dumps(rec.attributes), dumps(rec.metadata))
    if merge:
        merged: int = yield Statement(d.sql(_MERGE_UPDATE), (
            rec.summary, rec.priority, dumps(rec.payload), *common, rec.dedupe_key,
            rec.coalesce_key, now, rec.status, *schedule, *claim, rec.id, now,
        ))
        if merged == 1:
            return rec
        rec = rec.model_copy(update={"id": new_id(), "coalesced_count": 1})
    yield Statement(d.sql(_INSERT), _insert_args(rec, now, claim_token, claim_expires_at))
    return rec


# A new record's insert arguments (``_INSERT``'s columns, in order): id, thread_id,
# resource_id, source, kind, priority, status, summary, payload, dedupe_key, coalesce_key,
# coalesced_count, attributes, metadata (the three JSON columns as their text), created_at,
# updated_at, discarded_at, deliver_at, summary_at, claimed_by, claim_expires_at.
NewRow = tuple[
    str, str, str, str, str, str, str, str, str, str | None, str | None, int, str, str,
    float, float, float | None, float | None, float | None, str | None, float | None]


def insert_args(
    rec: NotificationRecord, now: float, claim_token: str | None, claim_expires_at: float | None
) -> NewRow:
    """What :meth:`Inbox.save_notification` inserts for a new record ``rec``."""
    return _insert_args(rec, now, claim_token, claim_expires_at)


def _insert_args(
    rec: NotificationRecord, now: float, claim_token: str | None, claim_expires_at: float | None
) -> NewRow:
    return (
        rec.id, rec.thread_id, rec.resource_id, rec.source, rec.kind, rec.priority,
        rec.status, rec.summary, dumps(rec.payload), rec.dedupe_key, rec.coalesce_key, 1,
        dumps(rec.attributes), dumps(rec.metadata), now, now, _ts(rec.discarded_at),
        _ts(rec.deliver_at), _ts(rec.summary_at), claim_token, claim_expires_at,
    )


# -- a notification stored, sent and marked in one transaction (notifications/inbox.py) ---------


def _thread_of_resource(d: Dialect, thread_id: str, resource_id: str) -> Txn[None]:
    """In the open transaction: the thread created if new, else checked to be
    ``resource_id``'s (``SignalError`` naming both resources if it is another's)."""
    owner: list[Row] = yield Statement(
        d.sql("SELECT resource_id FROM threads WHERE id=?"), (thread_id,), rows=True)
    if not owner:
        yield from writes.ensure_thread(d, thread_id, resource_id)
    elif owner[0][0] != resource_id:
        raise SignalError(f"thread {thread_id!r} belongs to resource {owner[0][0]!r}, "
                          f"not {resource_id!r}")


def save_on_thread(
    d: Dialect, thread_id: str, resource_id: str, merge_keys: tuple[str, str, str | None,
    str | None] | None, build: Callable[[NotificationRecord | None], NotificationRecord],
    now: float, claim_token: str | None, claim_expires_at: float | None,
    new_row: NewRow | None = None,
) -> Txn[NotificationRecord | NewRow]:
    """In the open transaction: the thread checked (created if new; ``SignalError`` if it is
    another resource's), the record to merge into found (``merge_keys``: source, kind,
    dedupe key, coalesce key; None: no merge), ``build(existing or None)`` stored as
    :meth:`Inbox.save_notification` stores it (merged if ``existing`` was given). The record
    as stored; or, when nothing merges and ``new_row`` is given (the record's insert
    arguments, as :func:`insert_args` makes them), ``new_row`` inserted as it is, and
    returned (no record built: see :func:`written_record`)."""
    yield from _thread_of_resource(d, thread_id, resource_id)
    existing = None
    if merge_keys is not None:
        found: list[Row] = yield Statement(
            d.sql(_MERGE), (thread_id, *merge_keys, now), rows=True)
        existing = notification_of(found[0]) if found else None
    if existing is None and new_row is not None:
        yield Statement(d.sql(_INSERT), new_row)
        return new_row
    record = build(existing)
    return (yield from _save(d, record, existing is not None, now, claim_token,
                             claim_expires_at))


def delivered_and_read(
    d: Dialect, notification_id: str, token: str | None, now: float
) -> Txn[NotificationRecord]:
    """Mark the record delivered where ``token``'s claim stands (as
    :meth:`Inbox.mark_notifications_delivered`; no token: nothing marked), then the record as
    stored."""
    yield from delivered(d, notification_id, token, now)
    return (yield from read_notification(d, notification_id))


def delivered(d: Dialect, notification_id: str, token: str | None, now: float) -> Txn[None]:
    """:func:`delivered_and_read` without the read."""
    if token is not None:
        yield Statement(d.sql(_DELIVERED), (now, now, notification_id, token))


def read_notification(d: Dialect, notification_id: str) -> Txn[NotificationRecord]:
    """The record as stored, read in the open transaction."""
    found: list[Row] = yield Statement(d.sql(f"{_SELECT} WHERE id=?"), (notification_id,),
                                       rows=True)
    return notification_of(found[0])


class ClaimedSave(Protocol):
    """One call of :func:`save_all_claimed`: what :func:`save_on_thread` takes."""

    thread_id: str
    resource_id: str
    merge_keys: tuple[str, str, str | None, str | None] | None
    now: float
    token: str | None
    claim_expires_at: float | None
    new_row: NewRow | None

    def build(self, existing: NotificationRecord | None) -> NotificationRecord: ...


MANY_PENDING: Final = 500  # a thread with more waiting records: each call looks its own up
_READ_CHUNK: Final = 50  # ids read back per statement (one statement's form: the last repeated)


def save_all_claimed(
    d: Dialect, saves: Sequence[ClaimedSave]
) -> Txn[list[NotificationRecord | NewRow]]:
    """:func:`save_on_thread` for each of ``saves``, in order, as if one after another, for
    records each claimed by its own call (``token`` set: sent now): the batch form a burst of
    notifications uses. Such a record is never a later call's merge target (it is claimed), so
    the thread's mergeable records are read once and each call takes its target from them, a
    target taken by one call (claimed now) leaving them; new records are inserted with one
    ``executemany`` (a save's ``new_row`` as it is, and returned in its record's place, as
    :func:`save_on_thread` does). Raises what the first failing save would (the caller replays
    them one by one). A thread with more than ``MANY_PENDING`` mergeable records: each looked up
    as :func:`save_on_thread` does."""
    assert all(save.token is not None for save in saves)
    targets: dict[str, list[NotificationRecord]] = {}
    for thread_id, resource_id in dict.fromkeys((s.thread_id, s.resource_id) for s in saves):
        yield from _thread_of_resource(d, thread_id, resource_id)
        if thread_id not in targets and any(
                s.merge_keys is not None for s in saves if s.thread_id == thread_id):
            found: list[Row] = yield Statement(d.sql(
                f"{_SELECT} WHERE thread_id=? AND status='pending' AND {_UNCLAIMED}"
                " ORDER BY updated_at DESC LIMIT ?"), (thread_id, saves[0].now, MANY_PENDING + 1),
                rows=True)
            if len(found) > MANY_PENDING:
                return (yield from _each_saved(d, saves))
            targets[thread_id] = [notification_of(row) for row in found]
    saved: list[NotificationRecord | NewRow] = []
    inserts: list[NewRow] = []
    for save in saves:
        expires = save.claim_expires_at
        existing = None if save.merge_keys is None else _merge_target(
            targets.get(save.thread_id, []), save.merge_keys)
        if existing is None:
            row = save.new_row
            if row is None:
                rec = save.build(None)
                row = _insert_args(rec, save.now, save.token, expires)
                saved.append(rec)
            else:
                saved.append(row)
            inserts.append(row)
            continue
        rec = save.build(existing)
        targets[save.thread_id].remove(existing)  # claimed by this call now
        if inserts:  # in call order
            yield Statement(d.sql(_INSERT), inserts, many=True)
            inserts = []
        saved.append((yield from _save(d, rec, True, save.now, save.token, expires)))
    if inserts:
        yield Statement(d.sql(_INSERT), inserts, many=True)
    return saved


def _merge_target(
    pending: list[NotificationRecord], keys: tuple[str, str, str | None, str | None]
) -> NotificationRecord | None:
    """What ``_MERGE`` finds among ``pending`` (newest change first)."""
    source, kind, dedupe_key, coalesce_key = keys
    for rec in pending:
        if rec.source == source and rec.kind == kind and (
                (rec.dedupe_key is not None and rec.dedupe_key == dedupe_key)
                or (rec.coalesce_key is not None and rec.coalesce_key == coalesce_key)):
            return rec
    return None


def _each_saved(
    d: Dialect, saves: Sequence[ClaimedSave]
) -> Txn[list[NotificationRecord | NewRow]]:
    saved: list[NotificationRecord | NewRow] = []
    for save in saves:
        saved.append((yield from save_on_thread(
            d, save.thread_id, save.resource_id, save.merge_keys, save.build, save.now,
            save.token, save.claim_expires_at, save.new_row)))
    return saved


def delivered_all_and_read(
    d: Dialect, marks: Sequence[tuple[str, str | None]], now: float,
    read: Sequence[str] | None = None,
) -> Txn[list[NotificationRecord]]:
    """:func:`delivered_and_read` for each of ``marks`` (id, token or None), in order: one
    ``executemany`` of the marks, the records read back a chunk of ids per statement (only
    those of ``read``, in its order, if given)."""
    marked = [(now, now, notification_id, token) for notification_id, token in marks
              if token is not None]
    if marked:
        yield Statement(d.sql(_DELIVERED), marked, many=True)
    ids = [notification_id for notification_id, _ in marks] if read is None else list(read)
    if not ids:
        return []
    records: dict[str, NotificationRecord] = {}
    for start in range(0, len(ids), _READ_CHUNK):
        chunk = ids[start:start + _READ_CHUNK]
        chunk += [chunk[-1]] * (_READ_CHUNK - len(chunk))
        found: list[Row] = yield Statement(d.sql(
            f"{_SELECT} WHERE id IN ({','.join('?' * _READ_CHUNK)})"), tuple(chunk), rows=True)
        for row in found:
            record = notification_of(row)
            records[record.id] = record
    return [records[notification_id] for notification_id in ids]


def written_record(row: NewRow, delivered_at: float | None) -> NotificationRecord:
    """The record a read gives after ``row`` (a new record's insert arguments) was inserted
    and, with ``delivered_at``, marked delivered at that time by the claim it was inserted
    with (:func:`delivered`; nothing else can touch a record claimed by its own call):
    ``notification_of`` of the row as stored, without reading it (tests/test_signal_fast_path.py
    and tests/test_notifications.py check it is the record read back)."""
    (record_id, thread_id, resource_id, source, kind, priority, status, summary, payload,
     dedupe_key, coalesce_key, coalesced_count, attributes, metadata, created_at, updated_at,
     discarded_at, deliver_at, summary_at, _claimed_by, _claim_expires_at) = row
    attempts = 0
    if delivered_at is not None:  # _DELIVERED, where the claim stands (it does: this call's)
        status = "delivered" if status == "pending" else status
        updated_at, deliver_at, summary_at, attempts = delivered_at, None, None, 1
    return notification_of((
        record_id, thread_id, resource_id, source, kind, priority, status, summary, payload,
        dedupe_key, coalesce_key, coalesced_count, attributes, metadata, created_at, updated_at,
        delivered_at, None, None, None, discarded_at, None, deliver_at, summary_at, None,
        attempts, None,
    ))
