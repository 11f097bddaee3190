"""Inbox records as the store keeps them and the API returns them."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import Field

from tui_agent.store.records import Record, to_datetime

STATUSES: tuple[str, ...] = (
    "pending", "delivered", "seen", "dismissed", "archived", "discarded", "failed",
)
MAX_DELIVERY_ATTEMPTS = 5

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


class NotificationRecord(Record):
    """One inbox record. Every time is a timezone-aware UTC datetime."""

    id: str
    thread_id: str
    resource_id: str
    source: str
    kind: str
    priority: str
    status: str
    summary: str
    payload: Any = None
    dedupe_key: str | None = None
    coalesce_key: str | None = None
    coalesced_count: int = 1
    attributes: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    delivered_at: datetime | None = None
    seen_at: datetime | None = None
    dismissed_at: datetime | None = None
    archived_at: datetime | None = None
    discarded_at: datetime | None = None
    failed_at: datetime | None = None
    deliver_at: datetime | None = None
    summary_at: datetime | None = None
    summarized_at: datetime | None = None
    delivery_attempts: int = 0
    last_delivery_error: str | None = None


def row_to_record(row: Any) -> NotificationRecord:
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


async def fetch_record(store: Any, notification_id: str) -> NotificationRecord | None:
    row = await store.fetchone(f"{SELECT} WHERE id=?", (notification_id,))
    return None if row is None else row_to_record(row)
