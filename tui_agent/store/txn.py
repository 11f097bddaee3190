"""SQLite's way of running the write transactions of ``writes.py``: each whole on the
connection's worker thread (see ``SqliteStore.write``), one round trip from the event loop per
transaction instead of one per statement, inside ``BEGIN IMMEDIATE``, so every decision they take
holds across processes; and several callers' writes in one transaction (group commit,
:func:`in_group`).

The functions below are those transactions as ``body(conn, *args)`` on a ``sqlite3.Connection``
(what ``SqliteStore.write`` and ``submit`` run). Tests: ``tests/test_group_commit.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import wraps
from itertools import groupby
from operator import itemgetter
from typing import Any, Concatenate, Final, ParamSpec, TypeVar, TypeVarTuple

import tui_agent.store.compound as compound_writes
import tui_agent.store.signal_writes as signal_writes
import tui_agent.store.writes as writes
from tui_agent.store.dialect import SQLITE, Dialect
from tui_agent.store.reads import RESUME
from tui_agent.store.records import SignalIn
from tui_agent.store.statements import Txn
from tui_agent.store.writes import SignalRow

__all__ = ["RESUME", "SPILL_CHARS", "Outcome", "committed", "group", "in_group", "in_transaction"]

Conn = sqlite3.Connection
P = ParamSpec("P")
T = TypeVar("T")
Ts = TypeVarTuple("Ts")
# A signal's data larger than this (characters of JSON) is stored in ``signal_data`` instead of
# its ``signals`` row: SQLite rewrites a whole row, overflow pages and all, when a run takes the
# signal (its status changes), which would leave a freed copy of a large text in the file.
SPILL_CHARS = SQLITE.spill_chars


def drive(conn: Conn, txn: Txn[T]) -> T:
    """Run the transaction ``txn`` (a generator of ``writes.py``) on ``conn``: each statement
    it yields, its result sent back, until it returns."""
    try:
        statement = next(txn)
        while True:
            if statement.many:
                rows: Sequence[Any] = statement.args
                if statement.copy_into is not None and len(rows) >= MULTI_ROWS[-1]:
                    insert_rows(conn, statement.copy_into, rows)
                else:
                    conn.executemany(statement.sql, rows)
                result: object = None
            elif statement.rows:
                result = conn.execute(statement.sql, statement.args).fetchall()
            else:
                result = conn.execute(statement.sql, statement.args).rowcount
            statement = txn.send(result)
    except StopIteration as done:
        returned: T = done.value
        return returned


# The row counts of a multi-row INSERT (largest first): a burst's rows go in as few statements
# as these sizes allow, and SQLite's statement cache holds one statement of each size.
MULTI_ROWS: Final = (64, 16, 4)
_INSERT_SQL: dict[tuple[str, tuple[str, ...], int], str] = {}


def insert_rows(conn: Conn, into: tuple[str, tuple[str, ...]], rows: Sequence[Any]) -> None:
    """Insert ``rows`` into (table, columns), in order: as multi-row ``INSERT … VALUES (…),
    (…)`` statements of ``MULTI_ROWS`` rows, the rest one at a time. What ``executemany`` of
    the one-row statement stores (the same rows, the same order, AUTOINCREMENT included),
    in about half the time for a burst of signals (one statement runs the row loop in SQLite,
    not Python; ``benchmarks/bench_signal_speed.py``). A failure fails the whole call, as it
    does for the transaction around it (tests/test_sqlite_insert_rows.py)."""
    start, count = 0, len(rows)
    for size in MULTI_ROWS:
        while count - start >= size:
            conn.execute(_insert_sql(into, size),
                         [value for row in rows[start:start + size] for value in row])
            start += size
    if start < count:
        conn.executemany(_insert_sql(into, 1), rows[start:])


def _insert_sql(into: tuple[str, tuple[str, ...]], size: int) -> str:
    """``INSERT INTO table(columns) VALUES`` with ``size`` rows of parameters (made once)."""
    table, columns = into
    sql = _INSERT_SQL.get((table, columns, size))
    if sql is None:
        one = "(" + ",".join("?" * len(columns)) + ")"
        sql = _INSERT_SQL[(table, columns, size)] = (
            f"INSERT INTO {table}({', '.join(columns)}) VALUES " + ",".join([one] * size))
    return sql


def on_sqlite(
    write: Callable[Concatenate[Dialect, P], Txn[T]],
) -> Callable[Concatenate[Conn, P], T]:
    """The transaction ``write`` as a body SQLite's writer runs: ``body(conn, *args)``."""

    @wraps(write)
    def body(conn: Conn, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return drive(conn, write(SQLITE, *args, **kwargs))

    return body


def in_transaction(conn: Conn, body: Callable[[Conn, *Ts], T], *args: *Ts) -> T:
    """Run ``body(conn, *args)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT``."""
    conn.execute("BEGIN IMMEDIATE")
    return committed(conn, body, *args)


def committed(conn: Conn, body: Callable[[Conn, *Ts], T], *args: *Ts) -> T:
    """``body(conn, *args)`` in the transaction the caller began, then ``COMMIT``. If either
    raises, the transaction is rolled back (unless SQLite did already: an I/O error, a full
    disk) and the error raised: nothing of it is stored."""
    try:
        result = body(conn, *args)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


@dataclass(slots=True)
class Outcome:
    """What one caller's write in a group gave: its result, or the error it raised."""

    value: Any = None
    error: BaseException | None = None


Write = tuple[Any, tuple[Any, ...]]  # (body, args): body(conn, *args)


def in_group(conn: Conn, queued: list[Write]) -> list[Outcome]:
    """Run several callers' writes, in order, as ONE ``BEGIN IMMEDIATE`` … ``COMMIT`` (group
    commit): :func:`group` in a transaction. If the transaction itself fails (BEGIN, COMMIT, a
    broken connection), it raises and nothing of the group is stored."""
    return in_transaction(conn, group, queued)


def group(conn: Conn, queued: list[Write]) -> list[Outcome]:
    """The body of a group commit: each caller's write inside its own savepoint, so one that
    raises is rolled back alone and its error handed back while the others still commit.

    Consecutive writes of a body that has a batch form (``BATCH_FORMS``) run as one call of it
    in one savepoint; if that raises, they are rolled back and run again one by one, so the
    error still reaches only the caller whose write caused it."""
    outcomes: list[Outcome] = []
    for body, run in groupby(queued, key=itemgetter(0)):
        calls = [args for _, args in run]
        batch = BATCH_FORMS.get(body)
        if batch is not None and len(calls) > 1:
            outcomes += _batch_in_savepoint(conn, body, batch, calls)
        else:
            outcomes += [_in_savepoint(conn, body, args) for args in calls]
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


def in_dialect(conn: Conn, write: Callable[[Dialect, *Ts], Txn[T]], *args: *Ts) -> T:
    """``write(SQLITE, *args)`` driven on ``conn``: the body of any shared write."""
    return drive(conn, write(SQLITE, *args))


# The bodies the store's queued writes run (group commit keys its batch forms on route_signal
# and compound).
append = on_sqlite(writes.append)
append_as_run = on_sqlite(writes.append_as_run)
route_signal = on_sqlite(signal_writes.route_signal)
compound = on_sqlite(compound_writes.compound)  # a write and its signal's routing (compound.py)


def _compounds(d: Dialect, calls: list[tuple[compound_writes.CompoundCall]]) -> Txn[Any]:
    return compound_writes.compounds(d, [call for (call,) in calls])


def signal_row(
    thread_id: str, resource_id: str, signal: SignalIn, status: str, run_id: str | None,
    now: float, spilled: list[tuple[str, str]],
) -> SignalRow:
    """A signal's ``signals`` row as SQLite stores it (large data spilled: see
    ``SPILL_CHARS``)."""
    return writes.signal_row(SQLITE, thread_id, resource_id, signal, status, run_id, now, spilled)


# Bodies whose consecutive writes in one group run as one call (see in_group).
BATCH_FORMS: dict[Callable[..., Any], Callable[[Conn, list[Any]], list[Any]]] = {
    route_signal: on_sqlite(signal_writes.route_signals),
    compound: on_sqlite(_compounds),
}
