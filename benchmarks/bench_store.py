"""Store figures, each beside a bare sqlite3 anchor on the same kind of file (WAL,
synchronous=NORMAL, the store's own schema), measured in the same run:

- appending one message (``SqliteStore.append``): goal <= 1 ms; anchor INSERT + COMMIT;
- recalling the last 50 messages of a 100,000-message thread (``list_messages``): goal <= 5 ms;
  anchor the same SELECT with sqlite3;
- the event log, batched (``append_events`` in batches of 100 and 1000): goal >= 20,000
  events/s; anchor ``executemany`` of the same rows in one transaction per batch.

    .venv/bin/python benchmarks/bench_store.py [--messages 100000] [--appends 2000]
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

from tui_agent.store import SqliteStore
from tui_agent.store.codec import dumps, new_id
from tui_agent.store.records import EventIn, MessageIn

R, T, BIG = "bench-user", "bench-thread", "big-thread"
MESSAGE = {"role": "user", "content": "a short user message, as typed in a terminal"}
Row = tuple[str, str, str, str]


async def timed_async(fn: Callable[[], Awaitable[object]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - start)
    return out


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def plain(path: Path) -> sqlite3.Connection:
    """A bare connection set up like the store's (the anchor)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def bare_insert_message(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "INSERT INTO messages(id, thread_id, resource_id, role, content, run_id, metadata,"
        " created_at) VALUES (?,?,?,?,?,?,?,?)",
        (new_id(), T, R, "user", dumps(MESSAGE["content"]), None, "{}", time.time()),
    )
    db.execute("COMMIT")


async def bench_append(tmp: Path, n: int) -> Row:
    store = SqliteStore(tmp / "append.sqlite")
    await store.ensure_thread(T, R)

    async def append() -> None:
        await store.append(T, R, messages=[MessageIn("user", MESSAGE["content"])])

    await timed_async(append, 50)  # warm up
    ours = statistics.median(await timed_async(append, n))
    await store.close()
    db = plain(tmp / "append.sqlite")
    anchor = statistics.median(timed(lambda: bare_insert_message(db), n))
    db.close()
    return ("append 1 message", "<= 1 ms", f"{ours * 1e3:.3f} ms",
            f"{anchor * 1e3:.3f} ms (sqlite3 INSERT+COMMIT)", f"{ours / anchor:.1f}x")


async def build_thread(store: SqliteStore, count: int) -> None:
    await store.ensure_thread(BIG, R)
    await store.ensure_thread("neighbour", R)  # another thread interleaved in the table
    batch = 1000
    for start in range(0, count, batch):
        size = min(batch, count - start)
        rows = [MessageIn("user" if i % 2 else "assistant", f"message {start + i}")
                for i in range(size)]
        await store.append(BIG, R, messages=rows)
        await store.append("neighbour", R, messages=[MessageIn("user", "elsewhere")])


async def bench_recall(tmp: Path, count: int) -> Row:
    store = SqliteStore(tmp / "recall.sqlite")
    start = time.perf_counter()
    await build_thread(store, count)
    build_s = time.perf_counter() - start
    last = await store.list_messages(BIG, limit=50)
    assert len(last) == 50 and last[-1].content == f"message {count - 1}"

    async def recall() -> None:
        await store.list_messages(BIG, limit=50)

    await timed_async(recall, 20)
    ours = statistics.median(await timed_async(recall, 500))
    await store.close()
    db = plain(tmp / "recall.sqlite")
    sql = ("SELECT seq, id, thread_id, resource_id, role, content, run_id, metadata, created_at"
           " FROM messages WHERE thread_id=? ORDER BY seq DESC LIMIT 50")
    anchor = statistics.median(timed(lambda: db.execute(sql, (BIG,)).fetchall(), 500))
    db.close()
    print(f"(built a {count:,}-message thread in {build_s:.1f} s, batches of 1000)")
    return (f"recall last 50 of {count:,}", "<= 5 ms", f"{ours * 1e3:.3f} ms",
            f"{anchor * 1e3:.3f} ms (sqlite3 SELECT)", f"{ours / anchor:.1f}x")


async def bench_events(tmp: Path, batch: int, total: int) -> Row:
    path = tmp / f"events-{batch}.sqlite"
    store = SqliteStore(path)
    await store.ensure_thread(T, R)
    events = [EventIn("text-delta", {"text": "a few words "}, run_id="r") for _ in range(batch)]
    await store.append_events(T, events)  # warm up
    start = time.perf_counter()
    for _ in range(total // batch):
        await store.append_events(T, events)
    ours = (total // batch) * batch / (time.perf_counter() - start)
    await store.close()

    db = plain(path)
    sql = ("INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
           " VALUES (?,?,?,?,?,?)")
    start = time.perf_counter()
    for _ in range(total // batch):
        now = time.time()
        rows = [(T, e.run_id, e.type, e.source, dumps(e.payload), now) for e in events]
        db.execute("BEGIN IMMEDIATE")
        db.executemany(sql, rows)
        db.execute("COMMIT")
    anchor = (total // batch) * batch / (time.perf_counter() - start)
    db.close()
    return (f"event log, batches of {batch}", ">= 20,000/s", f"{ours:,.0f}/s",
            f"{anchor:,.0f}/s (sqlite3 executemany)", f"{ours / anchor:.2f}x of bare")


def print_table(rows: list[Row]) -> None:
    header = ("figure", "goal", "tui-agent", "anchor (same run)", "ratio")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


async def main(messages: int, appends: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            await bench_append(Path(tmp), appends),
            await bench_recall(Path(tmp), messages),
            await bench_events(Path(tmp), 100, 50_000),
            await bench_events(Path(tmp), 1000, 200_000),
        ]
    print_table(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--appends", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(main(args.messages, args.appends))
