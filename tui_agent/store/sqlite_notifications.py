"""The notification inbox's queries on SQLite (the inbox half of ``SqliteStore``).

Every write is one ``BEGIN IMMEDIATE`` transaction, so a claim (``claimed_by``,
``claim_expires_at``) taken here holds across processes: each due record is claimed by one
dispatcher, and every outcome is written only where its claim still stands. Checked by
``tests/test_notifications.py``, ``tests/test_dispatcher.py`` and ``tests/test_store_contract.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

from tui_agent.errors import ConfigError
from tui_agent.store.codec import dumps, new_id
from tui_agent.store.contract import NotificationCursor
from tui_agent.store.records import NOTIFICATION_STATUSES, NotificationRecord, to_datetime

COLUMNS: tuple[str, ...] = (
    "id", "thread_id", "resource_id", "source", "kind", "priority", "status", "summary",
    "payload", "dedupe_key", "coalesce_key", "coalesced_count", "attributes", "metadata",
    "created_at", "updated_at", "delivered_at", "seen_at", "dismissed_at", "archived_at",
    "discarded_at", "failed_at", "deliver_at", "summary_at", "summarized_at",
    "delivery_attempts", "last_delivery_error",
)
SELECT = f"SELECT {', '.join(COLUMNS)} FROM notifications"
_JSON = {"payload", "attributes", "metadata"}
_TIMES = {c for c in COLUMNS if c.endswith("_at")}
_CHANGED = "max(updated_at, ifnull(summarized_at, 0))"  # a record's last change
_SLICE = 200  # records built between two yields to the event loop
_RELEASE = "claimed_by=NULL, claim_expires_at=NULL"
_UNCLAIMED = "(claimed_by IS NULL OR claim_expires_at<?)"


def row_to_record(row: Sequence[Any]) -> NotificationRecord:
    fields: dict[str, Any] = {}
    for name, value in zip(COLUMNS, row, strict=True):
        if name in _JSON:
            value = None if value is None else json.loads(value)
        elif name in _TIMES:
            value = to_datetime(value)
        fields[name] = value
    fields["attributes"] = fields["attributes"] or {}
    fields["metadata"] = fields["metadata"] or {}
    return NotificationRecord(**fields)


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _filters(thread_id: str | None, status: str | None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if thread_id is not None:
        clauses.append("thread_id=?")
        params.append(thread_id)
    if status is not None:
        if status not in NOTIFICATION_STATUSES:
            raise ConfigError(
                f"unknown notification status {status!r}; statuses: {NOTIFICATION_STATUSES}"
            )
        clauses.append("status=?")
        params.append(status)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


_MERGE_SQL = (
    f"{SELECT} WHERE thread_id=? AND status='pending' AND source=? AND kind=?"
    " AND ((dedupe_key IS NOT NULL AND dedupe_key=?) OR (coalesce_key IS NOT NULL AND"
    f" coalesce_key=?)) AND {_UNCLAIMED} ORDER BY updated_at DESC LIMIT 1"
)
_INSERT_SQL = (
    "INSERT INTO notifications(id, thread_id, resource_id, source, kind, priority, status,"
    " summary, payload, dedupe_key, coalesce_key, coalesced_count, attributes, metadata,"
    " created_at, updated_at, discarded_at, deliver_at, summary_at, claimed_by,"
    " claim_expires_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_MERGE_UPDATE_SQL = (
    "UPDATE notifications SET summary=?, priority=?, payload=?, coalesced_count=coalesced_count+1,"
    " attributes=?, metadata=?, dedupe_key=?, coalesce_key=?, updated_at=?, status=?,"
    " discarded_at=?, deliver_at=?, summary_at=?, claimed_by=?, claim_expires_at=?"
    f" WHERE id=? AND status='pending' AND {_UNCLAIMED}"
)
# A record that was summarised (or is waiting for its digest) and has ``deliver_at`` waits for
# its thread to be idle: "a summary now, the full notification once idle". A live lease = active.
# A record that was summarised (or is waiting for its digest) and has ``deliver_at`` waits for
# its thread to be idle: "a summary now, the full notification once idle". A live lease = active.
_DUE = """
  n.status='pending' AND (n.claimed_by IS NULL OR n.claim_expires_at<:real_now)
    AND (
      (n.summary_at IS NOT NULL AND n.summary_at<=:now)
      OR (n.deliver_at IS NOT NULL AND n.deliver_at<=:now AND (
            (n.summary_at IS NULL AND n.summarized_at IS NULL)
            OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.thread_id=n.thread_id
                           AND l.expires_at>:real_now)))
    )
"""

_CLAIM_DUE_SQL = f"""
UPDATE notifications SET claimed_by=:token, claim_expires_at=:expires
WHERE id IN (
  SELECT n.id FROM notifications n WHERE {_DUE}
  ORDER BY n.created_at LIMIT :limit
)
RETURNING {", ".join(COLUMNS)}
"""

# Asked first, as a read: an idle pass takes no write lock and commits nothing (a commit every
# second would wake every process's change poller and every watcher of "any commit").
_ANY_DUE_SQL = f"SELECT 1 FROM notifications n WHERE {_DUE} LIMIT 1"


class SqliteNotifications:
    """The inbox methods of the store contract, on ``fetchall``/``fetchone``/``transaction``
    (``SqliteStore`` provides them)."""

    fetchall: Callable[..., Any]
    fetchone: Callable[..., Any]
    transaction: Callable[[], AbstractAsyncContextManager[Any]]

    async def get_notification(self, notification_id: str) -> NotificationRecord | None:
        row = await self.fetchone(f"{SELECT} WHERE id=?", (notification_id,))
        return None if row is None else row_to_record(row)

    async def list_notifications(
        self, *, thread_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        where, params = _filters(thread_id, status)
        rows = await self.fetchall(
            f"{SELECT}{where} ORDER BY updated_at DESC, rowid DESC LIMIT ?", (*params, limit)
        )
        return [row_to_record(row) for row in rows]

    async def search_notifications(
        self, query: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where, params = _filters(thread_id, None)
        clause = "(summary LIKE ? ESCAPE '\\' OR kind LIKE ? ESCAPE '\\'" \
                 " OR source LIKE ? ESCAPE '\\')"
        where = f"{where} AND {clause}" if where else f" WHERE {clause}"
        rows = await self.fetchall(
            f"{SELECT}{where} ORDER BY updated_at DESC, rowid DESC LIMIT ?",
            (*params, pattern, pattern, pattern, limit),
        )
        return [row_to_record(row) for row in rows]

    async def set_notification_status(
        self, notification_id: str, status: str, now: float
    ) -> bool:
        if status not in NOTIFICATION_STATUSES:  # it names a column: never from outside
            raise ConfigError(f"unknown notification status {status!r}")
        async with self.transaction() as db:
            cursor = await db.execute(
                f"UPDATE notifications SET status=?, {status}_at=?, updated_at=?,"
                " summary_at=NULL, deliver_at=NULL WHERE id=?",
                (status, now, now, notification_id),
            )
            return bool(cursor.rowcount)

    async def notification_changes(
        self, after: NotificationCursor | None, limit: int
    ) -> tuple[list[NotificationRecord], NotificationCursor]:
        """The cursor is (last change, rowid). Rows become records a slice at a time, with the
        event loop free between slices."""
        changed, rowid = after if after is not None else (-1.0, -1)
        rows = await self.fetchall(
            f"SELECT rowid, {_CHANGED}, {', '.join(COLUMNS)} FROM notifications"
            f" WHERE {_CHANGED} > ? OR ({_CHANGED} = ? AND rowid > ?)"
            f" ORDER BY {_CHANGED}, rowid LIMIT ?",
            (changed, changed, rowid, limit),
        )
        records: list[NotificationRecord] = []
        for start in range(0, len(rows), _SLICE):  # a big read never holds the loop long
            if start:
                await asyncio.sleep(0)
            records.extend(row_to_record(row[2:]) for row in rows[start:start + _SLICE])
        cursor = (float(rows[-1][1]), int(rows[-1][0])) if rows else (changed, rowid)
        return records, cursor

    async def find_notification_to_merge(
        self, thread_id: str, *, source: str, kind: str, dedupe_key: str | None,
        coalesce_key: str | None, now: float,
    ) -> NotificationRecord | None:
        row = await self.fetchone(
            _MERGE_SQL, (thread_id, source, kind, dedupe_key, coalesce_key, now)
        )
        return None if row is None else row_to_record(row)

    async def save_notification(
        self, record: NotificationRecord, *, merge: bool, now: float,
        claim_token: str | None, claim_expires_at: float | None,
    ) -> NotificationRecord:
        rec = record
        schedule = (_ts(rec.discarded_at), _ts(rec.deliver_at), _ts(rec.summary_at))
        claim = (claim_token, claim_expires_at)
        common = (dumps(rec.attributes), dumps(rec.metadata))
        async with self.transaction() as db:
            if merge:
                cursor = await db.execute(_MERGE_UPDATE_SQL, (
                    rec.summary, rec.priority, dumps(rec.payload), *common, rec.dedupe_key,
                    rec.coalesce_key, now, rec.status, *schedule, *claim, rec.id, now,
                ))
                if cursor.rowcount == 1:
                    return rec
                rec = rec.model_copy(update={"id": new_id(), "coalesced_count": 1})
            await db.execute(_INSERT_SQL, (
                rec.id, rec.thread_id, rec.resource_id, rec.source, rec.kind, rec.priority,
                rec.status, rec.summary, dumps(rec.payload), rec.dedupe_key, rec.coalesce_key, 1,
                *common, now, now, *schedule, *claim,
            ))
        return rec

    async def claim_due_summaries(
        self, thread_id: str, token: str, *, now: float, expires_at: float
    ) -> None:
        async with self.transaction() as db:
            await db.execute(
                "UPDATE notifications SET claimed_by=?, claim_expires_at=? WHERE thread_id=? AND"
                " status='pending' AND summary_at IS NOT NULL AND summary_at<=? AND"
                f" {_UNCLAIMED}",
                (token, expires_at, thread_id, now, now),
            )

    async def claimed_notification_ids(self, thread_id: str, token: str) -> list[str]:
        rows = await self.fetchall(
            "SELECT id FROM notifications WHERE thread_id=? AND claimed_by=?", (thread_id, token)
        )
        return [row[0] for row in rows]

    async def claim_due_notifications(
        self, token: str, *, due_at: float, now: float, expires_at: float, limit: int
    ) -> list[NotificationRecord]:
        if await self.fetchone(_ANY_DUE_SQL, {"now": due_at, "real_now": now}) is None:
            return []  # nothing due: no write transaction, no commit
        params = {"token": token, "expires": expires_at, "now": due_at, "real_now": now,
                  "limit": limit}
        async with self.transaction() as db:
            rows = await db.execute_fetchall(_CLAIM_DUE_SQL, params)
        return [row_to_record(row) for row in rows]

    async def pending_notification_counts(self, thread_id: str) -> list[tuple[str, str, int]]:
        rows = await self.fetchall(
            "SELECT source, priority, COUNT(*) FROM notifications WHERE thread_id=? AND"
            " status='pending' GROUP BY source, priority",
            (thread_id,),
        )
        return [(source, priority, int(n)) for source, priority, n in rows]

    async def mark_notifications_delivered(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        await self._each_claimed(
            "UPDATE notifications SET status=CASE WHEN status='pending' THEN 'delivered'"
            " ELSE status END, delivered_at=?, updated_at=?, deliver_at=NULL, summary_at=NULL,"
            f" delivery_attempts=delivery_attempts+1, {_RELEASE} WHERE id=? AND claimed_by=?",
            [(now, now, i, token) for i in ids],
        )

    async def mark_notifications_summarized(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        await self._each_claimed(
            f"UPDATE notifications SET summarized_at=?, summary_at=NULL, {_RELEASE}"
            " WHERE id=? AND claimed_by=?",
            [(now, i, token) for i in ids],
        )

    async def release_notifications(self, ids: Sequence[str], token: str) -> None:
        await self._each_claimed(
            f"UPDATE notifications SET {_RELEASE} WHERE id=? AND claimed_by=?",
            [(i, token) for i in ids],
        )

    async def _each_claimed(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        async with self.transaction() as db:
            await db.executemany(sql, rows)

    async def record_failed_delivery(
        self, ids: Sequence[str], token: str, *, error: str, now: float, digest: bool,
        max_attempts: int, retry_at: Callable[[int], float],
    ) -> None:
        retry_column = "summary_at" if digest else "deliver_at"
        async with self.transaction() as db:
            for notification_id in ids:
                rows = await db.execute_fetchall(
                    "SELECT delivery_attempts FROM notifications WHERE id=? AND claimed_by=?",
                    (notification_id, token),
                )
                if not rows:
                    continue
                attempts = rows[0][0] + 1
                if attempts >= max_attempts:
                    await db.execute(
                        "UPDATE notifications SET status=CASE WHEN status='pending' THEN"
                        " 'failed' ELSE status END, failed_at=?, updated_at=?,"
                        f" delivery_attempts=?, last_delivery_error=?, {_RELEASE} WHERE id=?",
                        (now, now, attempts, error, notification_id),
                    )
                    continue
                await db.execute(
                    f"UPDATE notifications SET {retry_column}=?, delivery_attempts=?,"
                    f" last_delivery_error=?, updated_at=?, {_RELEASE} WHERE id=?",
                    (retry_at(attempts), attempts, error, now, notification_id),
                )
