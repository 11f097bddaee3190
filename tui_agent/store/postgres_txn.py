"""The PostgreSQL store's write transactions, as plain async functions on an ``asyncpg``
connection inside an open transaction (``PostgresStore.write`` opens it). They mirror SQLite's
``txn.py`` step for step.

Atomic across processes and machines: every transaction that writes a thread's log, lease or
signals first takes that thread's transaction-scoped advisory lock (:func:`lock_thread`), so
such transactions on one thread run one after another. That makes the lease decision (who holds
it, whether a signal wakes or delivers) a decision of one transaction, and it keeps the event
log's ``seq`` in commit order per thread: a reader reading on from its cursor misses nothing.

Fenced run writes (as SQLite's): every write a run makes (a fenced append, claiming signals,
its end) checks, under that lock and in the same transaction, that the lease row still names the
run (:func:`check_lease`); a stale run's write raises ``LeaseLostError`` and stores nothing.
Signals stranded by a dead run are taken over by :func:`rescue_stranded`, under the same lock,
so of concurrent rescuers exactly one wins.
Checked by ``tests/test_store_contract.py`` (the ``postgres`` factory).
"""

from __future__ import annotations

import time
from typing import Any

from tui_agent.errors import LeaseLostError, StoreError
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
from tui_agent.store.txn import RESUME  # the resume marker's type, one spelling for both stores

Conn = Any  # asyncpg.Connection (asyncpg is optional: not imported here)

# Leases are timed by the server's clock, not each machine's: two machines whose clocks differ
# by more than a lease's TTL would otherwise each think the other's live run had died.
SERVER_NOW = "extract(epoch from clock_timestamp())::double precision"


async def lock_thread(conn: Conn, key: str) -> None:
    """Serialise this transaction with every other one locking ``key`` (until commit)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key)


# -- threads, messages, events ----------------------------------------------------------------


async def ensure_thread(
    conn: Conn, thread_id: str, resource_id: str, title: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> None:
    now = time.time()
    inserted = await conn.fetchval(
        "INSERT INTO threads(id, resource_id, title, metadata, created_at, updated_at)"
        " VALUES ($1,$2,$3,$4,$5,$5) ON CONFLICT (id) DO NOTHING RETURNING 1",
        thread_id, resource_id, title, dumps(metadata or {}), now,
    )
    if inserted:
        return
    owner = await conn.fetchval("SELECT resource_id FROM threads WHERE id=$1", thread_id)
    if owner != resource_id:
        raise StoreError(
            f"thread {thread_id!r} belongs to resource {owner!r}, not {resource_id!r}"
        )
    if title is not None or metadata is not None:
        await update_thread(conn, thread_id, title, metadata)


async def update_thread(
    conn: Conn, thread_id: str, title: str | None, metadata: dict[str, Any] | None
) -> None:
    sets, params = ["updated_at=$2"], [time.time()]
    if title is not None:
        params.append(title)
        sets.append(f"title=${len(params) + 1}")
    if metadata is not None:
        params.append(dumps(metadata))
        sets.append(f"metadata=${len(params) + 1}")
    updated = await conn.fetchval(
        f"UPDATE threads SET {', '.join(sets)} WHERE id=$1 RETURNING 1", thread_id, *params
    )
    if not updated:
        raise StoreError(f"no thread {thread_id!r}")


async def append(
    conn: Conn, thread_id: str, resource_id: str, messages: list[MessageIn],
    events: list[EventIn],
) -> None:
    now = time.time()
    if messages:
        await conn.executemany(
            "INSERT INTO messages(id, thread_id, resource_id, role, content, run_id, metadata,"
            " created_at, signal_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
            [(m.id, thread_id, resource_id, m.role, dumps(m.content), m.run_id,
              dumps(m.metadata), now, m.signal_id) for m in messages],
        )
        await conn.execute("UPDATE threads SET updated_at=$1 WHERE id=$2", now, thread_id)
    if events:
        await conn.executemany(
            "INSERT INTO events(thread_id, run_id, type, source, payload, created_at, signal_id,"
            " message_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
            [(thread_id, e.run_id, e.type, e.source, dumps(e.payload), now, e.signal_id,
              e.message_id) for e in events],
        )


async def locked_append(
    conn: Conn, thread_id: str, resource_id: str, messages: list[MessageIn],
    events: list[EventIn], fence: str | None = None,
) -> None:
    """:func:`append` under the thread's lock, refused (``LeaseLostError``) unless run
    ``fence``, if given, holds the thread's lease."""
    await lock_thread(conn, thread_id)
    if fence is not None:
        await check_lease(conn, thread_id, fence)
    await append(conn, thread_id, resource_id, messages, events)


# -- runs and leases --------------------------------------------------------------------------


async def check_lease(conn: Conn, thread_id: str, run_id: str) -> None:
    """The fence, checked under the thread's lock inside the transaction of every write a run
    makes: the run must still hold the thread's lease. The run id is the fencing token (each
    grant mints a new run; the ``runs`` primary key keeps ids unique), so a run whose lease was
    reaped or handed to another run can never match again."""
    holder = await conn.fetchval("SELECT run_id FROM leases WHERE thread_id=$1", thread_id)
    if holder != run_id:
        named = "no run" if holder is None else f"run {holder}"
        raise LeaseLostError(
            f"run {run_id} lost the lease of thread {thread_id!r} ({named} holds it now):"
            " its write was refused"
        )


async def live_lease(conn: Conn, thread_id: str) -> tuple[str, str] | None:
    """(run_id, owner) of the live lease; an expired lease is reaped on the way."""
    row = await conn.fetchrow(
        f"SELECT run_id, owner, expires_at > {SERVER_NOW} FROM leases WHERE thread_id=$1",
        thread_id,
    )
    if row is None:
        return None
    if row[2]:
        return row[0], row[1]
    await interrupt(conn, thread_id, row[0])
    return None


async def interrupt(conn: Conn, thread_id: str, run_id: str) -> None:
    """The owner of ``run_id`` stopped renewing its lease (it died): end the run."""
    await conn.execute("DELETE FROM leases WHERE thread_id=$1", thread_id)
    await conn.execute(
        "UPDATE runs SET status='interrupted', finish_reason='interrupted', ended_at=$1"
        " WHERE id=$2 AND status='running'",
        time.time(), run_id,
    )
    payload = {"reason": "interrupted", "detail": "the run's owner stopped renewing its lease"}
    await append(conn, thread_id, "", [], [EventIn("interrupted", payload, run_id)])


async def reap_expired(conn: Conn, thread_id: str) -> bool:
    await lock_thread(conn, thread_id)
    row = await conn.fetchrow(
        f"SELECT run_id, expires_at > {SERVER_NOW} FROM leases WHERE thread_id=$1", thread_id
    )
    if row is None or row[1]:
        return False  # renewed, or reaped by someone else, meanwhile
    await interrupt(conn, thread_id, row[0])
    return True


async def begin_run(
    conn: Conn, thread_id: str, resource_id: str, run_id: str, owner: str, ttl_s: float,
    agent_id: str | None,
) -> None:
    now = time.time()
    await conn.execute(
        "INSERT INTO leases(thread_id, run_id, owner, expires_at, abort_requested)"
        f" VALUES ($1,$2,$3,{SERVER_NOW} + $4,false) ON CONFLICT (thread_id) DO UPDATE SET"
        " run_id=excluded.run_id, owner=excluded.owner, expires_at=excluded.expires_at,"
        " abort_requested=false",
        thread_id, run_id, owner, float(ttl_s),
    )
    start_seq = await conn.fetchval(
        "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
        " VALUES ($1,$2,'start','AGENT',$3,$4) RETURNING seq",
        thread_id, run_id, dumps({"agent_id": agent_id}), now,
    )
    await conn.execute(
        "INSERT INTO runs(id, thread_id, resource_id, agent_id, owner, status, start_seq,"
        " started_at) VALUES ($1,$2,$3,$4,$5,'running',$6,$7)",
        run_id, thread_id, resource_id, agent_id, owner, start_seq, now,
    )


async def start_run(
    conn: Conn, thread_id: str, resource_id: str, run_id: str, owner: str, ttl_s: float,
    agent_id: str | None, title: str | None, metadata: dict[str, Any] | None,
) -> bool:
    await lock_thread(conn, thread_id)
    await ensure_thread(conn, thread_id, resource_id, title, metadata)
    if await live_lease(conn, thread_id) is not None:
        return False
    await begin_run(conn, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
    return True


async def renew_lease(
    conn: Conn, thread_id: str, run_id: str, owner: str, ttl_s: float
) -> tuple[bool, bool]:
    """One atomic statement: extend our lease. Returns (still ours, abort requested)."""
    row = await conn.fetchrow(
        f"UPDATE leases SET expires_at={SERVER_NOW} + $1 WHERE thread_id=$2 AND run_id=$3"
        " AND owner=$4 RETURNING abort_requested",
        float(ttl_s), thread_id, run_id, owner,
    )
    return (False, False) if row is None else (True, bool(row[0]))


async def finish_run(
    conn: Conn, thread_id: str, resource_id: str, run_id: str, owner: str, status: str,
    finish_reason: str | None, error: str | None, messages: list[MessageIn],
    events: list[EventIn], force: bool, keep_pending: bool = False, resume: bool = False,
) -> FinishOutcome:
    """As SQLite's ``txn.finish_run``: fenced; ``keep_pending`` leaves the waiting signals
    for a rescue (``resume``: with a marker pending, for signals taken but never answered)."""
    await lock_thread(conn, thread_id)
    await check_lease(conn, thread_id, run_id)
    if not force and await count_pending(conn, thread_id):
        return FinishOutcome(finished=False)
    await append(conn, thread_id, resource_id, messages, events[:-1])
    if force and not keep_pending:
        await take_pending(conn, thread_id, resource_id, run_id, "persisted")
    await append(conn, thread_id, resource_id, [], events[-1:])
    await conn.execute(
        "UPDATE runs SET status=$1, finish_reason=$2, error=$3, ended_at=$4 WHERE id=$5",
        status, finish_reason, error, time.time(), run_id,
    )
    if keep_pending and resume:
        marker = SignalIn(new_id(), RESUME, {}, {})
        await insert_signal(conn, thread_id, resource_id, marker, "pending", run_id)
    next_run_id = None if keep_pending else await start_next_queued(conn, thread_id, owner)
    if next_run_id is None:
        await conn.execute(
            "DELETE FROM leases WHERE thread_id=$1 AND run_id=$2", thread_id, run_id
        )
    return FinishOutcome(finished=True, next_run_id=next_run_id)


async def rescue_stranded(
    conn: Conn, thread_id: str, owner: str, ttl_s: float, agent_id: str | None
) -> tuple[str, str] | None:
    """Signals waiting with no live run to take them (their run's owner died, or exited while
    they waited): under the thread's lock, reap the dead lease, then take the lease for a new
    run that answers the pending ones, or for the first queued one's own run. (run id,
    resource id), or None if nothing is stranded, a live run holds the thread, or another agent
    ran it last."""
    await lock_thread(conn, thread_id)
    if await live_lease(conn, thread_id) is not None:
        return None
    last_agent = await conn.fetchrow(
        "SELECT agent_id FROM runs WHERE thread_id=$1 ORDER BY started_at DESC LIMIT 1",
        thread_id,
    )
    if last_agent is not None and last_agent[0] not in (None, agent_id):
        return None
    resource_id = await conn.fetchval(
        "SELECT resource_id FROM signals WHERE thread_id=$1 AND status='pending' LIMIT 1",
        thread_id,
    )
    if resource_id is None:
        queued = await start_next_queued(conn, thread_id, owner, ttl_s)
        return None if queued is None else (queued, await _resource_of(conn, thread_id))
    run_id = new_id()
    await begin_run(conn, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
    await conn.execute(
        "UPDATE signals SET run_id=$1 WHERE thread_id=$2 AND status='pending'", run_id, thread_id
    )
    return run_id, resource_id


async def _resource_of(conn: Conn, thread_id: str) -> str:
    resource_id = await conn.fetchval("SELECT resource_id FROM threads WHERE id=$1", thread_id)
    return "" if resource_id is None else str(resource_id)


async def start_next_queued(
    conn: Conn, thread_id: str, owner: str, ttl_s: float | None = None
) -> str | None:
    """Start the first queued signal's own run under the thread's lease, for ``ttl_s`` (None:
    what is left of the current lease)."""
    row = await conn.fetchrow(
        "SELECT id, run_id, resource_id FROM signals WHERE thread_id=$1 AND status='queued'"
        " ORDER BY seq LIMIT 1",
        thread_id,
    )
    if row is None:
        return None
    signal_id, run_id, resource_id = row
    await conn.execute("UPDATE signals SET status='pending' WHERE id=$1", signal_id)
    if ttl_s is None:
        left = await conn.fetchval(
            f"SELECT expires_at - {SERVER_NOW} FROM leases WHERE thread_id=$1", thread_id
        )
        ttl_s = max(1.0, left) if left is not None else 15.0
    await begin_run(conn, thread_id, resource_id, run_id, owner, ttl_s, None)
    return run_id


# -- signals ----------------------------------------------------------------------------------


async def count_pending(conn: Conn, thread_id: str) -> int:
    return int(await conn.fetchval(
        "SELECT COUNT(*) FROM signals WHERE thread_id=$1 AND status='pending'", thread_id
    ))


async def route_signal(
    conn: Conn, thread_id: str, resource_id: str, active_signal: SignalIn,
    idle_signal: SignalIn, if_active: str, if_idle: str, queue: bool, owner: str,
    ttl_s: float, agent_id: str | None,
) -> RouteResult:
    """Decided under the thread's lock: of concurrent wakes, exactly one finds it idle."""
    await lock_thread(conn, thread_id)
    live = await live_lease(conn, thread_id)
    if live is None:
        return await _route_idle(
            conn, thread_id, resource_id, idle_signal, if_idle, owner, ttl_s, agent_id
        )
    if queue and if_active == "deliver":  # persist/discard are honoured as for a send
        run_id = new_id()
        await insert_signal(conn, thread_id, resource_id, active_signal, "queued", run_id)
        return RouteResult("deliver", run_id)
    if if_active == "deliver":
        await insert_signal(conn, thread_id, resource_id, active_signal, "pending", live[0])
        return RouteResult("deliver", live[0])
    if if_active == "persist":
        await persist(conn, thread_id, resource_id, active_signal, tiny_run=False)
        return RouteResult("persist")
    return RouteResult("discard")


async def _route_idle(
    conn: Conn, thread_id: str, resource_id: str, signal: SignalIn, behavior: str,
    owner: str, ttl_s: float, agent_id: str | None,
) -> RouteResult:
    if behavior == "wake":
        await ensure_thread(conn, thread_id, resource_id)
        run_id = new_id()
        await begin_run(conn, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
        await insert_signal(conn, thread_id, resource_id, signal, "pending", run_id)
        return RouteResult("wake", run_id)
    if behavior == "persist":
        await ensure_thread(conn, thread_id, resource_id)
        await persist(conn, thread_id, resource_id, signal, tiny_run=True)
        return RouteResult("persist")
    return RouteResult("discard")


async def insert_signal(
    conn: Conn, thread_id: str, resource_id: str, signal: SignalIn, status: str,
    run_id: str | None,
) -> None:
    await conn.execute(
        "INSERT INTO signals(id, thread_id, resource_id, type, status, run_id, message, data,"
        " created_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
        signal.id, thread_id, resource_id, signal.type, status, run_id, message_column(signal),
        signal.data_json or dumps(signal.data), time.time(),
    )


def message_column(signal: SignalIn) -> str:
    """A signal row's ``message``: ``null`` for a derived model message, rendered from the data
    when read, so the text is stored once (in the data: TOAST keeps a large one out of line,
    and updating the row's status does not copy it)."""
    return "null" if signal.derived_message else dumps(signal.message)


async def persist(
    conn: Conn, thread_id: str, resource_id: str, signal: SignalIn, *, tiny_run: bool
) -> None:
    """Store the signal in history (no model call); on an idle thread, as a tiny run."""
    await insert_signal(conn, thread_id, resource_id, signal, "persisted", None)
    run_id = new_id() if tiny_run else None
    message = signal_message(signal.id, signal.type, run_id)
    events = [signal_echo(signal.id, signal.type, run_id)]
    if tiny_run:
        events.insert(0, EventIn("start", {"persisted": True}, run_id))
        events.append(EventIn("finish", {"finish_reason": "stop", "persisted": True}, run_id))
    await append(conn, thread_id, resource_id, [message], events)


async def take_pending(
    conn: Conn, thread_id: str, resource_id: str, run_id: str, status: str
) -> list[dict[str, Any]]:
    """Mark the thread's pending signals ``status`` for ``run_id``; store each as a user
    message and an echo. Returns them in arrival order."""
    rows = await conn.fetch(
        "UPDATE signals SET status=$1, run_id=$2, delivered_at=$3 WHERE thread_id=$4 AND"
        " status='pending' RETURNING seq, id, type, message, data",
        status, run_id, time.time(), thread_id,
    )
    taken = [
        taken_signal(sid, type_, message, data)
        for _seq, sid, type_, message, data in sorted(rows, key=lambda row: row[0])
        if type_ != RESUME  # a marker: taken, nothing stored
    ]
    if taken:  # the message and the echo refer to the signal's row: its text is stored once
        await append(
            conn, thread_id, resource_id,
            [signal_message(s["id"], s["type"], run_id) for s in taken],
            [signal_echo(s["id"], s["type"], run_id) for s in taken],
        )
    return taken


async def claim_signals(
    conn: Conn, thread_id: str, resource_id: str, run_id: str,
    messages_before: list[MessageIn], events_before: list[EventIn],
) -> list[dict[str, Any]]:
    await lock_thread(conn, thread_id)
    await check_lease(conn, thread_id, run_id)
    await append(conn, thread_id, resource_id, messages_before, events_before)
    return await take_pending(conn, thread_id, resource_id, run_id, "delivered")
