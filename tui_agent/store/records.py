"""Typed rows the store returns. Every time is a timezone-aware UTC datetime."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
