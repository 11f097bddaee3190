"""Faults of the outside world (issue 11): for each, how many messages were sent, stored,
answered, duplicated and lost, and how long until the thread was usable again — beside the
anchors measured in the same run: an idle thread's send → answer time, and the goal, lease
TTL + 2 s.

Faults: kill -9 of the owner with messages pending for it; SIGSTOP of the owner past its TTL
(then SIGCONT); a full disk mid-run; a provider silent before its first byte and mid-stream; the
owner exiting with a message queued behind its run; tool output that cannot be stored; 8 senders
× 200 messages while runs end and restart. Peers are real processes on one SQLite file
(tests/helpers/signal_peer.py); "usable again" is from the fault until the thread answered what
was waiting (or, where nothing waits, until its lease was released).

    .venv/bin/python benchmarks/bench_faults.py [--ttl 1.0] [--senders 8] [--per-sender 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.signal_peer import Peer
from helpers.sql import messages_sync
from openai_server import FakeOpenAIServer
from pydantic import BaseModel

from tui_agent import Agent, Memory, SqliteStore, create_tool
from tui_agent.models.litellm_model import load_litellm
from tui_agent.testing import ScriptedModel

R, T = "bench-r", "bench-t"
TARGET = {"resource_id": R, "thread_id": T}
GUARD_S = 60.0
SEND_EVERY_S = 0.05


@dataclass
class Row:
    fault: str
    sent: int
    stored: int
    answered: int
    duplicated: int
    lost: int
    usable_s: float
    note: str = ""


def rows(db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute(sql, params).fetchall()


def wait_for(condition: Callable[[], bool], what: str, guard: float = GUARD_S) -> None:
    deadline = time.monotonic() + guard
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.01)


def tally(fault: str, db: str, sent: list[str], usable_s: float, note: str = "") -> Row:
    """Count the sent texts in the thread's history: stored (once or more), duplicated, and
    answered (an assistant message comes after it)."""
    # Read through the store: a sent message's text is stored once, in its signal's row.
    history = [(m.seq, m.role, m.content) for m in messages_sync(db, T)]
    users = Counter(c for _, role, c in history if role == "user")
    last_answer = max((seq for seq, role, _ in history if role == "assistant"), default=-1)
    first_seq: dict[str, int] = {}
    for seq, role, content in history:
        if role == "user":
            first_seq.setdefault(content, seq)
    stored = sum(1 for text in sent if users[text] > 0)
    duplicated = sum(users[text] - 1 for text in sent if users[text] > 1)
    # answered: an assistant message comes after it (the run it reached, or a later one, saw it)
    answered = sum(1 for text in sent if first_seq.get(text, 1 << 60) < last_answer)
    return Row(fault, len(sent), stored, answered, duplicated, len(sent) - stored, usable_s, note)


def idle(db: str) -> bool:
    waiting = rows(db, "SELECT COUNT(*) FROM signals WHERE status IN ('pending','queued')")
    return waiting == [(0,)] and rows(db, "SELECT COUNT(*) FROM leases") == [(0,)]


# -- anchor ---------------------------------------------------------------------------------------


async def idle_answer_s(tmp: Path) -> float:
    store = SqliteStore(tmp / "anchor.db")
    agent = Agent(name="a", instructions="x", model=ScriptedModel(handler=lambda m, t: "ok"),
                  memory=Memory(store=store))
    times = []
    for n in range(20):
        started = time.perf_counter()
        await agent.generate(f"m{n}", memory={"resource": R, "thread": T})
        times.append(time.perf_counter() - started)
    await agent.close()
    await store.close()
    return sorted(times)[len(times) // 2]


# -- cross-process faults -------------------------------------------------------------------------


def kill_owner(tmp: Path, ttl: float) -> Row:
    db = str(tmp / "kill.db")
    a = Peer({"db": db, "name": "A", "ttl": ttl, "gate_calls": [0]})
    b = Peer({"db": db, "name": "B", "ttl": ttl, "reply": "answered"})
    try:
        a.expect("ready"), b.expect("ready")
        a.send("send", message="hello", target=TARGET)
        dead = a.expect("accepted")["run_id"]
        a.expect("model-call")
        sent = ["hello"] + [f"pending {n}" for n in range(5)]
        for text in sent[1:]:
            b.send("send", message=text, target=TARGET)
        for _ in sent[1:]:
            b.expect("accepted")
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait()
        killed = time.monotonic()
        wait_for(lambda: bool(rows(db, "SELECT 1 FROM runs WHERE status='finished' AND id!=?",
                                   (dead,))) and idle(db), "the rescue")
        return tally("kill -9 owner, 5 pending", db, sent, time.monotonic() - killed,
                     "no further send")
    finally:
        a.close(), b.close()


def sigstop_owner(tmp: Path, ttl: float) -> Row:
    db = str(tmp / "stop.db")
    a = Peer({"db": db, "name": "A", "ttl": ttl, "reply": "old " * 150, "chunk_size": 4,
              "delay_s": 0.01})
    b = Peer({"db": db, "name": "B", "ttl": ttl, "reply": "fresh"})
    try:
        a.expect("ready"), b.expect("ready")
        a.send("send", message="hello", target=TARGET)
        old = a.expect("accepted")["run_id"]
        wait_for(lambda: bool(rows(db, "SELECT 1 FROM events WHERE run_id=? AND "
                                       "type='text-delta'", (old,))), "A streaming")
        os.kill(a.proc.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            wait_for(lambda: rows(db, "SELECT expires_at FROM leases")[0][0] < time.time(),
                     "A's lease to expire")
            b.send("send", message="anyone there?", target=TARGET)
            b.expect("done")
            usable = time.monotonic() - stopped
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        ended = a.expect(lambda e: e["ev"] in ("failed", "done"))
        log = [run for (run,) in rows(db, "SELECT run_id FROM events WHERE thread_id=? "
                                          "ORDER BY seq", (T,))]
        blocks = [run for n, run in enumerate(log) if n == 0 or log[n - 1] != run]
        mixed = "mixed" if len(blocks) != len(set(blocks)) else "not mixed"
        note = f"old run {ended['ev']}, log {mixed}"
        return tally("SIGSTOP owner past TTL", db, ["hello", "anyone there?"], usable, note)
    finally:
        a.close(), b.close()


OWNER_SCRIPT = """
import asyncio, sqlite3, sys, time
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.testing import ScriptedModel

db, resource, thread, ttl = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])

async def reply(messages, tools):
    print("model-call", flush=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            if conn.execute("SELECT 1 FROM signals WHERE status='queued'").fetchone():
                break
        await asyncio.sleep(0.01)
    return "first answer"

taken = asyncio.Event()

async def held(messages, tools):
    if any(m["content"] == "second" for m in messages if m["role"] == "user"):
        taken.set()  # the queued run took "second"; it never answers here
        await asyncio.Event().wait()
    return await reply(messages, tools)

async def main():
    agent = Agent(name="script", id="peer", instructions="x",
                  model=ScriptedModel(handler=held if mid_call else reply),
                  memory=Memory(store=SqliteStore(db), lease_ttl_s=ttl))
    await agent.generate("first", memory={"resource": resource, "thread": thread})
    if mid_call:  # exit while the queued run is mid-call
        await asyncio.wait_for(taken.wait(), 30)

mid_call = sys.argv[5] == "mid-call"
asyncio.run(main())
"""


def owner_exits(tmp: Path, ttl: float, mid_call: bool) -> Row:
    db = str(tmp / f"exit-{mid_call}.db")
    b = Peer({"db": db, "name": "B", "ttl": ttl, "reply": "second answer"})
    when = "mid-call" if mid_call else "at-once"
    script = subprocess.Popen([sys.executable, "-c", OWNER_SCRIPT, db, R, T, str(ttl), when],
                              stdout=subprocess.PIPE, text=True)
    try:
        b.expect("ready")
        assert script.stdout is not None and script.stdout.readline().strip() == "model-call"
        b.send("send", kind="queue", message="second", target=TARGET)
        b.expect("accepted")
        script.wait(timeout=GUARD_S)
        exited = time.monotonic()
        wait_for(lambda: idle(db) and len(rows(db, "SELECT 1 FROM messages WHERE "
                                                   "role='assistant'")) >= 2, "the queued run")
        fault = "owner exits, queued run mid-call" if mid_call else "owner exits, 1 queued"
        return tally(fault, db, ["first", "second"], time.monotonic() - exited,
                     "script without close()")
    finally:
        if script.poll() is None:
            script.kill()
        b.close()


def senders_while_runs_restart(tmp: Path, ttl: float, senders: int, each: int) -> Row:
    db = str(tmp / "burst.db")
    # Each answer takes a few ms and each sender sends every SEND_EVERY_S: runs end and new
    # ones wake all along, sends landing while a run is finishing.
    peers = [Peer({"db": db, "name": f"S{n}", "ttl": ttl, "reply": "ack ack ack",
                   "chunk_size": 4}, timeout_s=GUARD_S)
             for n in range(senders)]
    try:
        for peer in peers:
            peer.expect("ready")
        sent = [f"s{p}-{n}" for n in range(each) for p in range(senders)]
        start = time.time() + 0.5
        for n in range(each):
            for p, peer in enumerate(peers):
                at = start + n * SEND_EVERY_S + p * SEND_EVERY_S / senders
                peer.send("send", message=f"s{p}-{n}", target=TARGET, at=at)
        for peer in peers:
            for _ in range(each):
                peer.expect("accepted")
        accepted = time.monotonic()
        wait_for(lambda: idle(db), "every message answered")
        runs = rows(db, "SELECT COUNT(*) FROM runs WHERE thread_id=?", (T,))[0][0]
        return tally(f"{senders} senders x {each}, runs restarting", db, sent,
                     time.monotonic() - accepted, f"{runs} runs")
    finally:
        for peer in peers:
            peer.close()


# -- in-process faults ----------------------------------------------------------------------------


async def disk_full(tmp: Path) -> Row:
    store = SqliteStore(tmp / "full.db")
    model = ScriptedModel(["small", "x" * 2_000_000, "after"], chunk_size=200_000)
    agent = Agent(name="a", instructions="x", model=model, memory=Memory(store=store))
    where = {"resource": R, "thread": T}
    await agent.generate("warm up", memory=where)
    (pages,) = await store.fetchone("PRAGMA page_count")
    await store.fetchone(f"PRAGMA max_page_count={pages + 8}")
    error = ""
    try:
        await agent.generate("big answer", memory=where)
    except Exception as raised:
        error = type(raised).__name__
    failed = time.monotonic()
    while await store.active_run(T) is not None:
        await asyncio.sleep(0.01)
    released = time.monotonic() - failed
    await store.fetchone("PRAGMA max_page_count=1073741823")  # the disk has room again
    await agent.generate("after", memory=where)
    await agent.close()
    await store.close()
    return tally("disk full mid-run", str(tmp / "full.db"), ["big answer", "after"], released,
                 f"{error}; lease released")


async def provider_hang(tmp: Path, mid_stream: bool, silence_s: float) -> Row:
    name = "mid" if mid_stream else "start"
    db = tmp / f"hang-{name}.db"
    store = SqliteStore(db)
    await asyncio.to_thread(load_litellm)  # its import (seconds) is not the fault's cost
    with FakeOpenAIServer() as server:
        os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-key"
        os.environ["OPENAI_BASE_URL"] = server.base_url
        server.script({"text": "partial then silence", "hold": True if mid_stream else "start"},
                      "after")
        agent = Agent(name="a", instructions="x",
                      model={"id": "openai/gpt-test", "route": "litellm"},
                      memory=Memory(store=store))
        which = "between_chunks" if mid_stream else "first_byte"
        settings = {"timeout": {"first_byte": 30.0, which: silence_s}, "max_retries": 0}
        where = {"resource": R, "thread": T}
        started = time.monotonic()
        error = ""
        try:
            await agent.generate("hello", memory=where, model_settings=settings)
        except Exception as raised:
            error = "timed out" if "provider timed out" in str(raised) else type(raised).__name__
        server.release()
        while await store.active_run(T) is not None:
            await asyncio.sleep(0.01)
        usable = time.monotonic() - started
        await agent.generate("after", memory=where, model_settings=settings)
        partial = [m.content for m in await store.list_messages(T) if m.metadata.get("failed")]
        await agent.close()
    await store.close()
    note = f"{error} after {silence_s:g} s; partial kept: {bool(partial and partial[0])}"
    fault = "provider hang mid-stream" if mid_stream else "provider hang before 1st byte"
    return tally(fault, str(db), ["hello", "after"], usable, note)


class Empty(BaseModel):
    pass


async def unstorable_tool_output(tmp: Path) -> Row:
    def circular() -> list[Any]:
        loop: list[Any] = []
        loop.append(loop)
        return loop

    outputs: list[Callable[[], Any]] = [circular, lambda: 10**4999, object,
                                        lambda: {"ok": True}]
    store = SqliteStore(tmp / "tool.db")
    sent = [f"call {n}" for n in range(len(outputs))]
    errors = 0
    started = time.monotonic()
    for text, make in zip(sent, outputs, strict=True):
        tool = create_tool(id="odd", input_schema=Empty, execute=lambda _i, make=make: make())
        model = ScriptedModel([{"tool_calls": [{"name": "odd", "args": {}}]}, "moved on"])
        agent = Agent(name="a", instructions="x", model=model, tools={"odd": tool},
                      memory=Memory(store=store))
        result = await agent.generate(text, memory={"resource": R, "thread": T})
        errors += result.tool_results[0].is_error
        await agent.close()
    leased = await store.active_run(T) is not None
    await store.close()
    usable = (time.monotonic() - started) / len(sent)
    note = f"{errors} tool errors of {len(sent)}; leased after: {leased}"
    return tally("tool output not storable", str(tmp / "tool.db"), sent, usable, note)


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ttl", type=float, default=1.0, help="lease TTL of the peers (s)")
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument("--per-sender", type=int, default=200)
    parser.add_argument("--silence", type=float, default=1.0, help="provider timeout (s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        anchor = asyncio.run(idle_answer_s(tmp))
        table = [
            kill_owner(tmp, args.ttl),
            sigstop_owner(tmp, args.ttl),
            asyncio.run(disk_full(tmp)),
            asyncio.run(provider_hang(tmp, False, args.silence)),
            asyncio.run(provider_hang(tmp, True, args.silence)),
            owner_exits(tmp, args.ttl, mid_call=False),
            owner_exits(tmp, args.ttl, mid_call=True),
            asyncio.run(unstorable_tool_output(tmp)),
            senders_while_runs_restart(tmp, args.ttl, args.senders, args.per_sender),
        ]
    goal = args.ttl + 2.0
    print(f"anchors: idle thread send -> answer p50 {anchor * 1000:.1f} ms; lease TTL "
          f"{args.ttl:g} s; goal: usable again within TTL + 2 s = {goal:g} s, "
          "nothing lost or duplicated")
    header = ("fault", "sent", "stored", "answered", "dup", "lost", "usable s", "goal", "note")
    print(f"{header[0]:<32} {header[1]:>5} {header[2]:>6} {header[3]:>8} {header[4]:>4} "
          f"{header[5]:>4} {header[6]:>8} {header[7]:>5}  {header[8]}")
    for row in table:
        ok = row.usable_s <= goal and row.lost == 0 and row.duplicated == 0
        print(f"{row.fault:<32} {row.sent:>5} {row.stored:>6} {row.answered:>8} "
              f"{row.duplicated:>4} {row.lost:>4} {row.usable_s:>8.2f} {'ok' if ok else 'MISS':>5}"
              f"  {row.note}")


if __name__ == "__main__":
    main()
