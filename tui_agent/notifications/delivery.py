"""Sending inbox records to a thread: the full notification, or a digest of what is pending.

Both go through ``agent.send_signal``. The caller holds a claim on the records (``claimed_by``)
while it sends, and the outcome is written only where that claim still stands, so a record is
never marked twice. A failed send is retried with backoff; the 5th failure ends it as ``failed``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from tui_agent.notifications.policy import PRIORITIES, PRIORITY_RANK
from tui_agent.notifications.ports import NotifyingAgent
from tui_agent.notifications.records import MAX_DELIVERY_ATTEMPTS, NotificationRecord
from tui_agent.signals import Signal, digest_signal
from tui_agent.signals.data import build_signal
from tui_agent.signals.elements import notification_fields
from tui_agent.store.contract import Store

CLAIM_TTL_S = 60.0


def backoff_s(attempts: int) -> float:
    """Wait before the next try after ``attempts`` failures: 1, 2, 4, 8... at most 60 s."""
    return float(min(2 ** max(attempts - 1, 0), 60))


def _as_dict(signal: Signal) -> dict[str, Any]:
    return {"type": signal.type, "tag_name": signal.tag_name, "contents": signal.contents,
            "attributes": dict(signal.attributes), "metadata": dict(signal.metadata)}


def full_signal(record: NotificationRecord) -> dict[str, Any]:
    """``<notification id source kind priority ...>summary</notification>``."""
    return _as_dict(build_signal(full_fields(record), "notification"))


def full_fields(record: NotificationRecord) -> dict[str, Any]:
    """:func:`full_signal`'s fields, its attributes checked: what a sender that builds the
    Signal itself from checked fields takes (``checked_signal``; notifications/inbox.py)."""
    attributes = dict(record.attributes)
    if record.coalesced_count > 1:
        attributes.setdefault("coalesced_count", record.coalesced_count)
    return notification_fields(
        id=record.id, source=record.source, kind=record.kind, summary=record.summary,
        priority=record.priority, attributes=attributes,
        metadata={**record.metadata, "notification_id": record.id}, tag_name="notification",
    )


async def _receipt(value: Any) -> Any:
    if not hasattr(value, "accepted") and inspect.isawaitable(value):
        return await value
    return value


async def route(
    agent: NotifyingAgent,
    signal: dict[str, Any],
    record: NotificationRecord | None,
    *,
    resource_id: str,
    thread_id: str,
    behavior: str,
    if_idle: dict[str, Any] | None,
) -> dict[str, Any]:
    """Send ``signal``: ``behavior`` "deliver" (into a live run, else wake) or "persist"
    (stored in history, no model call). Returns ``{signal, accepted, run_id?, persisted?}``."""
    if_active = {"behavior": "deliver" if behavior == "deliver" else "persist"}
    idle = dict(if_idle or {})
    idle["behavior"] = "wake" if behavior == "deliver" else "persist"
    if idle["behavior"] == "persist":
        idle.pop("stream_options", None)
    receipt = await _receipt(agent.send_signal(
        signal, resource_id=resource_id, thread_id=thread_id, if_active=if_active, if_idle=idle
    ))
    accepted = await receipt.accepted
    out: dict[str, Any] = {"signal": receipt.signal, "accepted": accepted}
    if accepted.get("run_id"):
        out["run_id"] = accepted["run_id"]
    if accepted.get("action") == "persist":
        persisted = getattr(receipt, "persisted", None)
        if persisted is not None:
            await persisted
        out["persisted"] = True
    return out


async def pending_counts(store: Store, thread_id: str) -> tuple[dict[str, int], int, str]:
    """Per-source counts of the thread's pending records, their total and highest priority."""
    counts: dict[str, int] = {}
    top = 0
    for source, priority, n in await store.pending_notification_counts(thread_id):
        counts[source] = counts.get(source, 0) + n
        top = max(top, PRIORITY_RANK.get(priority, 0))
    return counts, sum(counts.values()), PRIORITIES[top]


async def build_digest(store: Store, thread_id: str) -> dict[str, Any] | None:
    """``<notification-summary pending="N" priority="...">github: 2, ...`` or None if empty."""
    counts, pending, top = await pending_counts(store, thread_id)
    if pending == 0:
        return None
    sig = digest_signal(counts, pending, {"priority": top}, {"notification_digest": True})
    return _as_dict(sig)


def digest_behavior(priorities: Sequence[str]) -> str:
    """A digest of only low records reaches subscribers but does not wake the model."""
    return "persist" if all(p == "low" for p in priorities) else "deliver"


# -- outcomes (each guarded by the claim) ---------------------------------------------------------


async def mark_delivered(store: Store, ids: Sequence[str], token: str, now: float) -> None:
    await store.mark_notifications_delivered(ids, token, now)


async def mark_summarized(store: Store, ids: Sequence[str], token: str, now: float) -> None:
    await store.mark_notifications_summarized(ids, token, now)


async def release(store: Store, ids: Sequence[str], token: str) -> None:
    await store.release_notifications(ids, token)


async def mark_failed_attempt(
    store: Store, ids: Sequence[str], token: str, error: BaseException, now: float, *,
    digest: bool,
) -> None:
    """Count a failed send; retry later (the digest or the delivery), or end as ``failed``."""
    await store.record_failed_delivery(
        ids, token, error=f"{type(error).__name__}: {error}"[:2000], now=now, digest=digest,
        max_attempts=MAX_DELIVERY_ATTEMPTS, retry_at=lambda attempts: now + backoff_s(attempts),
    )
