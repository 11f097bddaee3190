"""Rows into records, the same for both stores: a row is read by position, in the order of
the columns its statement selects (the ``*_COLUMNS`` beside each reader)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final

from tui_agent.store.codec import loads
from tui_agent.store.records import NotificationRecord, RunRecord, StateLane, ThreadRecord
from tui_agent.store.roles import Row

THREAD_COLUMNS: Final = "id, resource_id, title, metadata, created_at, updated_at"
RUN_COLUMNS: Final = (
    "id, thread_id, resource_id, agent_id, owner, status, start_seq, finish_reason, error,"
    " scores, started_at, ended_at"
)
NOTIFICATION_COLUMNS: Final[tuple[str, ...]] = (
    "id", "thread_id", "resource_id", "source", "kind", "priority", "status", "summary",
    "payload", "dedupe_key", "coalesce_key", "coalesced_count", "attributes", "metadata",
    "created_at", "updated_at", "delivered_at", "seen_at", "dismissed_at", "archived_at",
    "discarded_at", "failed_at", "deliver_at", "summary_at", "summarized_at",
    "delivery_attempts", "last_delivery_error",
)
_JSON: Final = {"payload", "attributes", "metadata"}
_TIMES: Final = {c for c in NOTIFICATION_COLUMNS if c.endswith("_at")}


def at(ts: float) -> datetime:
    """A stored time (epoch seconds) as a timezone-aware UTC datetime."""
    return datetime.fromtimestamp(ts, UTC)


def thread_of(row: Row) -> ThreadRecord:
    return ThreadRecord(
        id=row[0], resource_id=row[1], title=row[2], metadata=loads(row[3]) or {},
        created_at=at(row[4]), updated_at=at(row[5]),
    )


def run_of(row: Row) -> RunRecord:
    return RunRecord(
        id=row[0], thread_id=row[1], resource_id=row[2], agent_id=row[3], owner=row[4],
        status=row[5], start_seq=row[6], finish_reason=row[7], error=row[8],
        scores=loads(row[9]), started_at=at(row[10]),
        ended_at=None if row[11] is None else at(row[11]),
    )


def lane_of(row: Row) -> StateLane:
    return StateLane(
        thread_id=row[0], id=row[1], version=row[2], mode=row[3], cache_key=row[4],
        value=loads(row[5]), updated_at=at(row[6]),
    )


def notification_of(row: Row) -> NotificationRecord:
    fields: dict[str, Any] = {}
    for name, value in zip(NOTIFICATION_COLUMNS, row, strict=True):
        if name in _JSON:
            value = None if value is None else json.loads(value)
        elif name in _TIMES:
            value = None if value is None else at(value)
        fields[name] = value
    fields["attributes"] = fields["attributes"] or {}
    fields["metadata"] = fields["metadata"] or {}
    return NotificationRecord(**fields)
