"""Group commit of signal routing on PostgreSQL: the sends that arrive together share one
transaction, as on SQLite (``SqliteStore``'s writer), with the same guarantees.

- **Ordering**: one queue per store object, drained by one writer, a group at a time, each group
  in arrival order: signals sent one after another from this process are stored (and reach the
  run) in that order, and a group commits before the next one starts.
- **One wake per race**: the group's transaction first takes the advisory lock of every thread it
  routes to (sorted, so two processes' groups never wait on each other in a cycle), then decides
  each signal as ``signal_writes.route_signals`` does, under those locks: of concurrent sends to an
  idle thread, from any process, exactly one wakes it.
- **Failures stay with their callers**: the group's calls run as one batch inside a savepoint;
  if the batch raises (a duplicate id, a bad row), it is rolled back and the calls run again one
  by one, each in its own savepoint, so only the caller whose signal failed gets the error. If
  the transaction itself fails (the connection drops, COMMIT fails), nothing of the group is
  stored and every caller of that group gets the error; the groups before and after it keep
  their receipts, and the writer goes on with the next group.
- **Durable when accepted**: a caller hears of its signal only once the transaction holding it
  committed.

- **Compound writes** (``compound.py``: a state lane's version, a notification's record, each
  with its signal) queue beside the plain routes and keep all of the above: consecutive ones
  run as one ``compound.compounds`` batch in arrival order (tests/test_compound_signals.py).

A group of one delivery into a live run takes the one-round-trip ``tui_agent_deliver_signal``
instead (its own transaction, under the same lock). Tests: tests/test_postgres_group_commit.py;
measured by benchmarks/bench_signal_speed.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import tui_agent.store.compound as compound_writes
import tui_agent.store.postgres_txn as pg_txn
import tui_agent.store.signal_writes as signal_writes
from tui_agent.store.codec import dumps
from tui_agent.store.compound import CompoundCall, Done
from tui_agent.store.dialect import POSTGRES
from tui_agent.store.pg_driver import PgConnection
from tui_agent.store.records import RouteResult
from tui_agent.store.signal_writes import RouteCall

Then = Callable[[Any, BaseException | None], None]
# One call's decision (a compound's value and decision), or the error only its caller gets.
Outcome = RouteResult | Done | Exception
Call = RouteCall | CompoundCall  # a signal's routing, or a compound write (compound.py)
GroupBody = Callable[[PgConnection], Awaitable[list[Outcome]]]
# Every advisory lock of a group in one statement: the keys are passed sorted (unnest keeps
# their order), so groups in different processes take shared keys in the same order.
_LOCK_ALL = "SELECT count(pg_advisory_xact_lock(hashtextextended(t, 0))) FROM unnest($1::text[]) t"
DELIVER_ONE = "SELECT tui_agent_deliver_signal($1, $2, $3, $4, $5, $6, $7)"


@dataclass(slots=True)
class _Queued:
    call: Call
    then: Then


class RouteGroups:
    """The routing queue and writer of one PostgreSQL store object. ``run_group(body)`` runs
    ``await body(conn)`` in one write transaction of the store (counted in its commits);
    ``deliver_one(call)`` is the store's one-statement delivery (None: no live run, nothing
    written); ``committed(thread_id, result)`` is told of each decision once it is committed
    (the store wakes its listeners)."""

    def __init__(
        self,
        run_group: Callable[[GroupBody], Awaitable[list[Outcome]]],
        deliver_one: Callable[[RouteCall], Awaitable[str | None]],
        committed: Callable[[str, RouteResult], None],
    ) -> None:
        self._run_group = run_group
        self._deliver_one = deliver_one
        self._committed = committed
        self._queue: list[_Queued] = []
        self._writer: asyncio.Task[None] | None = None
        self.groups = 0  # transactions (or lone deliveries) the writer committed

    @property
    def waiting(self) -> int:
        """Signals queued for the next group (not yet taken by the writer)."""
        return len(self._queue)

    def submit(self, call: Call, then: Then) -> None:
        """Queue ``call`` for the next group; ``then(result, error)`` once it is committed
        (or failed): a routing's result is its ``RouteResult``, a compound's its ``(value,
        RouteResult or None)``."""
        self._queue.append(_Queued(call, then))
        if self._writer is None:
            loop = asyncio.get_running_loop()
            self._writer = loop.create_task(self._drain(), name="postgres signal writer")

    async def _drain(self) -> None:
        try:
            while self._queue:
                group, self._queue = self._queue, []
                await self._commit(group)
        except BaseException as error:  # cancelled (the loop is closing): nobody waits forever
            for queued in self._queue:
                _hand(queued.then, None, error)
            self._queue = []
            raise
        finally:
            self._writer = None

    async def _commit(self, group: list[_Queued]) -> None:
        try:
            outcomes = await self._outcomes([queued.call for queued in group])
        except BaseException as error:  # nothing of the group was stored
            for queued in group:
                _hand(queued.then, None, error)
            if not isinstance(error, Exception):
                raise
            return
        self.groups += 1
        for queued, outcome in zip(group, outcomes, strict=True):
            if isinstance(outcome, Exception):
                _hand(queued.then, None, outcome)
                continue
            if isinstance(outcome, RouteResult):
                self._committed(_thread(queued.call), outcome)
            elif outcome[1] is not None:  # a compound that routed its signal
                self._committed(_thread(queued.call), outcome[1])
            _hand(queued.then, outcome, None)

    async def _outcomes(self, calls: list[Call]) -> list[Outcome]:
        if len(calls) == 1 and isinstance(calls[0], tuple) and _delivers(calls[0]):
            run_id = await self._deliver_one(calls[0])
            if run_id is not None:
                return [RouteResult("deliver", run_id)]
        return await self._run_group(lambda conn: route_group(conn, calls))


def _delivers(call: RouteCall) -> bool:
    if_active, queue = call[4], call[6]
    return if_active == "deliver" and not queue


async def route_group(conn: PgConnection, calls: Sequence[Call]) -> list[Outcome]:
    """Route ``calls`` in the open transaction on ``conn``: every thread's lock, then the batch
    in a savepoint (consecutive routings as one ``signal_writes.route_signals``, consecutive
    compounds as one ``compound.compounds``, in arrival order); if it raises, each call alone in
    a savepoint of its own (its error is its outcome)."""
    threads = sorted({_thread(call) for call in calls})
    await conn.fetchval(_LOCK_ALL, threads)
    try:
        async with conn.transaction():  # a savepoint inside the group's transaction
            batched: list[Outcome] = []
            for plain, run in groupby(calls, key=lambda call: isinstance(call, tuple)):
                if plain:
                    routings: list[RouteCall] = list(run)  # pyright: ignore[reportAssignmentType]
                    batched += await pg_txn.drive(
                        conn, signal_writes.route_signals(POSTGRES, routings))
                else:
                    writes_: list[CompoundCall] = list(run)  # pyright: ignore[reportAssignmentType]
                    batched += await pg_txn.drive(
                        conn, compound_writes.compounds(POSTGRES, writes_))
            return batched
    except Exception:
        pass  # replayed one by one below: the error reaches only the caller that caused it
    outcomes: list[Outcome] = []
    for call in calls:
        try:
            async with conn.transaction():
                if isinstance(call, tuple):
                    outcomes.append(await pg_txn.route_signal(conn, *call))
                else:
                    outcomes.append(await pg_txn.drive(
                        conn, compound_writes.compound(POSTGRES, call)))
        except Exception as error:
            outcomes.append(error)
    return outcomes


def _thread(call: Call) -> str:
    return call[0] if isinstance(call, tuple) else call.thread_id


def deliver_args(call: RouteCall) -> tuple[object, ...]:
    """The arguments of ``tui_agent_deliver_signal`` for a delivery ``call``."""
    thread_id, resource_id, signal = call[0], call[1], call[2]
    return (thread_id, signal.id, resource_id, signal.type, pg_txn.message_column(signal),
            signal.data_json or dumps(signal.data), time.time())


def _hand(then: Then, result: Any, error: BaseException | None) -> None:
    try:
        then(result, error)
    except Exception as failure:  # the other callers of the group must still hear
        asyncio.get_running_loop().call_exception_handler(
            {"message": "a signal's completion callback failed", "exception": failure}
        )

