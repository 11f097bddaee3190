"""The notification inbox: records, the delivery policy, and the dispatcher."""

from __future__ import annotations

from tui_agent.notifications.inbox import InboxMixin, send_notification_signal
from tui_agent.notifications.policy import (
    ACTIONS,
    PRIORITIES,
    Decision,
    DeliveryPolicy,
    NotificationsConfig,
    default_decision,
    parse_delivery_policy,
    parse_notifications_config,
)
from tui_agent.notifications.records import STATUSES, NotificationRecord

__all__ = [
    "ACTIONS",
    "PRIORITIES",
    "STATUSES",
    "Decision",
    "DeliveryPolicy",
    "InboxMixin",
    "NotificationRecord",
    "NotificationsConfig",
    "default_decision",
    "parse_delivery_policy",
    "parse_notifications_config",
    "send_notification_signal",
]
