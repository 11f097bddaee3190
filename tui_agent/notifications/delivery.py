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
from tui_agent.notifications.records import MAX_DELIVERY_ATTEMPTS, NotificationRecord
from tui_agent.signals import Signal, digest_signal, notification_signal

CLAIM_TTL_S = 60.0


def backoff_s(attempts: int) -> float:
    """Wait before the next try after ``attempts`` failures: 1, 2, 4, 8... at most 60 s."""
    return float(min(2 ** max(attempts - 1, 0), 60))


def _as_dict(signal: Signal) -> dict[str, Any]:
    return {"type": signal.type, "tag_name": signal.tag_name, "contents": signal.contents,
            "attributes": dict(signal.attributes), "metadata": dict(signal.metadata)}


def full_signal(record: NotificationRecord) -> dict[str, Any]:
    """``<notification id source kind priority ...>summary</notification>``."""
    attributes = dict(record.attributes)
    if record.coalesced_count > 1:
        attributes.setdefault("coalesced_count", record.coalesced_count)
    sig = notification_signal(
        id=record.id, source=record.source, kind=record.kind, summary=record.summary,
        priority=record.priority, attributes=attributes,
        metadata={**record.metadata, "notification_id": record.id},
    )
    return _as_dict(sig)


async def _receipt(value: Any) -> Any:
    if not hasattr(value, "accepted") and inspect.isawaitable(value):
        return await value
    return value


async def route(
    agent: Any,
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


async def pending_counts(store: Any, thread_id: str) -> tuple[dict[str, int], int, str]:
    """Per-source counts of the thread's pending records, their total and highest priority."""
    rows = await store.fetchall(
        "SELECT source, priority, COUNT(*) FROM notifications WHERE thread_id=? AND"
        " status='pending' GROUP BY source, priority",
        (thread_id,),
    )
    counts: dict[str, int] = {}
    top = 0
    for source, priority, n in rows:
        counts[source] = counts.get(source, 0) + n
        top = max(top, PRIORITY_RANK.get(priority, 0))
    return counts, sum(counts.values()), PRIORITIES[top]


async def build_digest(store: Any, thread_id: str) -> dict[str, Any] | None:
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

_RELEASE = "claimed_by=NULL, claim_expires_at=NULL"


async def mark_delivered(store: Any, ids: Sequence[str], token: str, now: float) -> None:
    async with store.transaction() as db:
        await db.executemany(
            "UPDATE notifications SET status=CASE WHEN status='pending' THEN 'delivered'"
            " ELSE status END, delivered_at=?, updated_at=?, deliver_at=NULL, summary_at=NULL,"
            f" delivery_attempts=delivery_attempts+1, {_RELEASE} WHERE id=? AND claimed_by=?",
            [(now, now, i, token) for i in ids],
        )


async def mark_summarized(store: Any, ids: Sequence[str], token: str, now: float) -> None:
    async with store.transaction() as db:
        await db.executemany(
            f"UPDATE notifications SET summarized_at=?, summary_at=NULL, {_RELEASE}"
            " WHERE id=? AND claimed_by=?",
            [(now, i, token) for i in ids],
        )


async def release(store: Any, ids: Sequence[str], token: str) -> None:
    async with store.transaction() as db:
        await db.executemany(
            f"UPDATE notifications SET {_RELEASE} WHERE id=? AND claimed_by=?",
            [(i, token) for i in ids],
        )


async def mark_failed_attempt(
    store: Any, ids: Sequence[str], token: str, error: BaseException, now: float, *, digest: bool
) -> None:
    """Count a failed send; retry later (the digest or the delivery), or end as ``failed``."""
    message = f"{type(error).__name__}: {error}"[:2000]
    retry_column = "summary_at" if digest else "deliver_at"
    async with store.transaction() as db:
        for notification_id in ids:
            rows = await db.execute_fetchall(
                "SELECT delivery_attempts FROM notifications WHERE id=? AND claimed_by=?",
                (notification_id, token),
            )
            if not rows:
                continue
            attempts = rows[0][0] + 1
            if attempts >= MAX_DELIVERY_ATTEMPTS:
                await db.execute(
                    "UPDATE notifications SET status=CASE WHEN status='pending' THEN 'failed'"
                    " ELSE status END, failed_at=?, updated_at=?, delivery_attempts=?,"
                    f" last_delivery_error=?, {_RELEASE} WHERE id=?",
                    (now, now, attempts, message, notification_id),
                )
                continue
            await db.execute(
                f"UPDATE notifications SET {retry_column}=?, delivery_attempts=?,"
                f" last_delivery_error=?, updated_at=?, {_RELEASE} WHERE id=?",
                (now + backoff_s(attempts), attempts, message, now, notification_id),
            )
