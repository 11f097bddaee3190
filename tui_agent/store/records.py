"""Every record a store takes or returns, independent of the store behind it (SQLite today,
PostgreSQL next): the rows it returns (pydantic, every time a timezone-aware UTC datetime) and
the plain records it is given (``EventIn``, ``MessageIn``, ``SignalIn``). The contract they
belong to is ``tui_agent.store.contract.Store``; ``tests/test_store_contract.py`` checks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tui_agent.store.codec import loads, new_id


def to_datetime(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


class Record(BaseModel):
    model_config = ConfigDict(frozen=False, extra="ignore")

    def __getitem__(self, key: str) -> Any:  # rows read like dicts too, as in the reference
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


class ThreadRecord(Record):
    id: str
    resource_id: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime


class MessageRecord(Record):
    id: str
    thread_id: str
    resource_id: str
    role: str
    content: Any
    run_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    seq: int = 0


class RunRecord(Record):
    id: str
    thread_id: str
    resource_id: str
    agent_id: str | None = None
    owner: str | None = None
    status: str  # running | finished | aborted | failed | interrupted
    start_seq: int | None = None
    finish_reason: str | None = None
    error: str | None = None
    scores: Any = None
    started_at: datetime
    ended_at: datetime | None = None


class ActiveRun(Record):
    run_id: str
    owner: str
    start_seq: int | None
    expires_at: datetime
    abort_requested: bool = False


# -- the state lanes ----------------------------------------------------------------------------

LaneMode = Literal["snapshot", "delta"]


class StateLane(Record):
    """A lane as of its current version."""

    thread_id: str
    id: str
    version: int
    mode: LaneMode
    cache_key: str
    value: Any = None
    updated_at: datetime


class StateLaneVersion(StateLane):
    """One entry of a lane's history: the lane as of ``version``, plus the delta that made it."""

    delta: Any = None
    contents: str | None = None


# -- the notification inbox ---------------------------------------------------------------------

NOTIFICATION_STATUSES: tuple[str, ...] = (
    "pending", "delivered", "seen", "dismissed", "archived", "discarded", "failed",
)


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


# -- what a store is given ----------------------------------------------------------------------


@dataclass(slots=True)
class EventIn:
    """An event to append to a thread's log. ``type`` is the chunk type a reader sees."""

    type: str
    payload: Any = None
    run_id: str | None = None
    source: str = "AGENT"


@dataclass(slots=True)
class MessageIn:
    role: str
    content: Any
    run_id: str | None = None
    id: str = field(default_factory=new_id)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SignalIn:
    """A signal as routed: ``message`` is the model-facing message (already rendered with the
    attributes of the branch taken); ``data`` is the signal itself, echoed to subscribers."""

    id: str
    type: str
    message: dict[str, Any]
    data: dict[str, Any]
    #: ``dumps(message)`` and ``dumps(data)`` when the sender built them already (the plain-text
    #: fast path of a burst): the writer's thread then stores them without encoding again.
    message_json: str | None = None
    data_json: str | None = None


@dataclass(slots=True)
class RouteResult:
    action: str  # wake | deliver | persist | discard
    run_id: str | None = None


@dataclass(slots=True)
class FinishOutcome:
    finished: bool  # False: signals arrived meanwhile, the run must continue
    next_run_id: str | None = None  # a queued message starts this run (lease kept)


def signal_message(signal: dict[str, Any], run_id: str | None) -> MessageIn:
    """The stored user message of a delivered or persisted signal."""
    return MessageIn(
        role="user",
        content=signal["message"].get("content"),
        run_id=run_id,
        metadata={
            "signal_id": signal["id"],
            "signal_type": signal["type"],
            "signal": signal["data"],
        },
    )


def event_chunk(row: Sequence[Any]) -> dict[str, Any]:
    """A stored event row (seq, run_id, type, source, payload, created_at) as a stream chunk."""
    seq, run_id, type_, source, payload, _created = row
    return {"type": type_, "run_id": run_id, "from": source, "payload": loads(payload), "seq": seq}
