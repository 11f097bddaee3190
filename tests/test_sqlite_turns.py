"""Which thread runs a SQLite store's transactions (``tui_agent/store/sqlite_turns.py``): the
event loop's when the write can begin at once, else aiosqlite's worker, which waits for another
process's write lock without holding up the loop; and the WAL is checkpointed by the worker."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

import tui_agent.store.sqlite_turns as sqlite_turns
from tui_agent.store import SqliteStore
from tui_agent.store.records import EventIn
from tui_agent.store.sqlite_turns import ConnectionTurns

R, T = "res-turns", "thread-turns"
GUARD_S = 10.0


def _turns(store: SqliteStore) -> ConnectionTurns:
    turns = store._turns
    assert turns is not None, "the store is open"
    return turns


def _where(threads: list[threading.Thread]) -> Any:
    """A write body that notes the thread it ran on."""

    def body(conn: sqlite3.Connection) -> None:
        threads.append(threading.current_thread())
        conn.execute("UPDATE threads SET title='noted' WHERE id=?", (T,))

    return body


async def test_a_write_with_nothing_in_its_way_runs_on_the_loops_thread(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    try:
        await store.ensure_thread(T, R)
        threads: list[threading.Thread] = []
        before = _turns(store).ran_here
        await store.write(_where(threads))
        assert threads == [threading.current_thread()]
        assert _turns(store).ran_here == before + 1
        assert (await store.get_thread(T)) is not None
    finally:
        await store.close()


async def test_another_writers_lock_sends_the_write_to_the_worker_and_the_loop_goes_on(
    tmp_path: Path,
) -> None:
    """Another process (here a connection of its own) holds SQLite's write lock: the write
    neither fails nor stalls the loop; it waits on the worker and commits once the lock is
    released."""
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    await store.ensure_thread(T, R)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        threads: list[threading.Thread] = []
        write = asyncio.ensure_future(store.write(_where(threads)))
        for _ in range(20):  # the loop turns while the write waits
            await asyncio.sleep(0.001)
        assert not write.done() and not threads, "the write waits for the lock"
        other.execute("COMMIT")
        await asyncio.wait_for(write, GUARD_S)
        assert threads and threads[0] is not threading.current_thread()
        assert _turns(store).ran_on_worker >= 1
    finally:
        other.close()
        await store.close()


async def test_a_write_behind_a_read_in_flight_takes_the_workers_turn(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    try:
        await store.ensure_thread(T, R)
        threads: list[threading.Thread] = []
        read = asyncio.ensure_future(store.fetchall("SELECT id FROM threads"))
        await asyncio.sleep(0)  # the read is on the worker now
        await asyncio.gather(read, store.write(_where(threads)))
        assert threads[0] is not threading.current_thread()
    finally:
        await store.close()


async def test_the_worker_checkpoints_the_wal_every_so_many_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sqlite_turns, "CHECKPOINT_EVERY", 5)
    store = SqliteStore(tmp_path / "s.db")
    checkpoints: list[threading.Thread] = []
    passive = sqlite_turns._passive_checkpoint

    def noted(conn: sqlite3.Connection) -> None:
        checkpoints.append(threading.current_thread())
        passive(conn)

    monkeypatch.setattr(sqlite_turns, "_passive_checkpoint", noted)
    try:
        await store.ensure_thread(T, R)
        autocheckpoint = await store.fetchone("PRAGMA wal_autocheckpoint")
        assert autocheckpoint is not None and autocheckpoint[0] == 0, "the store checkpoints"
        for n in range(12):
            await store.append_events(T, [EventIn("data-note", {"n": n})])
        await _turns(store).settle()  # as the store closes: the last two commits too
        assert len(checkpoints) == 3
        assert all(thread is not threading.current_thread() for thread in checkpoints)
    finally:
        await store.close()


async def test_a_store_closed_while_another_process_keeps_the_file_open_checkpoints_its_wal(
    tmp_path: Path,
) -> None:
    """A short-lived process (``tui-agent notify``) commits a few times and exits while a
    host keeps the file open: its close checkpoints what it wrote, so a stream of them does
    not grow the WAL for as long as the host stays idle."""
    path = tmp_path / "s.db"
    host = SqliteStore(path)
    await host.ensure_thread(T, R)
    note = "x" * 20_000  # five pages or so a write
    try:
        for n in range(30):
            brief = SqliteStore(path)
            await brief.append_events(T, [EventIn("data-note", {"n": n, "note": note})])
            await brief.close()
        # Each close checkpointed, so a later writer started the WAL over: it holds
        # a few writes, not thirty (1.3 MB without).
        wal = Path(f"{path}-wal").stat().st_size
        assert wal < 450_000, f"the WAL grew to {wal:,} bytes"
    finally:
        await host.close()


async def test_a_store_in_memory_keeps_every_write_on_the_worker() -> None:
    store = SqliteStore(":memory:")
    try:
        await store.ensure_thread(T, R)
        threads: list[threading.Thread] = []
        await store.write(_where(threads))
        assert threads[0] is not threading.current_thread()
        assert _turns(store).ran_here == 0
    finally:
        await store.close()
