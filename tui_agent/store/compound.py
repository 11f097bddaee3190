"""Compound signal writes: a write and the routing of the signal it makes, in one transaction,
written once for both stores (``writes.py``'s form).

A state signal stores the lane's new version and then routes a signal naming that version; a
notification stores its record, routes it and marks it delivered. As separate transactions a
burst of 200 of them took several commits (each stage waits for the one before); as one
:class:`CompoundCall` each, a burst joins the store's group commit like a burst of plain sends
(SQLite: ``txn.in_group`` runs them through :func:`compounds`, their batch form; PostgreSQL:
``postgres_group.RouteGroups`` queues them beside the plain routes). The semantics are those of
the separate transactions in order: a compound's own write, then its signal routed as
``signal_writes.route_signal`` routes it, then its write after, under the thread's lock. Tests:
``tests/test_compound_signals.py`` (both stores: one commit a burst, a failing call fails only
its caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import Any, Protocol, cast

from tui_agent.store.dialect import Dialect
from tui_agent.store.records import RouteResult
from tui_agent.store.signal_writes import RouteCall, route_signal, route_signals
from tui_agent.store.statements import Txn, lock

# What a compound gives its caller: (its value, the routing decision or None if nothing routed)
Done = tuple[Any, RouteResult | None]


class CompoundCall(Protocol):
    """One caller's compound write. ``before`` and ``after`` are transactions of statements
    (``writes.py``'s form); ``route`` runs between them (on SQLite in the connection's thread:
    plain Python, no I/O) and says what signal to route, if any."""

    thread_id: str

    def before(self, d: Dialect) -> Txn[Any]:
        """The write that makes the signal (it must not read or write signals or leases)."""
        ...

    def route(self, value: Any) -> RouteCall | None:
        """The routing of the signal ``before`` made (``signal_writes.route_signal``'s arguments),
        or None: nothing to route (an unchanged lane)."""
        ...

    def after(self, d: Dialect, value: Any, routed: RouteResult | None) -> Txn[Any]:
        """The write once the signal is routed (a notification marked delivered); what it
        returns is the compound's value."""
        ...


def compound(d: Dialect, call: CompoundCall) -> Txn[Done]:
    """One compound write alone: the thread's lock first (PostgreSQL: a group takes every
    thread's lock before any other, so a lane's lock is always taken second), its write, its
    signal routed, its write after."""
    yield from lock(d, call.thread_id)
    value = yield from call.before(d)
    routing = call.route(value)
    routed = None if routing is None else (yield from route_signal(d, *routing))
    return (yield from call.after(d, value, routed)), routed


def compounds(d: Dialect, calls: Sequence[CompoundCall]) -> Txn[list[Done]]:
    """:func:`compound` for each of ``calls``, in order: the batch form. Every ``before`` in
    call order (consecutive calls of a class with a static ``before_all(d, calls)`` giving
    their values: one batch of them), then every signal routed in call order as one
    ``signal_writes.route_signals`` (the writes before touch no signal or lease, so this decides
    exactly as the calls one after another would), then every ``after`` in call order (a
    class's static ``after_all(d, calls, values, routed)``: one batch of them)."""
    for thread_id in sorted({call.thread_id for call in calls}):
        yield from lock(d, thread_id)
    values: list[Any] = []
    for kind, run in groupby(calls, key=type):  # consecutive calls of one kind
        same = list(run)
        before_all: Any = getattr(kind, "before_all", None)
        if before_all is not None and len(same) > 1:
            batch = cast("Txn[list[Any]]", before_all(d, same))
            values += yield from batch
            continue
        for call in same:
            values.append((yield from call.before(d)))
    routings = [call.route(value) for call, value in zip(calls, values, strict=True)]
    decided = iter((yield from route_signals(d, [r for r in routings if r is not None])))
    routed: list[RouteResult | None] = [
        None if routing is None else next(decided) for routing in routings]
    done: list[Any] = []
    start = 0
    for kind, run in groupby(calls, key=type):
        same = list(run)
        end = start + len(same)
        after_all: Any = getattr(kind, "after_all", None)
        if after_all is not None and len(same) > 1:
            finished = cast("Txn[list[Any]]", after_all(
                d, same, values[start:end], routed[start:end]))
            done += yield from finished
        else:
            for call, value, decision in zip(same, values[start:end], routed[start:end],
                                             strict=True):
                done.append((yield from call.after(d, value, decision)))
        start = end
    return list(zip(done, routed, strict=True))


def nothing_after(d: Dialect, value: Any, routed: RouteResult | None) -> Txn[Any]:
    """An ``after`` that writes nothing: the value of ``before`` is the compound's."""
    return value
    yield  # a generator (never reached)
