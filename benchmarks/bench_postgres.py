"""The PostgreSQL store beside SQLite, every figure measured in the same run on both stores:

- cross-process send → subscriber sees the echo (process B sends with ``if_idle`` persist,
  a subscriber in process C sees the echo): p50/p99. Goal on PostgreSQL p50 ≤ 10 ms.
- the wake race: P processes send to one idle thread at the same instant, R rounds: exactly
  one wake per round, nothing lost.
- 1,000 ``send_message`` into one active run: accepted/s, all in the next model input in order.
- an idle subscriber's CPU (a peer process subscribed to a quiet thread), % of one core.
- append one message; recall the last 50 of a 100,000-message thread.

The PostgreSQL server is ``--pg URL`` (its user may create databases), else a throwaway one
started with initdb/pg_ctl as the tests do (``tests/pg_server.py``; fsync off there, as on a
test server — the SQLite file runs with its usual ``synchronous=NORMAL``).

    .venv/bin/python benchmarks/bench_postgres.py [--pg URL] [--rounds 100] [--racers 8] \
        [--race-rounds 50] [--messages 1000] [--history 100000] [--idle-s 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pg_server
from helpers.signal_peer import Peer
from helpers.sql import dollar_params, messages_sync

from tui_agent import Agent, Memory
from tui_agent.store import open_store
from tui_agent.store.changes import IDLE_S as POLL_S
from tui_agent.store.records import MessageIn
from tui_agent.testing import ScriptedModel

R = "bench-user"
Row = tuple[str, str, str]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Locations:
    """A fresh store location per figure: a SQLite file, or a new PostgreSQL database."""

    def __init__(self, tmp: Path, admin: str) -> None:
        self.tmp, self.admin, self.made = tmp, admin, []

    def new(self, kind: str, name: str) -> str:
        if kind == "sqlite":
            return str(self.tmp / f"{name}.db")
        database = pg_server.new_database_name()
        pg_server.create_database_sync(self.admin, database)
        self.made.append(database)
        return pg_server.database_url(self.admin, database)

    def drop_all(self) -> None:
        for database in self.made:
            pg_server.drop_database_sync(self.admin, database)


# -- cross-process latency ---------------------------------------------------------------------


def latency(where: str, rounds: int) -> tuple[float, float]:
    sender, watcher = Peer({"db": where, "name": "B"}), Peer({"db": where, "name": "C"})
    try:
        sender.expect("ready")
        watcher.expect("ready")
        thread = {"resource_id": R, "thread_id": "lat"}
        watcher.send("subscribe", sub="lat", target=thread)
        watcher.expect("sub-ready")
        samples = []
        for i in range(rounds):
            text = f"echo {i}"
            time.sleep(random.uniform(0, POLL_S))  # a random phase against any poll
            sender.send("send", message=text, target=thread, if_idle={"behavior": "persist"})
            accepted = sender.expect("accepted")
            echo = watcher.expect(
                lambda e, text=text: e["ev"] == "chunk"
                and e["chunk"]["type"] == "data-user-message"
                and e["chunk"]["payload"]["contents"] == text
            )
            samples.append(float(echo["t"]) - float(accepted["t_sent"]))
    finally:
        sender.close()
        watcher.close()
    return pct(samples, 0.5) * 1000, pct(samples, 0.99) * 1000


# -- the wake race -----------------------------------------------------------------------------


def wake_race(where: str, racers: int, rounds: int) -> tuple[int, set[int], int, float]:
    """(rounds with exactly one wake, wakes-per-round values, messages lost, s per round)."""
    config = {"db": where, "reply": "ok " * 10, "chunk_size": 3, "delay_s": 0.01}
    peers = [Peer({**config, "name": f"p{i}"}, timeout_s=30) for i in range(racers)]
    wakes: list[int] = []
    try:
        for peer in peers:
            peer.expect("ready")
        start = time.perf_counter()
        for r in range(rounds):
            thread = {"resource_id": R, "thread_id": f"race-{r}"}
            at = time.time() + 0.03
            for i, peer in enumerate(peers):
                peer.send("send", tag=r, message=f"r{r}-p{i}", target=thread, at=at)
            decided = [p.expect(lambda e, r=r: e["ev"] == "accepted" and e["tag"] == r)
                       for p in peers]
            wakes.append(sum(d["action"] == "wake" for d in decided))
        for peer in peers:
            for _ in [e for e in peer.seen if e["ev"] == "accepted" and e["action"] == "wake"]:
                peer.expect("done")
        elapsed = time.perf_counter() - start
        seen_by_model = {u for p in peers for e in p.seen if e["ev"] == "model-call"
                         for u in e["users"]}
    finally:
        for peer in peers:
            peer.close()
    # Read through the store: a sent message's text is stored once, in its signal's row.
    stored_texts = {m.content for m in messages_sync(where) if m.role == "user"}
    expected = {f"r{r}-p{i}" for r in range(rounds) for i in range(racers)}
    lost = len(expected - (stored_texts & seen_by_model))
    return sum(w == 1 for w in wakes), set(wakes), lost, elapsed / rounds


def query(where: str, sql: str) -> list[tuple[Any, ...]]:
    if where.startswith("postgresql://"):
        return pg_server.run_sync(pg_server.fetch(where, dollar_params(sql)))
    import sqlite3

    with sqlite3.connect(where) as conn:
        return conn.execute(sql).fetchall()


# -- throughput into one active run ------------------------------------------------------------


async def throughput(where: str, count: int) -> tuple[float, bool]:
    store = open_store(where)
    entered, gate = asyncio.Event(), asyncio.Event()
    calls: list[list[dict[str, Any]]] = []

    async def reply(messages: list[dict[str, Any]], tools: Any) -> str:
        calls.append(messages)
        if len(calls) == 1:
            entered.set()
            await gate.wait()
        return "answer"

    agent = Agent(name="bench", instructions="x", model=ScriptedModel(handler=reply),
                  memory=Memory(store=store))
    try:
        woken = await agent.send_message("start", resource_id=R, thread_id="t").accepted
        await entered.wait()
        start = time.perf_counter()
        receipts = [agent.send_message(f"m{i}", resource_id=R, thread_id="t")
                    for i in range(count)]
        decisions = await asyncio.gather(*(r.accepted for r in receipts))
        elapsed = time.perf_counter() - start
        assert {d["run_id"] for d in decisions} == {woken["run_id"]}
        gate.set()
        await woken["output"].result()
        users = [m["content"] for m in calls[1] if m["role"] == "user"]
        in_order = users == ["start", *(f"m{i}" for i in range(count))]
    finally:
        await agent.close()
        await store.close()
    return count / elapsed, in_order


# -- an idle subscriber's CPU ------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(where: str, seconds: float) -> float:
    """% of one core used by a process whose only work is one subscriber on a quiet thread."""
    watcher = Peer({"db": where, "name": "idle"})
    try:
        watcher.expect("ready")
        watcher.send("subscribe", sub="idle", target={"resource_id": R, "thread_id": "quiet"})
        watcher.expect("sub-ready")
        time.sleep(0.5)  # past the subscription's start-up
        before, start = cpu_seconds(watcher.proc.pid), time.monotonic()
        time.sleep(seconds)  # measuring idleness: nothing to wait for
        used = cpu_seconds(watcher.proc.pid) - before
        return 100 * used / (time.monotonic() - start)
    finally:
        watcher.close()


# -- append and recall -------------------------------------------------------------------------


async def append_and_recall(where: str, history: int) -> tuple[float, float]:
    """(ms to append one message, ms to recall the last 50) on a ``history``-message thread."""
    store = open_store(where)
    try:
        await store.ensure_thread("long", R)
        batch = 2000
        for first in range(0, history, batch):
            await store.append("long", R, messages=[
                MessageIn("user", f"message {n}") for n in range(first, first + batch)])
        appends = []
        for n in range(200):
            start = time.perf_counter()
            await store.append("long", R, messages=[MessageIn("user", f"extra {n}")])
            appends.append(time.perf_counter() - start)
        recalls = []
        for _ in range(200):
            start = time.perf_counter()
            recent = await store.list_messages("long", limit=50)
            recalls.append(time.perf_counter() - start)
        assert len(recent) == 50 and recent[-1].content == "extra 199"
    finally:
        await store.close()
    return pct(appends, 0.5) * 1000, pct(recalls, 0.5) * 1000


# -- the table ---------------------------------------------------------------------------------


def figures(locations: Locations, args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    kinds = ("postgres", "sqlite")
    for kind in kinds:
        p50, p99 = latency(locations.new(kind, "latency"), args.rounds)
        goal = "goal p50 ≤ 10 ms (LISTEN/NOTIFY)" if kind == "postgres" else \
            f"anchor: SQLite's change feed polls every {POLL_S * 1000:.0f} ms when quiet"
        rows.append((f"send → other process sees echo [{kind}]",
                     f"p50 {p50:.1f} / p99 {p99:.1f} ms", f"{args.rounds} signals; {goal}"))
    for kind in kinds:
        one, wakes, lost, per_round = wake_race(
            locations.new(kind, "race"), args.racers, args.race_rounds)
        rows.append((f"wake race {args.racers}×{args.race_rounds} [{kind}]",
                     f"{one}/{args.race_rounds} one wake",
                     f"wakes per round {sorted(wakes)}; lost {lost}; "
                     f"{per_round * 1000:.0f} ms/round"))
    for kind in kinds:
        rate, in_order = asyncio.run(throughput(locations.new(kind, "throughput"), args.messages))
        rows.append((f"{args.messages} send_message into a run [{kind}]", f"{rate:,.0f} /s",
                     f"all in the next model input, in order: {in_order}"))
    for kind in kinds:
        cpu = idle_cpu(locations.new(kind, "idle"), args.idle_s)
        rows.append((f"idle subscriber CPU [{kind}]", f"{cpu:.1f} % of a core",
                     f"over {args.idle_s:.0f} s, one subscriber on a quiet thread"))
    for kind in kinds:
        append_ms, recall_ms = asyncio.run(
            append_and_recall(locations.new(kind, "history"), args.history))
        rows.append((f"append one message [{kind}]", f"p50 {append_ms:.2f} ms",
                     f"thread of {args.history:,} messages"))
        rows.append((f"recall last 50 of {args.history:,} [{kind}]", f"p50 {recall_ms:.2f} ms",
                     "list_messages(limit=50)"))
    return rows


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with pg_server.throwaway_server() as admin:
        yield admin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pg", default=os.environ.get("TUI_AGENT_TEST_PG"))
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--racers", type=int, default=8)
    parser.add_argument("--race-rounds", type=int, default=50)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--history", type=int, default=100_000)
    parser.add_argument("--idle-s", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name, server(args.pg) as admin:
        locations = Locations(Path(name), admin)
        try:
            rows = figures(locations, args)
        finally:
            locations.drop_all()
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    print(f"{'figure':<{width}}  {'value':<{value_width}}  notes")
    for label, value, note in rows:
        print(f"{label:<{width}}  {value:<{value_width}}  {note}")


if __name__ == "__main__":
    main()
