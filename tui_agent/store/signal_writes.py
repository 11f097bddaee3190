"""The transactions of a signal's way into a thread, written once for both stores: routing it
(deliver into the live run, queue behind it, wake a new run, hold, persist, discard: decided
under the thread's lock, so of concurrent wakes exactly one finds the thread idle), one by one
or as a group commit's batch, and a run's claim of the signals that wait for it (with its
start's history, for a woken run). Their rows: ``writes.py``. Checked by the contract suite on
both stores (``tests/test_store_contract.py``), ``tests/test_group_commit.py`` and
``tests/test_signals_routing.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tui_agent.store.codec import new_id
from tui_agent.store.dialect import Dialect
from tui_agent.store.reads import MESSAGES
from tui_agent.store.records import (
    EventIn,
    MessageIn,
    RouteResult,
    SignalIn,
    WakeRows,
    signal_echo,
    signal_message,
    wake_start_of,
)
from tui_agent.store.roles import Row
from tui_agent.store.statements import Txn, lock, query
from tui_agent.store.writes import (
    SignalRow,
    append,
    begin_run,
    check_lease,
    ensure_thread,
    insert_signal,
    live_lease,
    signal_row,
    take_pending,
    write_signal_rows,
)


def route_signal(
    d: Dialect, thread_id: str, resource_id: str, active_signal: SignalIn,
    idle_signal: SignalIn, if_active: str, if_idle: str, queue: bool, owner: str,
    ttl_s: float, agent_id: str | None, claim_on_wake: int | None = None,
) -> Txn[RouteResult]:
    """Decided under the thread's lock: of concurrent wakes, exactly one finds it idle. A wake
    with ``claim_on_wake`` (its run's ``last_messages``) claims its run's start in the same
    transaction, as :func:`claim_wake` would next (``RouteResult.started``)."""
    yield from lock(d, thread_id)
    live = yield from live_lease(d, thread_id)
    if live is None:
        routed = yield from _route_idle(
            d, thread_id, resource_id, idle_signal, if_idle, owner, ttl_s, agent_id
        )
        if routed.action == "wake" and claim_on_wake is not None:
            assert routed.run_id is not None
            routed.started = wake_start_of((yield from read_wake(
                d, thread_id, resource_id, routed.run_id, claim_on_wake, agent_id)))
        return routed
    if queue and if_active == "deliver":  # persist/discard are honoured as for a send
        run_id = new_id()
        yield from insert_signal(d, thread_id, resource_id, active_signal, "queued", run_id)
        return RouteResult("deliver", run_id, behind=live[0])
    if if_active == "deliver":
        yield from insert_signal(d, thread_id, resource_id, active_signal, "pending", live[0])
        return RouteResult("deliver", live[0])
    if if_active == "persist":
        yield from persist(d, thread_id, resource_id, active_signal)
        return RouteResult("persist")
    return RouteResult("discard")


def _route_idle(
    d: Dialect, thread_id: str, resource_id: str, signal: SignalIn, behavior: str, owner: str,
    ttl_s: float, agent_id: str | None,
) -> Txn[RouteResult]:
    if behavior == "wake":
        yield from ensure_thread(d, thread_id, resource_id)
        run_id = new_id()
        yield from begin_run(d, thread_id, resource_id, run_id, owner, ttl_s, agent_id)
        yield from insert_signal(d, thread_id, resource_id, signal, "pending", run_id)
        return RouteResult("wake", run_id)
    if behavior == "hold":  # pending, no run: a host's rescuer (or the next opener) answers
        yield from ensure_thread(d, thread_id, resource_id)
        yield from insert_signal(d, thread_id, resource_id, signal, "pending", None)
        return RouteResult("hold")
    if behavior == "persist":
        yield from ensure_thread(d, thread_id, resource_id)
        yield from persist(d, thread_id, resource_id, signal)
        return RouteResult("persist")
    return RouteResult("discard")



#: :func:`route_signal`'s arguments after the dialect: (thread_id, resource_id, active_signal,
#: idle_signal, if_active, if_idle, queue, owner, ttl_s, agent_id, claim_on_wake).
RouteCall = tuple[
    str, str, SignalIn, SignalIn, str, str, bool, str, float, "str | None", "int | None"]


def route_signals(d: Dialect, calls: Sequence[RouteCall]) -> Txn[list[RouteResult]]:
    """:func:`route_signal` for each of ``calls`` (its arguments), in order: the batch form
    SQLite's group commit uses. The common case of a burst, signals delivered into a thread's
    live run (or queued behind it), costs one lease lookup per thread and one ``executemany``;
    any other call runs as :func:`route_signal` does, after the rows before it are written
    (arrival order holds). A wake's claim (``claim_on_wake``) runs once the whole batch is
    written: its run takes the burst's later signals into the thread too, in one claim."""
    results: list[RouteResult] = []
    claims: list[tuple[int, RouteCall]] = []  # the wakes to claim: their result's index
    rows: list[SignalRow] = []
    spilled: list[tuple[str, str]] = []
    # thread → the decision of a delivery into its live run as this transaction sees it (None:
    # idle). One RouteResult for all the burst's deliveries into a run: it is only read.
    delivery: dict[str, RouteResult | None] = {}
    now = time.time()
    spill_chars = d.spill_chars
    for call in calls:
        thread_id, resource_id, signal, _idle, if_active, _if_idle, queue = call[:7]
        if thread_id not in delivery:
            live = yield from live_lease(d, thread_id)
            delivery[thread_id] = None if live is None else RouteResult("deliver", live[0])
        delivered = delivery[thread_id]
        if delivered is not None and if_active == "deliver":
            if queue:  # behind the live run, in a run of its own (as route_signal does)
                queued_run = new_id()
                rows.append(signal_row(
                    d, thread_id, resource_id, signal, "queued", queued_run, now, spilled))
                results.append(RouteResult("deliver", queued_run, behind=delivered.run_id))
                continue
            data = signal.data_json
            if data is None or signal.derived_message is False or (
                    spill_chars is not None and len(data) > spill_chars):
                rows.append(signal_row(
                    d, thread_id, resource_id, signal, "pending", delivered.run_id, now, spilled
                ))
            else:  # the common row (signal_row's, inline: a burst writes hundreds)
                rows.append((signal.id, thread_id, resource_id, signal.type, "pending",
                             delivered.run_id, "null", data, now))
            results.append(delivered)
            continue
        yield from write_signal_rows(d, rows, spilled)
        rows, spilled = [], []
        routed = yield from route_signal(d, *call[:10])
        if routed.action == "wake" and call[10] is not None:
            claims.append((len(results), call))
        results.append(routed)
        del delivery[thread_id]  # a wake, for one, took the lease
    yield from write_signal_rows(d, rows, spilled)
    for index, (thread_id, resource_id, *_, agent_id, last_messages) in claims:
        woken = results[index]
        assert woken.run_id is not None and last_messages is not None
        woken.started = wake_start_of((yield from read_wake(
            d, thread_id, resource_id, woken.run_id, last_messages, agent_id)))
    return results



def persist(d: Dialect, thread_id: str, resource_id: str, signal: SignalIn) -> Txn[None]:
    """Store the signal in history (no model call). Subscribers see its echo, with no run id
    (no run took it), on an idle thread as on an active one: not a start/finish pair of an
    empty run (issue 21; tests/test_signals_routing.py)."""
    yield from insert_signal(d, thread_id, resource_id, signal, "persisted", None)
    message = signal_message(signal.id, signal.type, None)
    echo = signal_echo(signal.id, signal.type, None)
    yield from append(d, thread_id, resource_id, [message], [echo])



def claim_signals(
    d: Dialect, thread_id: str, resource_id: str, run_id: str,
    messages_before: Sequence[MessageIn], events_before: Sequence[EventIn],
) -> Txn[list[dict[str, Any]]]:
    yield from lock(d, thread_id)
    yield from check_lease(d, thread_id, run_id)
    yield from append(d, thread_id, resource_id, messages_before, events_before)
    return (yield from take_pending(d, thread_id, resource_id, run_id, "delivered"))


def claim_with_history(
    d: Dialect, thread_id: str, resource_id: str, run_id: str, last_messages: int,
) -> Txn[tuple[list[Row], list[dict[str, Any]]]]:
    """A woken run's first transaction: the thread's last ``last_messages`` messages (newest
    first, as ``LogReads.list_messages`` reads them), then its pending signals taken. One
    round trip instead of a read and a claim: what a send to an idle thread waits for before
    the model is called. Fenced, as :func:`claim_signals`."""
    yield from lock(d, thread_id)
    yield from check_lease(d, thread_id, run_id)
    history: list[Row] = []
    if last_messages > 0:
        history = yield query(
            d, f"{MESSAGES} ORDER BY m.seq DESC LIMIT ?", thread_id, last_messages)
    taken = yield from take_pending(d, thread_id, resource_id, run_id, "delivered")
    return history, taken


def claim_wake(
    d: Dialect, thread_id: str, resource_id: str, run_id: str, last_messages: int,
    agent_id: str | None,
) -> Txn[WakeRows]:
    """A woken run's only transaction before its model call (when its routing did not claim
    it: ``route_signal``'s ``claim_on_wake``): :func:`read_wake`, fenced as
    :func:`claim_signals` (a run that lost its lease takes nothing)."""
    yield from lock(d, thread_id)
    yield from check_lease(d, thread_id, run_id)
    return (yield from read_wake(d, thread_id, resource_id, run_id, last_messages, agent_id))


def read_wake(
    d: Dialect, thread_id: str, resource_id: str, run_id: str, last_messages: int,
    agent_id: str | None,
) -> Txn[WakeRows]:
    """A woken run's start, under a lease the caller knows it holds: the thread's last
    ``last_messages`` messages (newest first), its pending signals taken into ``run_id``, and
    what its plan reads of the store — the thread's metadata (its chosen model) and the
    editor's overrides stored for ``agent_id`` — as JSON texts (None: no such row)."""
    history: list[Row] = []
    if last_messages > 0:
        history = yield query(
            d, f"{MESSAGES} ORDER BY m.seq DESC LIMIT ?", thread_id, last_messages)
    taken = yield from take_pending(d, thread_id, resource_id, run_id, "delivered")
    thread: list[Row] = yield query(d, "SELECT metadata FROM threads WHERE id=?", thread_id)
    overrides: list[Row] = []
    if agent_id is not None:
        overrides = yield query(
            d, "SELECT overrides FROM agent_overrides WHERE agent_id=?", agent_id)
    return (history, taken, thread[0][0] if thread else None,
            overrides[0][0] if overrides else None)
