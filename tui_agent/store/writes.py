"""The write transactions of the thread log, leases and signals' rows, written once for both
stores (routing a signal and a run's claim of its signals: ``signal_writes.py``).

Each is a generator: it yields the statements it runs (a ``Statement``, in its dialect's
spelling: ``statements.py``, ``dialect.py``) and is sent each one's result (the rows, or how
many rows a statement touched), so the same decision logic runs on either engine: SQLite runs it
whole on its connection's thread, inside ``BEGIN IMMEDIATE`` (``txn.py``: one round trip from
the event loop per transaction, and group commit); PostgreSQL awaits each statement on a pooled
connection (``postgres_txn.py``), having first taken the thread's advisory lock (:func:`lock`),
so such transactions on one thread run one after another there too.

Fenced run writes: every write a run makes (a fenced append, claiming signals, its end) checks,
in the same transaction, that the lease row still names the run (:func:`check_lease`); a stale
run's write raises ``LeaseLostError`` and stores nothing. Checked by the contract suite on both
stores (``tests/test_store_contract.py``), ``tests/test_fencing.py``, ``tests/test_rescue.py``
and ``tests/test_group_commit.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

from tui_agent.errors import LeaseLostError, StoreError
from tui_agent.events import DATA_SUPERSEDED, FROM_AGENT, FROM_SYSTEM, INTERRUPTED, START
from tui_agent.store.codec import dumps, loads, new_id
from tui_agent.store.dialect import Dialect
from tui_agent.store.reads import RESUME
from tui_agent.store.records import (
    EventIn,
    FinishOutcome,
    MessageIn,
    SignalIn,
    signal_echo,
    signal_message,
    taken_signal,
)
from tui_agent.store.roles import Row
from tui_agent.store.statements import Statement, Txn, execute, lock, query

# -- threads, messages, events ----------------------------------------------------------------


def ensure_thread(
    d: Dialect, thread_id: str, resource_id: str, title: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Txn[None]:
    """Create the thread, or update the title/metadata given. A thread belongs to one
    resource: asking for it under another is an error."""
    now = time.time()
    inserted: list[Row] = yield query(
        d, "INSERT INTO threads(id, resource_id, title, metadata, created_at, updated_at)"
        " VALUES (?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING RETURNING 1",
        thread_id, resource_id, title, dumps(metadata or {}), now, now,
    )
    if inserted:
        return
    owner: list[Row] = yield query(d, "SELECT resource_id FROM threads WHERE id=?", thread_id)
    if owner[0][0] != resource_id:
        raise StoreError(
            f"thread {thread_id!r} belongs to resource {owner[0][0]!r}, not {resource_id!r}"
        )
    if title is not None or metadata is not None:
        yield from update_thread(d, thread_id, title, metadata)


def update_thread(
    d: Dialect,
    thread_id: str,
    title: str | None,
    metadata: dict[str, Any] | None,
    unset: tuple[str, ...] = (),
) -> Txn[None]:
    """Set the title given; merge ``metadata`` into the thread's, as the reference's
    updateThread does (its keys replace theirs, the others are kept), then drop the keys
    ``unset``. The first statement locks the thread's row (PostgreSQL; SQLite's writer is one
    transaction at a time), so two processes merging keys of one thread both keep theirs
    (tests/test_agent_memory.py)."""
    found: list[Row] = yield query(
        d, "UPDATE threads SET updated_at=? WHERE id=? RETURNING metadata", time.time(), thread_id
    )
    if not found:
        raise StoreError(f"no thread {thread_id!r}")
    sets: list[str] = []
    args: list[object] = []
    if title is not None:
        sets.append("title=?")
        args.append(title)
    if metadata is not None or unset:
        stored: dict[str, Any] = loads(found[0][0]) or {}
        merged = {**stored, **(metadata or {})}
        for key in unset:
            merged.pop(key, None)
        sets.append("metadata=?")
        args.append(dumps(merged))
    if sets:
        yield execute(d, f"UPDATE threads SET {', '.join(sets)} WHERE id=?", *args, thread_id)


_INSERT_MESSAGE: Final = (
    "INSERT INTO messages(id, thread_id, resource_id, role, content, run_id, metadata,"
    " created_at, signal_id) VALUES (?,?,?,?,?,?,?,?,?)"
)
_INSERT_EVENT: Final = (
    "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
    " VALUES (?,?,?,?,?,?)"
)
_INSERT_EVENT_REFERRING: Final = (
    "INSERT INTO events(thread_id, run_id, type, source, payload, created_at, signal_id,"
    " message_id) VALUES (?,?,?,?,?,?,?,?)"
)


def append(
    d: Dialect, thread_id: str, resource_id: str, messages: Sequence[MessageIn],
    events: Sequence[EventIn],
) -> Txn[None]:
    now = time.time()
    if messages:
        yield Statement(d.sql(_INSERT_MESSAGE), [
            (m.id, thread_id, resource_id, m.role, dumps(m.content), m.run_id,
             dumps(m.metadata), now, m.signal_id)
            for m in messages
        ], many=True)
        yield execute(d, "UPDATE threads SET updated_at=? WHERE id=?", now, thread_id)
    if not events:
        return
    # Most batches (a run's deltas) refer to nothing: without the two reference columns their
    # insert is ~20% cheaper on SQLite.
    if any(e.signal_id is not None or e.message_id is not None for e in events):
        yield Statement(d.sql(_INSERT_EVENT_REFERRING), [
            (thread_id, e.run_id, e.type, e.source, dumps(e.payload), now, e.signal_id,
             e.message_id)
            for e in events
        ], many=True)
        return
    yield Statement(d.sql(_INSERT_EVENT), [
        (thread_id, e.run_id, e.type, e.source, dumps(e.payload), now) for e in events
    ], many=True)


def append_as_run(
    d: Dialect, thread_id: str, resource_id: str, messages: Sequence[MessageIn],
    events: Sequence[EventIn], fence: str | None = None,
) -> Txn[None]:
    """:func:`append` under the thread's lock, refused (``LeaseLostError``) unless run
    ``fence``, if given, holds the thread's lease."""
    yield from lock(d, thread_id)
    if fence is not None:
        yield from check_lease(d, thread_id, fence)
    yield from append(d, thread_id, resource_id, messages, events)


def supersede_messages(
    d: Dialect, thread_id: str, message_ids: Sequence[str], by: str
) -> Txn[list[str]]:
    """Mark the thread's messages ``message_ids`` superseded (``metadata["superseded"]``:
    ``{"by", "at"}``) and log a ``data-superseded`` event naming them, for every subscriber.
    Messages of other threads, unknown ids and those marked before are left alone (no event
    when none is left). Returns the ids marked."""
    yield from lock(d, thread_id)
    if not message_ids:
        return []
    marks = ",".join("?" * len(message_ids))
    found: list[Row] = yield query(
        d, f"SELECT id, metadata, run_id FROM messages WHERE thread_id=? AND id IN ({marks})",
        thread_id, *message_ids,
    )
    now = time.time()
    metadata: dict[str, dict[str, Any]] = {str(row[0]): loads(row[1]) or {} for row in found}
    run_of = {str(row[0]): row[2] for row in found}
    marked = [m for m in message_ids if m in metadata and "superseded" not in metadata[m]]
    if not marked:
        return []
    yield Statement(d.sql("UPDATE messages SET metadata=? WHERE id=?"), [
        (dumps({**metadata[m], "superseded": {"by": by, "at": now}}), m) for m in marked
    ], many=True)
    # A live view knows an answer by its run and a message by its signal, not by message id.
    payload = {
        "message_ids": marked, "by": by,
        "run_ids": sorted({str(run_of[m]) for m in marked if run_of[m]}),
        "signal_ids": [str(metadata[m]["signal_id"]) for m in marked
                       if metadata[m].get("signal_id")],
    }
    event = EventIn(DATA_SUPERSEDED, payload, None, FROM_SYSTEM)
    yield from append(d, thread_id, "", [], [event])
    return marked


# -- runs and leases --------------------------------------------------------------------------


def check_lease(d: Dialect, thread_id: str, run_id: str) -> Txn[None]:
    """The fence, checked inside the transaction of every write a run makes: the run must
    still hold the thread's lease. The run id is the fencing token: each grant of a lease
    mints a new run (the ``runs`` primary key keeps ids unique), so a run whose lease was
    reaped or handed to another run can never match again."""
    found: list[Row] = yield query(d, "SELECT run_id FROM leases WHERE thread_id=?", thread_id)
    holder = found[0][0] if found else None
    if holder != run_id:
        named = "no run" if holder is None else f"run {holder}"
        raise LeaseLostError(
            f"run {run_id} lost the lease of thread {thread_id!r} ({named} holds it now):"
            " its write was refused"
        )


def live_lease(d: Dialect, thread_id: str) -> Txn[tuple[str, str] | None]:
    """(run_id, owner) of the live lease; an expired lease is reaped on the way."""
    found: list[Row] = yield query(
        d, "SELECT run_id, owner, expires_at > {now} FROM leases WHERE thread_id=?",
        *d.now_args(), thread_id,
    )
    if not found:
        return None
    run_id, owner, live = found[0]
    if live or (yield from held(d, run_id)):
        return run_id, owner  # held: the run waits for an answer, its owner may be gone
    yield from interrupt(d, thread_id, run_id)
    return None


def held(d: Dialect, run_id: str) -> Txn[bool]:
    """The run waits for an answer to a tool call (``tool_approvals``, not taken yet): its
    thread stays its own though its lease expired, until the answer is taken (by it, or by
    whoever takes it over: ``store/approvals.py``)."""
    found: list[Row] = yield query(
        d, "SELECT 1 FROM tool_approvals WHERE run_id=? AND taken_by IS NULL LIMIT 1", run_id
    )
    return bool(found)


def close_approvals(d: Dialect, run_id: str) -> Txn[None]:
    """A run ends: the tool calls it still waited on are cancelled (no run will execute an
    answer to them), the answered ones it never took are marked taken."""
    yield execute(
        d, "UPDATE tool_approvals SET status=CASE WHEN status='pending' THEN 'cancelled'"
        " ELSE status END, taken_by=? WHERE run_id=? AND taken_by IS NULL",
        run_id, run_id,
    )


def interrupt(d: Dialect, thread_id: str, run_id: str) -> Txn[None]:
    """The owner of ``run_id`` stopped renewing its lease (it died): end the run."""
    yield execute(d, "DELETE FROM leases WHERE thread_id=?", thread_id)
    yield execute(
        d, "UPDATE runs SET status='interrupted', finish_reason='interrupted', ended_at=?"
        " WHERE id=? AND status='running'",
        time.time(), run_id,
    )
    payload = {"reason": "interrupted", "detail": "the run's owner stopped renewing its lease"}
    yield from append(d, thread_id, "", [], [EventIn(INTERRUPTED, payload, run_id)])


def reap_expired(d: Dialect, thread_id: str) -> Txn[bool]:
    yield from lock(d, thread_id)
    found: list[Row] = yield query(
        d, "SELECT run_id, expires_at > {now} FROM leases WHERE thread_id=?",
        *d.now_args(), thread_id,
    )
    if not found or found[0][1] or (yield from held(d, found[0][0])):
        return False  # renewed, reaped by someone else meanwhile, or waiting for an answer
    yield from interrupt(d, thread_id, found[0][0])
    return True


def begin_run(
    d: Dialect, thread_id: str, resource_id: str, run_id: str, owner: str, ttl_s: float,
    agent_id: str | None,
) -> Txn[None]:
    now = time.time()
    yield execute(
        d, "INSERT INTO leases(thread_id, run_id, owner, expires_at, abort_requested)"
        " VALUES (?,?,?,{now} + ?,false) ON CONFLICT (thread_id) DO UPDATE SET"
        " run_id=excluded.run_id, owner=excluded.owner, expires_at=excluded.expires_at,"
        " abort_requested=false",
        thread_id, run_id, owner, *d.now_args(), float(ttl_s),
    )
    start: list[Row] = yield query(
        d, f"{_INSERT_EVENT} RETURNING seq",
        thread_id, run_id, START, FROM_AGENT, dumps({"agent_id": agent_id}), now,
    )
    yield execute(
        d, "INSERT INTO runs(id, thread_id, resource_id, agent_id, owner, status, start_seq,"
        " started_at) VALUES (?,?,?,?,?,'running',?,?)",
        run_id, thread_id, resource_id, agent_id, owner, start[0][0], now,
    )


def start_run(
    d: Dialect, thread_id: str, resource_id: str, run_id: str, owner: str, ttl_s: float,
    agent_id: str | None, title: str | None, metadata: dict[str, Any] | None,
) -> Txn[bool]:
    yield from lock(d, thread_id)
    yield from ensure_thread(d, thread_id, resource_id, title, metadata)
    if (yield from live_lease(d, thread_id)) is not None:
        return False
    yield from begin_run(d, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
    return True


def renew_lease(
    d: Dialect, thread_id: str, run_id: str, owner: str, ttl_s: float
) -> Txn[tuple[bool, bool]]:
    """One statement: extend our lease. Returns (still ours, abort requested)."""
    found: list[Row] = yield query(
        d, "UPDATE leases SET expires_at={now} + ? WHERE thread_id=? AND run_id=? AND owner=?"
        " RETURNING abort_requested",
        *d.now_args(), float(ttl_s), thread_id, run_id, owner,
    )
    return (False, False) if not found else (True, bool(found[0][0]))


def finish_run(
    d: Dialect, thread_id: str, resource_id: str, run_id: str, owner: str, status: str,
    finish_reason: str | None, error: str | None, messages: Sequence[MessageIn],
    events: Sequence[EventIn], force: bool, keep_pending: bool = False, resume: bool = False,
) -> Txn[FinishOutcome]:
    """Fenced; ``keep_pending`` leaves the waiting signals for a rescue (``resume``: with a
    marker pending, for signals taken but never answered). See the contract."""
    yield from lock(d, thread_id)
    yield from check_lease(d, thread_id, run_id)
    if not force and (yield from count_pending(d, thread_id)):
        return FinishOutcome(finished=False)
    yield from append(d, thread_id, resource_id, messages, events[:-1])
    if force and not keep_pending:
        yield from take_pending(d, thread_id, resource_id, run_id, "persisted")
    yield from append(d, thread_id, resource_id, [], events[-1:])
    yield execute(
        d, "UPDATE runs SET status=?, finish_reason=?, error=?, ended_at=? WHERE id=?",
        status, finish_reason, error, time.time(), run_id,
    )
    yield from close_approvals(d, run_id)
    if keep_pending and resume:
        marker = SignalIn(new_id(), RESUME, {}, {})
        yield from insert_signal(d, thread_id, resource_id, marker, "pending", run_id)
    next_run_id = None if keep_pending else (yield from start_next_queued(d, thread_id, owner))
    if next_run_id is None:
        yield execute(d, "DELETE FROM leases WHERE thread_id=? AND run_id=?", thread_id, run_id)
    return FinishOutcome(finished=True, next_run_id=next_run_id)


def rescue_stranded(
    d: Dialect, thread_id: str, owner: str, ttl_s: float, agent_id: str | None
) -> Txn[tuple[str, str] | None]:
    """Signals waiting with no live run to take them (their run's owner died, or exited while
    they waited): reap the dead lease, then take the lease for a new run that answers the
    pending ones, or for the first queued one's own run. (run id, resource id), or None if
    nothing is stranded, a live run holds the thread, or another agent ran it last."""
    yield from lock(d, thread_id)
    if (yield from live_lease(d, thread_id)) is not None:
        return None
    last: list[Row] = yield query(
        d, "SELECT agent_id FROM runs WHERE thread_id=? ORDER BY started_at DESC LIMIT 1",
        thread_id,
    )
    if last and last[0][0] not in (None, agent_id):
        return None
    pending: list[Row] = yield query(
        d, "SELECT resource_id FROM signals WHERE thread_id=? AND status='pending' LIMIT 1",
        thread_id,
    )
    if not pending:
        queued = yield from start_next_queued(d, thread_id, owner, ttl_s)
        if queued is None:
            return None
        resource: list[Row] = yield query(
            d, "SELECT resource_id FROM threads WHERE id=?", thread_id
        )
        return queued, str(resource[0][0]) if resource else ""
    resource_id = str(pending[0][0])
    run_id = new_id()
    yield from begin_run(d, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
    yield execute(
        d, "UPDATE signals SET run_id=? WHERE thread_id=? AND status='pending'", run_id, thread_id
    )
    return run_id, resource_id


def start_next_queued(
    d: Dialect, thread_id: str, owner: str, ttl_s: float | None = None
) -> Txn[str | None]:
    """Start the first queued signal's own run under the thread's lease, for ``ttl_s`` (None:
    what is left of the current lease)."""
    found: list[Row] = yield query(
        d, "SELECT id, run_id, resource_id FROM signals WHERE thread_id=? AND status='queued'"
        " ORDER BY seq LIMIT 1",
        thread_id,
    )
    if not found:
        return None
    signal_id, run_id, resource_id = found[0]
    yield execute(d, "UPDATE signals SET status='pending' WHERE id=?", signal_id)
    if ttl_s is None:
        left: list[Row] = yield query(
            d, "SELECT expires_at - {now} FROM leases WHERE thread_id=?",
            *d.now_args(), thread_id,
        )
        ttl_s = max(1.0, float(left[0][0])) if left else 15.0
    yield from begin_run(d, thread_id, resource_id, run_id, owner, ttl_s, None)
    return str(run_id)


# -- signals ----------------------------------------------------------------------------------


def count_pending(d: Dialect, thread_id: str) -> Txn[int]:
    found: list[Row] = yield query(
        d, "SELECT COUNT(*) FROM signals WHERE thread_id=? AND status='pending'", thread_id
    )
    return int(found[0][0])


_INSERT_SIGNAL: Final = (
    "INSERT INTO signals(id, thread_id, resource_id, type, status, run_id, message, data,"
    " created_at) VALUES (?,?,?,?,?,?,?,?,?)"
)
_SIGNAL_COLUMNS: Final = ("signals", (
    "id", "thread_id", "resource_id", "type", "status", "run_id", "message", "data", "created_at"))
_INSERT_SIGNAL_DATA: Final = "INSERT INTO signal_data(id, data) VALUES (?,?)"
SignalRow = tuple[str, str, str, str, str, "str | None", str, str, float]


def signal_row(
    d: Dialect, thread_id: str, resource_id: str, signal: SignalIn, status: str,
    run_id: str | None, now: float, spilled: list[tuple[str, str]],
) -> SignalRow:
    """The ``signals`` row of ``signal``. A derived model message is not stored (``null``): it
    is rendered from the data when read, so the text is stored once. Where the dialect keeps
    large data out of line (``Dialect.spill_chars``), a large one is appended to ``spilled``
    (rows of ``signal_data``) instead."""
    data = signal.data_json or dumps(signal.data)
    if d.spill_chars is not None and len(data) > d.spill_chars:
        spilled.append((signal.id, data))
        data = "null"
    message = "null" if signal.derived_message else dumps(signal.message)
    return (signal.id, thread_id, resource_id, signal.type, status, run_id, message, data, now)


def write_signal_rows(
    d: Dialect, rows: list[SignalRow], spilled: list[tuple[str, str]]
) -> Txn[None]:
    if rows:
        yield Statement(d.sql(_INSERT_SIGNAL), rows, many=True, copy_into=_SIGNAL_COLUMNS)
    if spilled:
        yield Statement(d.sql(_INSERT_SIGNAL_DATA), spilled, many=True)


def insert_signal(
    d: Dialect, thread_id: str, resource_id: str, signal: SignalIn, status: str,
    run_id: str | None,
) -> Txn[None]:
    spilled: list[tuple[str, str]] = []
    row = signal_row(d, thread_id, resource_id, signal, status, run_id, time.time(), spilled)
    yield from write_signal_rows(d, [row], spilled)


def take_pending(
    d: Dialect, thread_id: str, resource_id: str, run_id: str, status: str
) -> Txn[list[dict[str, Any]]]:
    """Mark the thread's pending signals ``status`` for ``run_id``; store each as a user
    message and an echo, both references to the signal's row (its text is stored once).
    Returns them in arrival order, their model message rendered."""
    found: list[Row] = yield query(
        d, "SELECT s.id, s.type, s.message, {signal_data} FROM signals s WHERE s.thread_id=?"
        " AND s.status='pending' ORDER BY s.seq",
        thread_id,
    )
    if not found:
        return []
    yield execute(
        d, "UPDATE signals SET status=?, run_id=?, delivered_at=? WHERE thread_id=? AND"
        " status='pending'",
        status, run_id, time.time(), thread_id,
    )
    taken = [
        taken_signal(sid, type_, message, data)
        for sid, type_, message, data in found
        if type_ != RESUME  # a marker: taken, nothing stored
    ]
    yield from append(
        d, thread_id, resource_id,
        [signal_message(s["id"], s["type"], run_id) for s in taken],
        [signal_echo(s["id"], s["type"], run_id) for s in taken],
    )
    return taken


