"""What the SQLite store's two aiosqlite internals buy (``tui_agent/store/aiosqlite_private.py``),
measured beside aiosqlite's public API in the same run, on the same file and connection:

- internals: a write transaction runs whole on the connection's worker thread
  (``run_with_connection``: one hop from the event loop per transaction), as the store does;
- public API: the same transaction (the same ``writes.py`` generator, the same statements),
  each statement awaited through ``Connection.execute`` / ``executemany`` (one hop each).

Three transactions the core makes all the time: appending one message, delivering a signal
into a live run, and a run's life (start, then finish). Also each with a second task keeping
the event loop busy (as a streaming app does), where each hop also waits for the loop.

    .venv/bin/python benchmarks/bench_aiosqlite_private.py [--n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite

import tui_agent.store.signal_writes as signal_writes
import tui_agent.store.writes as writes
from tui_agent.store import SqliteStore
from tui_agent.store.aiosqlite_private import run_with_connection
from tui_agent.store.codec import new_id
from tui_agent.store.dialect import SQLITE
from tui_agent.store.records import EventIn, MessageIn, SignalIn
from tui_agent.store.statements import Txn
from tui_agent.store.txn import drive

T, R, OWNER = "bench-thread", "bench-user", "bench-owner"

Make = Callable[[], Txn[object]]


async def internals(db: aiosqlite.Connection, make: Make) -> None:
    def body(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        drive(conn, make())
        conn.execute("COMMIT")

    await run_with_connection(db, body)


async def public(db: aiosqlite.Connection, make: Make) -> None:
    await db.execute("BEGIN IMMEDIATE")
    txn = make()
    try:
        statement = next(txn)
        while True:
            if statement.many:
                await db.executemany(statement.sql, statement.args)
                result: object = None
            elif statement.rows:
                result = await db.execute_fetchall(statement.sql, statement.args)
            else:
                result = (await db.execute(statement.sql, statement.args)).rowcount
            statement = txn.send(result)
    except StopIteration:
        pass
    await db.execute("COMMIT")


def message() -> Txn[object]:
    return writes.append(SQLITE, T, R, [MessageIn("user", "a short message", id=new_id())], [])


def delivery() -> Txn[object]:
    signal = SignalIn(new_id(), "user", {"role": "user", "content": "hi"},
                      {"type": "user", "contents": "hi"})
    return signal_writes.route_signal(SQLITE, T, R, signal, signal, "deliver", "wake", False, OWNER,
                               3600.0, None)


def run_life(run_ids: list[str]) -> Make:
    def make() -> Txn[object]:
        run_id = new_id()
        run_ids.append(run_id)
        return writes.start_run(SQLITE, "life", R, run_id, OWNER, 30.0, None, None, None)
    return make


async def timed(fn: Callable[[], Awaitable[None]], n: int) -> float:
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - start)
    return statistics.median(out) * 1e6


async def busy_loop(stop: asyncio.Event) -> None:
    while not stop.is_set():
        time.sleep(0.0002)  # a task doing 0.2 ms of work per loop turn
        await asyncio.sleep(0)


async def figures(path: Path, n: int, busy: bool) -> list[tuple[str, float, float]]:
    store = SqliteStore(path)
    await store.ensure_thread(T, R)
    assert await store.start_run(T, R, "live", owner=OWNER, ttl_s=3600)  # deliveries go here
    await store.ensure_thread("life", R)
    await store.close()
    db = await aiosqlite.connect(path, isolation_level=None)
    await db.execute("PRAGMA journal_mode=WAL")
    await db.execute("PRAGMA synchronous=NORMAL")
    stop = asyncio.Event()
    noise = asyncio.ensure_future(busy_loop(stop)) if busy else None
    rows: list[tuple[str, float, float]] = []
    try:
        for label, make in (("append one message", message), ("deliver a signal", delivery)):
            inside = await timed(lambda m=make: internals(db, m), n)
            outside = await timed(lambda m=make: public(db, m), n)
            rows.append((label, inside, outside))
        for runner in (internals, public):
            run_ids: list[str] = []

            async def life(runner: Callable[[aiosqlite.Connection, Make], Awaitable[None]]
                           = runner, run_ids: list[str] = run_ids) -> None:
                await runner(db, run_life(run_ids))
                run_id = run_ids[-1]
                await runner(db, lambda: writes.finish_run(
                    SQLITE, "life", R, run_id, OWNER, "finished", "stop", None, [],
                    [EventIn("finish", {"finish_reason": "stop"}, run_id)], False))

            rows.append(("a run: start + finish", await timed(life, n // 2), 0.0))
        (_, inside, _), (_, outside, _) = rows[-2:]
        rows[-2:] = [("a run: start + finish", inside, outside)]
    finally:
        stop.set()
        if noise is not None:
            await noise
        await db.close()
    return rows


async def main(n: int) -> None:
    print(f"{'transaction':<28}  {'loop':<5}  {'internals':>10}  {'public API':>10}  ratio")
    for busy in (False, True):
        with tempfile.TemporaryDirectory() as name:
            for label, inside, outside in await figures(Path(name) / "b.sqlite", n, busy):
                print(f"{label:<28}  {'busy' if busy else 'idle':<5}  {inside:>8.1f}us"
                      f"  {outside:>8.1f}us  {outside / inside:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    asyncio.run(main(parser.parse_args().n))
