"""State lanes and the notification inbox on PostgreSQL (that half of ``PostgresStore``).

A lane put locks the lane (a transaction-scoped advisory lock) before reading its version, so
concurrent puts get consecutive versions. A dispatcher's claim locks the due rows
``FOR UPDATE SKIP LOCKED``: each record is claimed by one dispatcher however many run, and
every outcome is written only where its claim still stands. Checked by
``tests/test_store_contract.py`` (factory ``postgres``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from tui_agent.errors import ConfigError
from tui_agent.store.codec import dumps, loads, new_id
from tui_agent.store.contract import NotificationCursor
from tui_agent.store.postgres_txn import lock_thread
from tui_agent.store.records import (
    NOTIFICATION_STATUSES,
    NotificationRecord,
    StateLane,
    StateLaneVersion,
    to_datetime,
)
from tui_agent.store.sqlite_notifications import COLUMNS, row_to_record

SELECT = f"SELECT {', '.join(COLUMNS)} FROM notifications"
_CHANGED = "greatest(updated_at, coalesce(summarized_at, 0))"  # a record's last change
_RELEASE = "claimed_by=NULL, claim_expires_at=NULL"
_LANE = "thread_id, lane_id, version, mode, cache_key, value, updated_at"

_MERGE_SQL = (
    f"{SELECT} WHERE thread_id=$1 AND status='pending' AND source=$2 AND kind=$3"
    " AND ((dedupe_key IS NOT NULL AND dedupe_key=$4) OR (coalesce_key IS NOT NULL AND"
    " coalesce_key=$5)) AND (claimed_by IS NULL OR claim_expires_at<$6)"
    " ORDER BY updated_at DESC LIMIT 1"
)
_INSERT_SQL = (
    "INSERT INTO notifications(id, thread_id, resource_id, source, kind, priority, status,"
    " summary, payload, dedupe_key, coalesce_key, coalesced_count, attributes, metadata,"
    " created_at, updated_at, discarded_at, deliver_at, summary_at, claimed_by,"
    " claim_expires_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,1,$12,$13,$14,$14,$15,$16,"
    "$17,$18,$19)"
)
_MERGE_UPDATE_SQL = (
    "UPDATE notifications SET summary=$1, priority=$2, payload=$3,"
    " coalesced_count=coalesced_count+1, attributes=$4, metadata=$5, dedupe_key=$6,"
    " coalesce_key=$7, updated_at=$8, status=$9, discarded_at=$10, deliver_at=$11,"
    " summary_at=$12, claimed_by=$13, claim_expires_at=$14"
    " WHERE id=$15 AND status='pending' AND (claimed_by IS NULL OR claim_expires_at<$8)"
    " RETURNING 1"
)
# As SQLite's: a summarised (or digest-awaiting) record with ``deliver_at`` waits for its thread
# to be idle (no live lease). The rows are locked SKIP LOCKED: concurrent dispatchers split them.
# $3: when it is due (the dispatcher's clock); $4: now (claims and leases live by it).
_DUE = """
  n.status='pending' AND (n.claimed_by IS NULL OR n.claim_expires_at<$4)
    AND (
      (n.summary_at IS NOT NULL AND n.summary_at<=$3)
      OR (n.deliver_at IS NOT NULL AND n.deliver_at<=$3 AND (
            (n.summary_at IS NULL AND n.summarized_at IS NULL)
            OR NOT EXISTS (SELECT 1 FROM leases l WHERE l.thread_id=n.thread_id
                           AND l.expires_at>$4)))
    )
"""

_CLAIM_DUE_SQL = f"""
UPDATE notifications SET claimed_by=$1, claim_expires_at=$2
WHERE id IN (
  SELECT n.id FROM notifications n WHERE {_DUE}
  ORDER BY n.created_at, n.rownum LIMIT $5
  FOR UPDATE OF n SKIP LOCKED
)
RETURNING rownum, {", ".join(COLUMNS)}
"""

# Asked first, as a read: an idle dispatcher pass opens no write transaction.
_DUE_AS_READ = _DUE.replace("$3", "$1").replace("$4", "$2")  # its only parameters
_ANY_DUE_SQL = f"SELECT 1 FROM notifications n WHERE {_DUE_AS_READ} LIMIT 1"


def _lane(row: Sequence[Any]) -> StateLane:
    return StateLane(
        thread_id=row[0], id=row[1], version=row[2], mode=row[3], cache_key=row[4],
        value=loads(row[5]), updated_at=to_datetime(row[6]),
    )


def _ts(value: Any) -> float | None:
    return None if value is None else value.timestamp()


def _filters(thread_id: str | None, status: str | None) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if thread_id is not None:
        params.append(thread_id)
        clauses.append(f"thread_id=${len(params)}")
    if status is not None:
        if status not in NOTIFICATION_STATUSES:
            raise ConfigError(
                f"unknown notification status {status!r}; statuses: {NOTIFICATION_STATUSES}"
            )
        params.append(status)
        clauses.append(f"status=${len(params)}")
    return clauses, params


def _where(clauses: list[str]) -> str:
    return " WHERE " + " AND ".join(clauses) if clauses else ""


def _changed(result: str) -> bool:
    """asyncpg's status string (``UPDATE 3``): did the statement touch a row?"""
    return result.rsplit(" ", 1)[-1] != "0"


class PostgresInbox:
    """The lane and inbox methods of the store contract, on ``fetchall``/``fetchone``/
    ``transaction`` (``PostgresStore`` provides them)."""

    fetchall: Callable[..., Any]
    fetchone: Callable[..., Any]
    transaction: Callable[[], AbstractAsyncContextManager[Any]]

    # -- state lanes --------------------------------------------------------------------------

    async def list_state_lanes(self, thread_id: str) -> list[StateLane]:
        rows = await self.fetchall(
            f"SELECT {_LANE} FROM state_lanes WHERE thread_id=$1 ORDER BY lane_id", thread_id
        )
        return [_lane(row) for row in rows]

    async def get_state_lane(self, thread_id: str, lane_id: str) -> StateLane | None:
        row = await self.fetchone(
            f"SELECT {_LANE} FROM state_lanes WHERE thread_id=$1 AND lane_id=$2",
            thread_id, lane_id,
        )
        return None if row is None else _lane(row)

    async def state_lane_history(
        self, thread_id: str, lane_id: str, limit: int = 50
    ) -> list[StateLaneVersion]:
        rows = await self.fetchall(
            f"SELECT {_LANE}, delta, contents FROM state_lane_history"
            " WHERE thread_id=$1 AND lane_id=$2 ORDER BY version DESC LIMIT $3",
            thread_id, lane_id, limit,
        )
        return [
            StateLaneVersion(**_lane(row).model_dump(), delta=loads(row[7]), contents=row[8])
            for row in rows
        ]

    async def put_state_lane(
        self, thread_id: str, lane_id: str, *, mode: str, cache_key: str,
        new_value: Callable[[Any], Any], delta: Any, contents: str,
    ) -> int | None:
        now = time.time()
        async with self.transaction() as conn:
            await lock_thread(conn, f"lane\x1f{thread_id}\x1f{lane_id}")
            row = await conn.fetchrow(
                "SELECT version, mode, cache_key, value FROM state_lanes"
                " WHERE thread_id=$1 AND lane_id=$2",
                thread_id, lane_id,
            )
            if row is not None and row[1] == mode and row[2] == cache_key:
                return None
            version = row[0] + 1 if row is not None else 1
            value_json = dumps(new_value(loads(row[3]) if row is not None else None))
            await conn.execute(
                "INSERT INTO state_lanes(thread_id, lane_id, version, mode, cache_key, value,"
                " updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7) ON CONFLICT (thread_id, lane_id)"
                " DO UPDATE SET version=excluded.version, mode=excluded.mode,"
                " cache_key=excluded.cache_key, value=excluded.value,"
                " updated_at=excluded.updated_at",
                thread_id, lane_id, version, mode, cache_key, value_json, now,
            )
            await conn.execute(
                "INSERT INTO state_lane_history(thread_id, lane_id, version, mode, cache_key,"
                " value, delta, contents, updated_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
                thread_id, lane_id, version, mode, cache_key, value_json,
                None if mode == "snapshot" else dumps(delta), contents, now,
            )
        return version

    # -- the inbox ----------------------------------------------------------------------------

    async def get_notification(self, notification_id: str) -> NotificationRecord | None:
        row = await self.fetchone(f"{SELECT} WHERE id=$1", notification_id)
        return None if row is None else row_to_record(row)

    async def list_notifications(
        self, *, thread_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        clauses, params = _filters(thread_id, status)
        rows = await self.fetchall(
            f"{SELECT}{_where(clauses)} ORDER BY updated_at DESC, rownum DESC"
            f" LIMIT ${len(params) + 1}",
            *params, limit,
        )
        return [row_to_record(row) for row in rows]

    async def search_notifications(
        self, query: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses, params = _filters(thread_id, None)
        params.append(pattern)
        n = len(params)
        clauses.append(f"(summary ILIKE ${n} OR kind ILIKE ${n} OR source ILIKE ${n})")
        rows = await self.fetchall(
            f"{SELECT}{_where(clauses)} ORDER BY updated_at DESC, rownum DESC LIMIT ${n + 1}",
            *params, limit,
        )
        return [row_to_record(row) for row in rows]

    async def set_notification_status(
        self, notification_id: str, status: str, now: float
    ) -> bool:
        if status not in NOTIFICATION_STATUSES:  # it names a column: never from outside
            raise ConfigError(f"unknown notification status {status!r}")
        async with self.transaction() as conn:
            result = await conn.execute(
                f"UPDATE notifications SET status=$1, {status}_at=$2, updated_at=$2,"
                " summary_at=NULL, deliver_at=NULL WHERE id=$3",
                status, now, notification_id,
            )
        return _changed(result)

    async def notification_changes(
        self, after: NotificationCursor | None, limit: int
    ) -> tuple[list[NotificationRecord], NotificationCursor]:
        """The cursor is (last change, rownum)."""
        changed, rownum = after if after is not None else (-1.0, -1)
        rows = await self.fetchall(
            f"SELECT rownum, {_CHANGED}, {', '.join(COLUMNS)} FROM notifications"
            f" WHERE {_CHANGED} > $1 OR ({_CHANGED} = $1 AND rownum > $2)"
            f" ORDER BY {_CHANGED}, rownum LIMIT $3",
            float(changed), int(rownum), limit,
        )
        records = [row_to_record(row[2:]) for row in rows]
        cursor = (float(rows[-1][1]), int(rows[-1][0])) if rows else (changed, rownum)
        return records, cursor

    async def find_notification_to_merge(
        self, thread_id: str, *, source: str, kind: str, dedupe_key: str | None,
        coalesce_key: str | None, now: float,
    ) -> NotificationRecord | None:
        row = await self.fetchone(
            _MERGE_SQL, thread_id, source, kind, dedupe_key, coalesce_key, now
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
        async with self.transaction() as conn:
            if merge:
                merged = await conn.fetchval(
                    _MERGE_UPDATE_SQL, rec.summary, rec.priority, dumps(rec.payload), *common,
                    rec.dedupe_key, rec.coalesce_key, now, rec.status, *schedule, *claim, rec.id,
                )
                if merged:
                    return rec
                rec = rec.model_copy(update={"id": new_id(), "coalesced_count": 1})
            await conn.execute(
                _INSERT_SQL, rec.id, rec.thread_id, rec.resource_id, rec.source, rec.kind,
                rec.priority, rec.status, rec.summary, dumps(rec.payload), rec.dedupe_key,
                rec.coalesce_key, *common, now, *schedule, *claim,
            )
        return rec

    async def claim_due_summaries(
        self, thread_id: str, token: str, *, now: float, expires_at: float
    ) -> None:
        async with self.transaction() as conn:
            await conn.execute(
                "UPDATE notifications SET claimed_by=$1, claim_expires_at=$2 WHERE id IN ("
                " SELECT id FROM notifications WHERE thread_id=$3 AND status='pending' AND"
                " summary_at IS NOT NULL AND summary_at<=$4 AND"
                " (claimed_by IS NULL OR claim_expires_at<$4) FOR UPDATE SKIP LOCKED)",
                token, expires_at, thread_id, now,
            )

    async def claimed_notification_ids(self, thread_id: str, token: str) -> list[str]:
        rows = await self.fetchall(
            "SELECT id FROM notifications WHERE thread_id=$1 AND claimed_by=$2"
            " ORDER BY rownum",
            thread_id, token,
        )
        return [row[0] for row in rows]

    async def claim_due_notifications(
        self, token: str, *, due_at: float, now: float, expires_at: float, limit: int
    ) -> list[NotificationRecord]:
        if await self.fetchone(_ANY_DUE_SQL, due_at, now) is None:
            return []  # nothing due: no write transaction, no commit
        async with self.transaction() as conn:
            rows = await conn.fetch(_CLAIM_DUE_SQL, token, expires_at, due_at, now, limit)
        ordered = sorted(rows, key=lambda row: (row["created_at"], row["rownum"]))
        return [row_to_record(row[1:]) for row in ordered]

    async def pending_notification_counts(self, thread_id: str) -> list[tuple[str, str, int]]:
        rows = await self.fetchall(
            "SELECT source, priority, COUNT(*) FROM notifications WHERE thread_id=$1 AND"
            " status='pending' GROUP BY source, priority",
            thread_id,
        )
        return [(source, priority, int(n)) for source, priority, n in rows]

    async def mark_notifications_delivered(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        await self._each_claimed(
            "UPDATE notifications SET status=CASE WHEN status='pending' THEN 'delivered'"
            " ELSE status END, delivered_at=$1, updated_at=$1, deliver_at=NULL, summary_at=NULL,"
            f" delivery_attempts=delivery_attempts+1, {_RELEASE} WHERE id=$2 AND claimed_by=$3",
            [(now, i, token) for i in ids],
        )

    async def mark_notifications_summarized(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        await self._each_claimed(
            f"UPDATE notifications SET summarized_at=$1, summary_at=NULL, {_RELEASE}"
            " WHERE id=$2 AND claimed_by=$3",
            [(now, i, token) for i in ids],
        )

    async def release_notifications(self, ids: Sequence[str], token: str) -> None:
        await self._each_claimed(
            f"UPDATE notifications SET {_RELEASE} WHERE id=$1 AND claimed_by=$2",
            [(i, token) for i in ids],
        )

    async def _each_claimed(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        async with self.transaction() as conn:
            await conn.executemany(sql, rows)

    async def record_failed_delivery(
        self, ids: Sequence[str], token: str, *, error: str, now: float, digest: bool,
        max_attempts: int, retry_at: Callable[[int], float],
    ) -> None:
        retry_column = "summary_at" if digest else "deliver_at"
        async with self.transaction() as conn:
            for notification_id in ids:
                attempts = await conn.fetchval(
                    "SELECT delivery_attempts FROM notifications WHERE id=$1 AND claimed_by=$2"
                    " FOR UPDATE",
                    notification_id, token,
                )
                if attempts is None:
                    continue
                attempts += 1
                if attempts >= max_attempts:
                    await conn.execute(
                        "UPDATE notifications SET status=CASE WHEN status='pending' THEN"
                        " 'failed' ELSE status END, failed_at=$1, updated_at=$1,"
                        f" delivery_attempts=$2, last_delivery_error=$3, {_RELEASE} WHERE id=$4",
                        now, attempts, error, notification_id,
                    )
                    continue
                await conn.execute(
                    f"UPDATE notifications SET {retry_column}=$1, delivery_attempts=$2,"
                    f" last_delivery_error=$3, updated_at=$4, {_RELEASE} WHERE id=$5",
                    retry_at(attempts), attempts, error, now, notification_id,
                )
