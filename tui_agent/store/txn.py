"""The store's write transactions, as plain functions on a ``sqlite3.Connection``.

Each runs whole inside the connection's worker thread (see ``SqliteStore.write``): one round
trip from the event loop per transaction instead of one per statement. They are called inside
``BEGIN IMMEDIATE``, so every decision they take holds across processes.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from tui_agent.errors import LeaseLostError, StoreError
from tui_agent.events import FINISH, FROM_AGENT, INTERRUPTED, START
from tui_agent.store.codec import dumps, new_id
from tui_agent.store.records import (
    EventIn,
    FinishOutcome,
    MessageIn,
    RouteResult,
    SignalIn,
    signal_echo,
    signal_message,
    taken_signal,
)

Conn = sqlite3.Connection
# A marker a run cancelled at exit leaves pending when it had taken signals it never answered:
# it wakes the rescue like a signal, but is taken without storing anything, so the rescuing
# run answers what history already holds. Not a valid signal type for callers.
RESUME = "__resume__"


def in_transaction(conn: Conn, body: Any, *args: Any) -> Any:
    """Run ``body(conn, *args)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT``."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body(conn, *args)
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (I/O error, full disk)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


@dataclass(slots=True)
class Outcome:
    """What one caller's write in a group gave: its result, or the error it raised."""

    value: Any = None
    error: BaseException | None = None


Write = tuple[Any, tuple[Any, ...]]  # (body, args): body(conn, *args)


def in_group(conn: Conn, writes: list[Write]) -> list[Outcome]:
    """Run several callers' writes, in order, as ONE ``BEGIN IMMEDIATE`` … ``COMMIT`` (group
    commit). Each runs inside its own savepoint: one that raises is rolled back alone and its
    error handed back, the others still commit. If the transaction itself fails (BEGIN, COMMIT,
    a broken connection), it raises and nothing of the group is stored.

    Consecutive writes of a body that has a batch form (``BATCH_FORMS``) run as one call of it
    in one savepoint; if that raises, they are rolled back and run again one by one, so the
    error still reaches only the caller whose write caused it."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        outcomes: list[Outcome] = []
        for body, run in groupby(writes, key=itemgetter(0)):
            calls = [args for _, args in run]
            batch = BATCH_FORMS.get(body)
            if batch is not None and len(calls) > 1:
                outcomes += _batch_in_savepoint(conn, body, batch, calls)
            else:
                outcomes += [_in_savepoint(conn, body, args) for args in calls]
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (I/O error, full disk)
            conn.execute("ROLLBACK")
        raise
    return outcomes


def _in_savepoint(conn: Conn, body: Any, args: tuple[Any, ...]) -> Outcome:
    conn.execute("SAVEPOINT caller")
    try:
        value = body(conn, *args)
    except Exception as error:
        if not conn.in_transaction:  # SQLite rolled the whole group back (disk full, I/O):
            raise  # nothing of it is stored, every caller of the group hears of it
        conn.execute("ROLLBACK TO caller")
        conn.execute("RELEASE caller")
        return Outcome(error=error)
    conn.execute("RELEASE caller")
    return Outcome(value)


def _batch_in_savepoint(
    conn: Conn, body: Any, batch: Any, calls: list[tuple[Any, ...]]
) -> list[Outcome]:
    conn.execute("SAVEPOINT batch")
    try:
        values = batch(conn, calls)
    except Exception:
        if not conn.in_transaction:  # the whole group was rolled back: as in _in_savepoint
            raise
        conn.execute("ROLLBACK TO batch")
        conn.execute("RELEASE batch")
        return [_in_savepoint(conn, body, args) for args in calls]  # find whose write failed
    conn.execute("RELEASE batch")
    return [Outcome(value) for value in values]


# -- threads, messages, events ----------------------------------------------------------------


def ensure_thread(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    title: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> None:
    """Create the thread, or update the title/metadata given. A thread belongs to one
    resource: asking for it under another is an error."""
    now = time.time()
    row = conn.execute("SELECT resource_id FROM threads WHERE id=?", (thread_id,)).fetchone()
    if row is None:
        conn.execute(
            "INSERT INTO threads(id, resource_id, title, metadata, created_at, updated_at)"
            " VALUES (?,?,?,?,?,?)",
            (thread_id, resource_id, title, dumps(metadata or {}), now, now),
        )
        return
    if row[0] != resource_id:
        raise StoreError(
            f"thread {thread_id!r} belongs to resource {row[0]!r}, not {resource_id!r}"
        )
    if title is not None or metadata is not None:
        update_thread(conn, thread_id, title, metadata)


def update_thread(
    conn: Conn, thread_id: str, title: str | None, metadata: dict[str, Any] | None
) -> None:
    if conn.execute("SELECT 1 FROM threads WHERE id=?", (thread_id,)).fetchone() is None:
        raise StoreError(f"no thread {thread_id!r}")
    sets, params = ["updated_at=?"], [time.time()]
    if title is not None:
        sets.append("title=?")
        params.append(title)
    if metadata is not None:
        sets.append("metadata=?")
        params.append(dumps(metadata))
    conn.execute(f"UPDATE threads SET {', '.join(sets)} WHERE id=?", (*params, thread_id))


INSERT_EVENT = (
    "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
    " VALUES (?,?,?,?,?,?)"
)
INSERT_EVENT_REFERRING = (
    "INSERT INTO events(thread_id, run_id, type, source, payload, created_at, signal_id,"
    " message_id) VALUES (?,?,?,?,?,?,?,?)"
)


def append(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    messages: list[MessageIn],
    events: list[EventIn],
) -> None:
    now = time.time()
    if messages:
        conn.executemany(
            "INSERT INTO messages(id, thread_id, resource_id, role, content, run_id,"
            " metadata, created_at, signal_id) VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (
                    m.id,
                    thread_id,
                    resource_id,
                    m.role,
                    dumps(m.content),
                    m.run_id,
                    dumps(m.metadata),
                    now,
                    m.signal_id,
                )
                for m in messages
            ],
        )
        conn.execute("UPDATE threads SET updated_at=? WHERE id=?", (now, thread_id))
    if not events:
        return
    # Most batches (a run's deltas) refer to nothing: without the two reference columns their
    # insert is ~20% cheaper.
    if any(e.signal_id is not None or e.message_id is not None for e in events):
        conn.executemany(INSERT_EVENT_REFERRING, [
            (thread_id, e.run_id, e.type, e.source, dumps(e.payload), now, e.signal_id,
             e.message_id)
            for e in events
        ])
        return
    conn.executemany(INSERT_EVENT, [
        (thread_id, e.run_id, e.type, e.source, dumps(e.payload), now) for e in events
    ])


def append_as_run(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    messages: list[MessageIn],
    events: list[EventIn],
    fence: str | None,
) -> None:
    """:func:`append`, refused (``LeaseLostError``) unless run ``fence`` holds the lease."""
    if fence is not None:
        check_lease(conn, thread_id, fence)
    append(conn, thread_id, resource_id, messages, events)


# -- runs and leases --------------------------------------------------------------------------


def check_lease(conn: Conn, thread_id: str, run_id: str) -> None:
    """The fence, checked inside the transaction of every write a run makes: the run must
    still hold the thread's lease. The run id is the fencing token: each grant of a lease
    mints a new run (the ``runs`` primary key keeps ids unique), so a run whose lease was
    reaped or handed to another run can never match again."""
    row = conn.execute("SELECT run_id FROM leases WHERE thread_id=?", (thread_id,)).fetchone()
    if row is None or row[0] != run_id:
        holder = "no run" if row is None else f"run {row[0]}"
        raise LeaseLostError(
            f"run {run_id} lost the lease of thread {thread_id!r} ({holder} holds it now):"
            " its write was refused"
        )


def live_lease(conn: Conn, thread_id: str) -> tuple[str, str] | None:
    """(run_id, owner) of the live lease; an expired lease is reaped on the way."""
    row = conn.execute(
        "SELECT run_id, owner, expires_at FROM leases WHERE thread_id=?", (thread_id,)
    ).fetchone()
    if row is None:
        return None
    run_id, owner, expires_at = row
    if expires_at > time.time():
        return run_id, owner
    interrupt(conn, thread_id, run_id)
    return None


def interrupt(conn: Conn, thread_id: str, run_id: str) -> None:
    """The owner of ``run_id`` stopped renewing its lease (it died): end the run."""
    now = time.time()
    conn.execute("DELETE FROM leases WHERE thread_id=?", (thread_id,))
    conn.execute(
        "UPDATE runs SET status='interrupted', finish_reason='interrupted', ended_at=?"
        " WHERE id=? AND status='running'",
        (now, run_id),
    )
    payload = {"reason": "interrupted", "detail": "the run's owner stopped renewing its lease"}
    append(conn, thread_id, "", [], [EventIn(INTERRUPTED, payload, run_id)])


def reap_expired(conn: Conn, thread_id: str) -> bool:
    row = conn.execute(
        "SELECT run_id, expires_at FROM leases WHERE thread_id=?", (thread_id,)
    ).fetchone()
    if row is None or row[1] > time.time():
        return False  # renewed, or reaped by someone else, meanwhile
    interrupt(conn, thread_id, row[0])
    return True


def begin_run(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    run_id: str,
    owner: str,
    ttl_s: float,
    agent_id: str | None,
) -> None:
    now = time.time()
    conn.execute(
        "INSERT INTO leases(thread_id, run_id, owner, expires_at, abort_requested)"
        " VALUES (?,?,?,?,0)"
        " ON CONFLICT(thread_id) DO UPDATE SET run_id=excluded.run_id, owner=excluded.owner,"
        " expires_at=excluded.expires_at, abort_requested=0",
        (thread_id, run_id, owner, now + ttl_s),
    )
    cursor = conn.execute(
        "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
        " VALUES (?,?,?,?,?,?)",
        (thread_id, run_id, START, FROM_AGENT, dumps({"agent_id": agent_id}), now),
    )
    conn.execute(
        "INSERT INTO runs(id, thread_id, resource_id, agent_id, owner, status, start_seq,"
        " started_at) VALUES (?,?,?,?,?,'running',?,?)",
        (run_id, thread_id, resource_id, agent_id, owner, cursor.lastrowid, now),
    )


def start_run(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    run_id: str,
    owner: str,
    ttl_s: float,
    agent_id: str | None,
    title: str | None,
    metadata: dict[str, Any] | None,
) -> bool:
    ensure_thread(conn, thread_id, resource_id, title, metadata)
    if live_lease(conn, thread_id) is not None:
        return False
    begin_run(conn, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
    return True


def renew_lease(
    conn: Conn, thread_id: str, run_id: str, owner: str, ttl_s: float
) -> tuple[bool, bool]:
    """Extend our lease. Returns (still ours, abort requested)."""
    row = conn.execute(
        "UPDATE leases SET expires_at=? WHERE thread_id=? AND run_id=? AND owner=?"
        " RETURNING abort_requested",
        (time.time() + ttl_s, thread_id, run_id, owner),
    ).fetchone()
    return (False, False) if row is None else (True, bool(row[0]))


def finish_run(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    run_id: str,
    owner: str,
    status: str,
    finish_reason: str | None,
    error: str | None,
    messages: list[MessageIn],
    events: list[EventIn],
    force: bool,
    keep_pending: bool = False,
    resume: bool = False,
) -> FinishOutcome:
    check_lease(conn, thread_id, run_id)
    if not force and count_pending(conn, thread_id):
        return FinishOutcome(finished=False)
    append(conn, thread_id, resource_id, messages, events[:-1])
    if force and not keep_pending:
        persist_pending(conn, thread_id, resource_id, run_id)
    append(conn, thread_id, resource_id, [], events[-1:])
    conn.execute(
        "UPDATE runs SET status=?, finish_reason=?, error=?, ended_at=? WHERE id=?",
        (status, finish_reason, error, time.time(), run_id),
    )
    if keep_pending and resume:
        insert_signal(conn, thread_id, resource_id, SignalIn(new_id(), RESUME, {}, {}),
                      "pending", run_id)
    next_run_id = None if keep_pending else start_next_queued(conn, thread_id, owner)
    if next_run_id is None:
        conn.execute("DELETE FROM leases WHERE thread_id=? AND run_id=?", (thread_id, run_id))
    return FinishOutcome(finished=True, next_run_id=next_run_id)


def rescue_stranded(
    conn: Conn, thread_id: str, owner: str, ttl_s: float, agent_id: str | None
) -> tuple[str, str] | None:
    """Signals waiting with no live run to take them (their run's owner died, or exited while
    they waited): reap the dead lease, then take the lease for a new run that answers the
    pending ones, or for the first queued one's own run. (run id, resource id), or None if
    nothing is stranded, a live run holds the thread, or another agent ran it last."""
    if live_lease(conn, thread_id) is not None:
        return None
    last = conn.execute(
        "SELECT agent_id FROM runs WHERE thread_id=? ORDER BY started_at DESC LIMIT 1",
        (thread_id,),
    ).fetchone()
    if last is not None and last[0] not in (None, agent_id):
        return None
    pending = conn.execute(
        "SELECT resource_id FROM signals WHERE thread_id=? AND status='pending' LIMIT 1",
        (thread_id,),
    ).fetchone()
    if pending is None:
        queued = start_next_queued(conn, thread_id, owner, ttl_s)
        return None if queued is None else (queued, _resource_of(conn, thread_id))
    run_id = new_id()
    begin_run(conn, thread_id, pending[0], run_id, owner, ttl_s, agent_id)
    conn.execute(
        "UPDATE signals SET run_id=? WHERE thread_id=? AND status='pending'", (run_id, thread_id)
    )
    return run_id, pending[0]


def _resource_of(conn: Conn, thread_id: str) -> str:
    row = conn.execute("SELECT resource_id FROM threads WHERE id=?", (thread_id,)).fetchone()
    return str(row[0]) if row else ""


def start_next_queued(
    conn: Conn, thread_id: str, owner: str, ttl_s: float | None = None
) -> str | None:
    row = conn.execute(
        "SELECT id, run_id, resource_id FROM signals WHERE thread_id=? AND status='queued'"
        " ORDER BY seq LIMIT 1",
        (thread_id,),
    ).fetchone()
    if row is None:
        return None
    signal_id, run_id, resource_id = row
    conn.execute("UPDATE signals SET status='pending' WHERE id=?", (signal_id,))
    ttl = lease_ttl(conn, thread_id) if ttl_s is None else ttl_s
    begin_run(conn, thread_id, resource_id, run_id, owner, ttl, None)
    return run_id


def lease_ttl(conn: Conn, thread_id: str) -> float:
    row = conn.execute("SELECT expires_at FROM leases WHERE thread_id=?", (thread_id,)).fetchone()
    return max(1.0, row[0] - time.time()) if row else 15.0


# -- signals ----------------------------------------------------------------------------------


def count_pending(conn: Conn, thread_id: str) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM signals WHERE thread_id=? AND status='pending'", (thread_id,)
    ).fetchone()
    return int(row[0])


def route_signal(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    active_signal: SignalIn,
    idle_signal: SignalIn,
    if_active: str,
    if_idle: str,
    queue: bool,
    owner: str,
    ttl_s: float,
    agent_id: str | None,
) -> RouteResult:
    live = live_lease(conn, thread_id)
    if live is not None:
        return _route_active(conn, thread_id, resource_id, active_signal, if_active, queue, live[0])
    return _route_idle(conn, thread_id, resource_id, idle_signal, if_idle, owner, ttl_s, agent_id)


def _route_active(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    signal: SignalIn,
    behavior: str,
    queue: bool,
    live_run_id: str,
) -> RouteResult:
    if queue and behavior == "deliver":  # persist/discard are honoured as for a send
        run_id = new_id()
        insert_signal(conn, thread_id, resource_id, signal, "queued", run_id)
        return RouteResult("deliver", run_id)
    if behavior == "deliver":
        insert_signal(conn, thread_id, resource_id, signal, "pending", live_run_id)
        return RouteResult("deliver", live_run_id)
    if behavior == "persist":
        persist(conn, thread_id, resource_id, signal, tiny_run=False)
        return RouteResult("persist")
    return RouteResult("discard")


def _route_idle(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    signal: SignalIn,
    behavior: str,
    owner: str,
    ttl_s: float,
    agent_id: str | None,
) -> RouteResult:
    if behavior == "wake":
        ensure_thread(conn, thread_id, resource_id)
        run_id = new_id()
        begin_run(conn, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
        insert_signal(conn, thread_id, resource_id, signal, "pending", run_id)
        return RouteResult("wake", run_id)
    if behavior == "persist":
        ensure_thread(conn, thread_id, resource_id)
        persist(conn, thread_id, resource_id, signal, tiny_run=True)
        return RouteResult("persist")
    return RouteResult("discard")


INSERT_SIGNAL = (
    "INSERT INTO signals(id, thread_id, resource_id, type, status, run_id, message, data,"
    " created_at) VALUES (?,?,?,?,?,?,?,?,?)"
)
INSERT_SIGNAL_DATA = "INSERT INTO signal_data(id, data) VALUES (?,?)"
# A signal's data larger than this (characters of JSON) is stored in ``signal_data`` instead of
# its ``signals`` row: SQLite rewrites a whole row, overflow pages and all, when a run takes the
# signal (its status changes), which would leave a freed copy of a large text in the file.
SPILL_CHARS = 2048
# The data of signal row ``s``, wherever it is stored (a reader selects it by this expression).
SIGNAL_DATA = "COALESCE((SELECT b.data FROM signal_data b WHERE b.id=s.id), s.data)"


def signal_row(
    thread_id: str,
    resource_id: str,
    signal: SignalIn,
    status: str,
    run_id: str | None,
    now: float,
    spilled: list[tuple[str, str]],
) -> tuple[Any, ...]:
    """The ``signals`` row of ``signal``; large data is appended to ``spilled`` (rows of
    ``signal_data``) instead. A derived model message is not stored (``null``): it is rendered
    from the data when read, so the text is stored once."""
    data = signal.data_json or dumps(signal.data)
    if len(data) > SPILL_CHARS:
        spilled.append((signal.id, data))
        data = "null"
    message = "null" if signal.derived_message else dumps(signal.message)
    return (signal.id, thread_id, resource_id, signal.type, status, run_id, message, data, now)


def write_signal_rows(
    conn: Conn, rows: list[tuple[Any, ...]], spilled: list[tuple[str, str]]
) -> None:
    conn.executemany(INSERT_SIGNAL, rows)
    if spilled:
        conn.executemany(INSERT_SIGNAL_DATA, spilled)


def insert_signal(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    signal: SignalIn,
    status: str,
    run_id: str | None,
) -> None:
    spilled: list[tuple[str, str]] = []
    row = signal_row(thread_id, resource_id, signal, status, run_id, time.time(), spilled)
    write_signal_rows(conn, [row], spilled)


def route_signals(conn: Conn, calls: list[tuple[Any, ...]]) -> list[RouteResult]:
    """:func:`route_signal` for each of ``calls`` (its arguments), in order — the batch form
    group commit uses. The common case of a burst, signals delivered into a thread's live run,
    costs one lease lookup per thread and one ``executemany``; any other call runs as
    :func:`route_signal` does, after the rows before it are written (arrival order holds)."""
    results: list[RouteResult] = []
    rows: list[tuple[Any, ...]] = []
    spilled: list[tuple[str, str]] = []
    # thread → the decision of a delivery into its live run as this transaction sees it (None:
    # idle). One RouteResult for all the burst's deliveries into a run: it is only read.
    delivery: dict[str, RouteResult | None] = {}
    now = time.time()
    for args in calls:
        thread_id, resource_id, signal, _idle, if_active, _if_idle, queue = args[:7]
        if thread_id not in delivery:
            live = live_lease(conn, thread_id)
            delivery[thread_id] = None if live is None else RouteResult("deliver", live[0])
        delivered = delivery[thread_id]
        if delivered is not None and if_active == "deliver" and not queue:
            run_id = delivered.run_id
            rows.append(
                signal_row(thread_id, resource_id, signal, "pending", run_id, now, spilled)
            )
            results.append(delivered)
            continue
        write_signal_rows(conn, rows, spilled)
        rows, spilled = [], []
        results.append(route_signal(conn, *args))
        del delivery[thread_id]  # a wake, for one, took the lease
    write_signal_rows(conn, rows, spilled)
    return results


def persist(
    conn: Conn, thread_id: str, resource_id: str, signal: SignalIn, *, tiny_run: bool
) -> None:
    """Store the signal in history (no model call). On an idle thread subscribers see it as a
    tiny run: start, the echo, finish."""
    insert_signal(conn, thread_id, resource_id, signal, "persisted", None)
    run_id = new_id() if tiny_run else None
    message = signal_message(signal.id, signal.type, run_id)
    events = [signal_echo(signal.id, signal.type, run_id)]
    if tiny_run:
        events.insert(0, EventIn(START, {"persisted": True}, run_id))
        events.append(EventIn(FINISH, {"finish_reason": "stop", "persisted": True}, run_id))
    append(conn, thread_id, resource_id, [message], events)


def _take_pending(
    conn: Conn, thread_id: str, resource_id: str, run_id: str, status: str
) -> list[dict[str, Any]]:
    """Mark the thread's pending signals ``status`` for ``run_id``; store each as a user
    message and an echo, both references to the signal's row (its text is stored once).
    Returns them in arrival order, their model message rendered."""
    rows = conn.execute(
        f"SELECT s.id, s.type, s.message, {SIGNAL_DATA} FROM signals s WHERE s.thread_id=?"
        " AND s.status='pending' ORDER BY s.seq",
        (thread_id,),
    ).fetchall()
    if not rows:
        return []
    conn.execute(
        "UPDATE signals SET status=?, run_id=?, delivered_at=? WHERE thread_id=? AND"
        " status='pending'",
        (status, run_id, time.time(), thread_id),
    )
    taken = [
        taken_signal(sid, type_, message, data)
        for sid, type_, message, data in rows
        if type_ != RESUME  # a marker: taken, nothing stored
    ]
    append(
        conn,
        thread_id,
        resource_id,
        [signal_message(s["id"], s["type"], run_id) for s in taken],
        [signal_echo(s["id"], s["type"], run_id) for s in taken],
    )
    return taken


def persist_pending(conn: Conn, thread_id: str, resource_id: str, run_id: str) -> None:
    _take_pending(conn, thread_id, resource_id, run_id, "persisted")


def claim_signals(
    conn: Conn,
    thread_id: str,
    resource_id: str,
    run_id: str,
    messages_before: list[MessageIn],
    events_before: list[EventIn],
) -> list[dict[str, Any]]:
    check_lease(conn, thread_id, run_id)
    append(conn, thread_id, resource_id, messages_before, events_before)
    return _take_pending(conn, thread_id, resource_id, run_id, "delivered")


# Bodies whose consecutive writes in one group run as one call (see in_group).
BATCH_FORMS: dict[Any, Any] = {route_signal: route_signals}
