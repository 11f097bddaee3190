"""Inbox records as the API returns them (the record type itself is store-neutral and lives
in ``tui_agent.store.records``; each store keeps them its own way)."""

from __future__ import annotations

from tui_agent.store.records import NOTIFICATION_STATUSES, NotificationRecord

STATUSES: tuple[str, ...] = NOTIFICATION_STATUSES
MAX_DELIVERY_ATTEMPTS = 5

__all__ = ["MAX_DELIVERY_ATTEMPTS", "STATUSES", "NotificationRecord"]
