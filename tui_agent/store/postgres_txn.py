"""PostgreSQL's way of running the write transactions of ``writes.py``: on an ``asyncpg``
connection inside an open transaction (``PostgresStore.write`` opens it), each statement
awaited in turn.

Atomic across processes and machines: every transaction that writes a thread's log, lease or
signals first takes that thread's transaction-scoped advisory lock (``statements.lock``), so such
transactions on one thread run one after another. That makes the lease decision (who holds it,
whether a signal wakes or delivers) a decision of one transaction, and it keeps the event log's
``seq`` in commit order per thread: a reader reading on from its cursor misses nothing.
Checked by ``tests/test_store_contract.py`` (the ``postgres`` factory).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import wraps
from typing import Concatenate, ParamSpec, TypeVar, TypeVarTuple

import tui_agent.store.signal_writes as signal_writes
from tui_agent.store.codec import dumps
from tui_agent.store.dialect import POSTGRES, Dialect
from tui_agent.store.pg_driver import PgConnection
from tui_agent.store.records import SignalIn
from tui_agent.store.roles import Args
from tui_agent.store.statements import Txn

P = ParamSpec("P")
T = TypeVar("T")
Ts = TypeVarTuple("Ts")


# From this many rows a bulk insert goes as COPY (one message each way, rows in binary, ~2x
# faster for a burst of 200 signals than executemany's Bind/Execute per row); fewer go as
# executemany, which needs no column introspection.
COPY_ROWS = 16


async def drive(conn: PgConnection, txn: Txn[T]) -> T:
    """Run the transaction ``txn`` (a generator of ``writes.py``) on ``conn``: each statement
    it yields awaited, its result sent back, until it returns."""
    try:
        statement = next(txn)
        while True:
            if statement.many:
                rows: Sequence[Args] = statement.args  # pyright: ignore[reportAssignmentType]
                if statement.copy_into is not None and len(rows) >= COPY_ROWS:
                    table, columns = statement.copy_into
                    await conn.copy_records_to_table(table, records=rows, columns=columns)
                else:
                    await conn.executemany(statement.sql, rows)
                result: object = None
            elif statement.rows:
                result = await conn.fetch(statement.sql, *statement.args)
            else:
                status = await conn.execute(statement.sql, *statement.args)  # "UPDATE 3"
                result = int(status.rsplit(" ", 1)[-1])
            statement = txn.send(result)
    except StopIteration as done:
        returned: T = done.value
        return returned


def on_postgres(
    write: Callable[Concatenate[Dialect, P], Txn[T]],
) -> Callable[Concatenate[PgConnection, P], Awaitable[T]]:
    """The transaction ``write`` as ``await body(conn, *args)`` on a connection in a
    transaction."""

    @wraps(write)
    async def body(conn: PgConnection, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await drive(conn, write(POSTGRES, *args, **kwargs))

    return body


async def in_dialect(
    conn: PgConnection, write: Callable[[Dialect, *Ts], Txn[T]], *args: *Ts
) -> T:
    """``write(POSTGRES, *args)`` driven on ``conn``: the body of any shared write."""
    return await drive(conn, write(POSTGRES, *args))


route_signal = on_postgres(signal_writes.route_signal)


def message_column(signal: SignalIn) -> str:
    """A signal row's ``message``: ``null`` for a derived model message, rendered from the data
    when read, so the text is stored once (in the data: TOAST keeps a large one out of line,
    and updating the row's status does not copy it)."""
    return "null" if signal.derived_message else dumps(signal.message)
