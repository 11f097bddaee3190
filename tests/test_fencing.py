"""Fencing: a run whose owner stalled past its lease TTL (SIGSTOP, a laptop asleep) writes
nothing more once it wakes; the thread's log holds its events, then its successor's, never
mixed, and its status stays ``interrupted``.

Peers are real processes (tests/helpers/signal_peer.py) on one SQLite file; steps wait on the
peers' reports or on the store's rows, with bounds (failure guards)."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest
from helpers.signal_peer import Peer

R, T = "res-f", "thread-f"
THREAD = {"resource_id": R, "thread_id": T}
TTL_S = 1.0
GUARD_S = 15.0


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "shared.db")


@pytest.fixture
def start_peer(db: str) -> Iterator[Callable[..., Peer]]:
    started: list[Peer] = []

    def start(**config: Any) -> Peer:
        peer = Peer({"db": db, **config})
        started.append(peer)
        return peer

    yield start
    for peer in started:
        if peer.proc.poll() is None:
            os.kill(peer.proc.pid, signal.SIGCONT)  # never leave a stopped process behind
        peer.close()


def rows(db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll the store until ``condition`` holds (bounded: a failure guard)."""
    deadline = time.monotonic() + GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_run_stopped_past_its_ttl_never_writes_after_its_successor(
    start_peer: Callable[..., Peer], db: str
) -> None:
    # A streams a long answer slowly: it is mid-stream when stopped, and still has text to
    # write when it wakes.
    a = start_peer(name="A", ttl=TTL_S, reply="old " * 150, chunk_size=4, delay_s=0.01)
    b = start_peer(name="B", ttl=TTL_S, reply="fresh start")
    a.expect("ready")
    b.expect("ready")
    a.send("send", message="hello", target=THREAD)
    old = a.expect("accepted")["run_id"]
    a.expect("model-call")
    wait_for(
        lambda: bool(rows(db, "SELECT 1 FROM events WHERE run_id=? AND type='text-delta'", (old,))),
        "A's first text in the log",
    )
    os.kill(a.proc.pid, signal.SIGSTOP)
    try:
        wait_for(
            lambda: rows(db, "SELECT expires_at FROM leases")[0][0] < time.time(),
            "A's lease to expire",
        )
        b.send("send", message="anyone there?", target=THREAD)
        woken = b.expect("accepted")
        assert woken["action"] == "wake" and woken["run_id"] != old
        assert b.expect("done")["text"] == "fresh start"
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    ended = a.expect(lambda e: e["ev"] in ("failed", "done"))
    assert ended["ev"] == "failed" and "LeaseLostError" in ended["error"]
    new = woken["run_id"]
    log = [run for (run,) in rows(db, "SELECT run_id FROM events WHERE thread_id=? ORDER BY seq",
                                  (T,))]
    assert [run for run, _ in groupby(log)] == [old, new], "the two runs' events interleave"
    assert rows(db, "SELECT status FROM runs WHERE id=?", (old,)) == [("interrupted",)]
    assert rows(db, "SELECT status FROM runs WHERE id=?", (new,)) == [("finished",)]
    late = rows(db, "SELECT COUNT(*) FROM messages m JOIN messages n ON n.run_id=? "
                    "WHERE m.run_id=? AND m.seq > n.seq", (new, old))
    assert late == [(0,)], "the stale run stored a message after its successor's"
    assert rows(db, "SELECT COUNT(*) FROM leases") == [(0,)]
