"""Every record a store takes or returns, independent of the store behind it (SQLite today,
PostgreSQL next): the rows it returns (pydantic, every time a timezone-aware UTC datetime) and
the plain records it is given (``EventIn``, ``MessageIn``, ``SignalIn``). The contract they
belong to is ``tui_agent.store.contract.Store``; ``tests/test_store_contract.py`` checks it.

A message is stored once: the history message and the echo of a signal are references to the
signal's row (``signal_message``, ``signal_echo``), and the readers here (``message_record``,
``event_chunk``, ``taken_signal``) give them back whole, the model message rendered from the
signal's data (``model_message_of``, rendered by the signals layer: the store renders
nothing itself). ``tests/test_store_once.py`` checks both stores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from tui_agent.errors import StoreError
from tui_agent.events import echo_source, echo_type
from tui_agent.store.codec import loads, time_ordered_id


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


class MessageHit(Record):
    """A message a search found (``Store.search_messages``): where it is and its searchable
    text (a signal's contents, an answer's text; at most its first 100,000 characters)."""

    seq: int
    message_id: str
    thread_id: str
    resource_id: str
    thread_title: str | None = None
    role: str
    created_at: datetime
    text: str


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


class ApprovalRecord(Record):
    """A tool call a run waits on for a person's answer (``store/approvals.py``)."""

    id: str
    thread_id: str
    resource_id: str
    run_id: str
    agent_id: str | None = None
    tool_call_id: str
    tool_name: str
    args: Any = None
    options: dict[str, Any] = Field(default_factory=dict)
    status: str  # pending | approved | declined | cancelled
    answer_args: Any = None  # the edited input an approval gave, if any
    reason: str | None = None  # a decline's reason
    answered_by: str | None = None
    taken_by: str | None = None  # the run that executed the answer
    created_at: datetime
    answered_at: datetime | None = None


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
    """An event to append to a thread's log. ``type`` is the chunk type a reader sees.

    ``signal_id`` makes it a signal's echo that refers to the stored signal: its payload is
    not stored again, a reader gets the signal's data in its place. ``message_id`` makes it
    the echo of a stored message (a ``generate()`` input): its payload is stored without
    ``contents``, which a reader gets from that message's content (:func:`event_chunk`)."""

    type: str
    payload: Any = None
    run_id: str | None = None
    source: str = "AGENT"
    signal_id: str | None = None
    message_id: str | None = None


@dataclass(slots=True)
class MessageIn:
    """A message to append. ``signal_id`` makes it the history entry of a stored signal: its
    content and ``metadata["signal"]`` are not stored again, a reader renders them from the
    signal's row (:func:`message_record`)."""

    role: str
    content: Any
    run_id: str | None = None
    id: str = field(default_factory=time_ordered_id)  # a burst's land at the index's end
    metadata: dict[str, Any] = field(default_factory=dict)
    signal_id: str | None = None


class SignalIn:
    """A signal as routed: ``message`` is the model-facing message (already rendered with the
    attributes of the branch taken); ``data`` is the signal itself, echoed to subscribers.

    ``data_json`` is ``dumps(data)`` when the sender built it already (the plain-text fast path
    of a burst): the store writes it without encoding again, and ``data`` may then be left out
    (None: it is parsed from the JSON if someone asks). ``derived_message`` says ``message`` is
    what :func:`model_message_of` renders from ``data`` (the router's signals): the store keeps
    only ``data`` and renders the message when it is read, so the text is stored once; such a
    message may be left out too (rendered if asked for). Otherwise ``message`` is stored as
    given."""

    __slots__ = ("_data", "_message", "data_json", "derived_message", "id", "type")

    def __init__(
        self,
        id: str,
        type: str,
        message: dict[str, Any] | None,
        data: dict[str, Any] | None,
        data_json: str | None = None,
        derived_message: bool = False,
    ) -> None:
        if data is None and data_json is None:
            raise ValueError("a SignalIn needs its data, or its data_json")
        if message is None and not derived_message:
            raise ValueError("a SignalIn needs its message unless it is derived from the data")
        self.id, self.type, self.data_json, self.derived_message = (
            id, type, data_json, derived_message)
        self._message, self._data = message, data

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            self._data = loads(self.data_json)
        return self._data

    @property
    def message(self) -> dict[str, Any]:
        if self._message is None:
            self._message = model_message_of(self.data)
        return self._message

    def __repr__(self) -> str:
        return f"SignalIn(id={self.id!r}, type={self.type!r}, data={self.data!r})"


@dataclass(slots=True)
class RouteResult:
    action: str  # wake | deliver | hold | persist | discard
    run_id: str | None = None
    #: A wake routed with ``claim_on_wake``: its run's start, claimed in the same transaction
    #: (``Store.claim_wake``'s answer), so the run goes to its model call with no round trip.
    started: WakeStart | None = None
    #: A queued signal's: the live run it waits behind (``run_id`` is its own run, not started
    #: yet). The sender pokes the rescuer only when that run is not its own.
    behind: str | None = None


@dataclass(slots=True)
class WakeStart:
    """What ``Store.claim_wake`` gives a woken run: its history (oldest first), the signals it
    took, and what its plan would otherwise read of the store, each its own round trip: the
    thread's model (its metadata's ``model``; None: the agent's) and the editor's overrides
    stored for the agent (None: none)."""

    history: list[MessageRecord]
    taken: list[dict[str, Any]]
    thread_model: str | None = None
    overrides: dict[str, Any] | None = None


@dataclass(slots=True)
class FinishOutcome:
    finished: bool  # False: signals arrived meanwhile, the run must continue
    next_run_id: str | None = None  # a queued message starts this run (lease kept)


#: ``signal_writes.claim_wake``'s answer as the store read it: the history rows (newest first), the
#: signals taken, the thread's metadata and the agent's stored overrides (JSON texts or None).
WakeRows = tuple[list[Any], list[dict[str, Any]], "str | None", "str | None"]


def wake_start_of(rows: WakeRows) -> WakeStart:
    """A woken run's start from the rows its claim read: the history oldest first, the
    thread's chosen model (its metadata's non-empty ``model`` string, else None) and the
    overrides decoded."""
    history, taken, metadata, overrides = rows
    meta: Any = loads(metadata) if metadata else None
    model = cast("dict[str, Any]", meta).get("model") if isinstance(meta, dict) else None
    return WakeStart(
        [message_record(row) for row in reversed(history)], taken,
        model if isinstance(model, str) and model else None,
        None if overrides is None else loads(overrides))


def signal_message(signal_id: str, signal_type: str, run_id: str | None) -> MessageIn:
    """The stored user message of a delivered or persisted signal: a reference to the signal's
    row (its text is stored once, there), rendered by :func:`message_record` when read."""
    metadata = {"signal_id": signal_id, "signal_type": signal_type}
    return MessageIn("user", None, run_id, metadata=metadata, signal_id=signal_id)


def signal_echo(signal_id: str, signal_type: str, run_id: str | None) -> EventIn:
    """The echo of a delivered or persisted signal: a reference to the signal's row, whose
    data a reader gets as the payload (:func:`event_chunk`)."""
    return EventIn(echo_type(signal_type), None, run_id, echo_source(signal_type), signal_id)


#: Renders a stored signal's model message from its data. The store renders nothing itself:
#: the signals layer, which owns what the model sees, installs it when it is loaded
#: (``tui_agent.signals.stored.model_message_of``).
_signal_renderer: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def install_signal_renderer(render: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Set how a stored signal's model message is rendered from its data when read."""
    global _signal_renderer
    _signal_renderer = render


def model_message_of(data: dict[str, Any]) -> dict[str, Any]:
    """The model message of a stored signal, from its data (see :func:`install_signal_renderer`)."""
    render = _signal_renderer
    if render is None:  # nothing above the store is loaded: no agent, memory or signals
        raise StoreError(
            "a stored signal's model message is rendered by tui_agent.signals, which is not "
            "loaded: import tui_agent.signals (or tui_agent.memory) before reading signals"
        )
    return render(data)


def stored_message(message: str | None, data: Any) -> dict[str, Any]:
    """A signal row's model message: as stored, or (``null``: a derived message, see
    ``SignalIn.derived_message``) rendered from its data."""
    stored = None if message is None else loads(message)
    return stored if stored is not None else model_message_of(data)


def taken_signal(
    signal_id: str, signal_type: str, message: str | None, data: str
) -> dict[str, Any]:
    """A signal as a run takes it, from its row (``message`` and ``data`` as stored)."""
    loaded = loads(data)
    return {"id": signal_id, "type": signal_type, "data": loaded,
            "message": stored_message(message, loaded)}


def message_record(row: Sequence[Any]) -> MessageRecord:
    """A row (seq, id, thread_id, resource_id, role, content, run_id, metadata, created_at,
    then the data and model message of the signal it refers to, NULL for any other message) as
    a record: the message of a signal gets its content and ``metadata["signal"]`` from the
    signal's row; a message written before the text was stored once keeps its own copies."""
    metadata: dict[str, Any] = loads(row[7]) or {}
    content = loads(row[5])
    if row[9] is not None:
        data = loads(row[9])
        content = stored_message(row[10], data).get("content")
        metadata["signal"] = data
    return MessageRecord(
        seq=row[0], id=row[1], thread_id=row[2], resource_id=row[3], role=row[4],
        content=content, run_id=row[6], metadata=metadata,
        created_at=datetime.fromtimestamp(row[8], UTC),
    )


def event_chunk(row: Sequence[Any]) -> dict[str, Any]:
    """A stored event row (seq, run_id, type, source, payload, created_at, referred message's
    content) as a stream chunk. ``payload`` is the referred signal's data for a signal's echo
    stored as a reference (the reader selects it in its place); the echo of a stored message
    gets that message's content as its ``contents``."""
    seq, run_id, type_, source, payload, _created, message_content = row
    loaded = loads(payload)
    if message_content is not None:
        loaded["contents"] = loads(message_content)
    return {"type": type_, "run_id": run_id, "from": source, "payload": loaded, "seq": seq}


# -- a thread whole, out of one store and into another (Store.export_thread / import_thread) --


class Archived(BaseModel):
    """A part of a :class:`ThreadArchive`: unknown fields are refused (a file that is not an
    export is told apart from one)."""

    model_config = ConfigDict(extra="forbid")


class ArchivedMessage(Archived):
    """A message as stored: a signal's history message keeps its reference (``signal_id``, no
    content of its own), as the store does."""

    id: str
    role: str
    content: Any = None
    run_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    signal_id: str | None = None
    created_at: datetime


class ArchivedSignal(Archived):
    """A signal as stored: its data (``attributes`` name its author: ``name``, ``from``) and
    its model message (None: rendered from the data when read)."""

    id: str
    type: str
    status: str
    run_id: str | None = None
    message: Any = None
    data: Any = None
    created_at: datetime
    delivered_at: datetime | None = None


class ArchivedRun(Archived):
    id: str
    agent_id: str | None = None
    owner: str | None = None
    status: str
    finish_reason: str | None = None
    error: str | None = None
    scores: Any = None
    started_at: datetime
    ended_at: datetime | None = None


class ArchivedLaneVersion(Archived):
    version: int
    mode: LaneMode
    cache_key: str
    value: Any = None
    delta: Any = None
    contents: str | None = None
    updated_at: datetime


class ArchivedLane(Archived):
    """A state lane: its current version and its whole history, oldest first."""

    id: str
    version: int
    mode: LaneMode
    cache_key: str
    value: Any = None
    updated_at: datetime
    history: list[ArchivedLaneVersion] = Field(default_factory=list[ArchivedLaneVersion])


class ArchivedThread(Archived):
    id: str
    resource_id: str
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime


class ArchivedNotification(NotificationRecord):
    model_config = ConfigDict(extra="forbid")


class ThreadArchive(Archived):
    """A thread whole, as one store keeps it and another takes it back: its messages in order,
    its signals, runs, state lanes with every version, and its notification inbox. Store
    specific numbers (row ``seq``s) are left out, so a thread imported elsewhere exports the
    same archive."""

    thread: ArchivedThread
    messages: list[ArchivedMessage] = Field(default_factory=list[ArchivedMessage])
    signals: list[ArchivedSignal] = Field(default_factory=list[ArchivedSignal])
    runs: list[ArchivedRun] = Field(default_factory=list[ArchivedRun])
    state_lanes: list[ArchivedLane] = Field(default_factory=list[ArchivedLane])
    notifications: list[ArchivedNotification] = Field(
        default_factory=list[ArchivedNotification])
