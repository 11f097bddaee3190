"""``txn.insert_rows``: a burst's signal rows go into SQLite as multi-row INSERTs, storing what
``executemany`` of the one-row INSERT stores — the same rows in the same order, seq included —
and failing whole, as the transaction around it expects."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tui_agent.store.txn import MULTI_ROWS, insert_rows

COLUMNS = ("id", "thread_id", "resource_id", "type", "status", "run_id", "message", "data",
           "created_at")
SIGNALS = ("signals", COLUMNS)  # a Statement's ``copy_into``
ONE_ROW = f"INSERT INTO signals({', '.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})"

# Counts around each statement size: exact multiples, one over, remainders of each size.
COUNTS = sorted({0, 1, 2, *MULTI_ROWS, *(n + 1 for n in MULTI_ROWS), 5, 21, 84, 85, 199, 200})


def signals_table(path: Path) -> sqlite3.Connection:
    """A connection to a new store file with the store's own schema."""
    from tui_agent.store import SqliteStore

    async def create() -> None:
        store = SqliteStore(path)
        await store.ensure_thread("t", "r")
        await store.close()

    asyncio.run(create())
    return sqlite3.connect(path, isolation_level=None)


def rows(count: int, tag: str) -> list[tuple[object, ...]]:
    return [(f"{tag}-{i:04d}", "t", "r", "reactive", "pending", "run", "null",
             f'{{"contents":"{tag} {i}"}}', 1_700_000_000.0 + i) for i in range(count)]


@pytest.mark.parametrize("count", COUNTS)
def test_insert_rows_stores_what_executemany_stores(tmp_path: Path, count: int) -> None:
    fast, plain = signals_table(tmp_path / "fast.db"), signals_table(tmp_path / "plain.db")
    for conn, write in ((fast, lambda c, r: insert_rows(c, SIGNALS, r)),
                        (plain, lambda c, r: c.executemany(ONE_ROW, r))):
        write(conn, rows(3, "before"))  # seq goes on from rows already there
        write(conn, rows(count, "burst"))
    read = "SELECT * FROM signals ORDER BY seq"
    assert fast.execute(read).fetchall() == plain.execute(read).fetchall()
    assert len(fast.execute(read).fetchall()) == 3 + count


def test_a_bad_row_fails_the_call_and_its_savepoint_keeps_none_of_it(tmp_path: Path) -> None:
    conn = signals_table(tmp_path / "bad.db")
    insert_rows(conn, SIGNALS, rows(1, "burst"))  # "burst-0000" is taken
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("SAVEPOINT batch")
    duplicate = rows(70, "other")
    duplicate[66] = rows(1, "burst")[0]  # in the rows after the first statement of 64
    with pytest.raises(sqlite3.IntegrityError):
        insert_rows(conn, SIGNALS, duplicate)
    conn.execute("ROLLBACK TO batch")
    conn.execute("RELEASE batch")
    conn.execute("COMMIT")
    assert conn.execute("SELECT id FROM signals").fetchall() == [("burst-0000",)]
