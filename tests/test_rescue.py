"""No accepted message is left unanswered: when the run that messages wait for dies (kill -9)
or its process exits while a message is queued behind it, any live process with the agent open
takes the thread over and answers them, with no further send (tests of issue 11).

Peers are real processes (tests/helpers/signal_peer.py, or a short script) on one SQLite file;
steps wait on the peers' reports or the store's rows, with bounds (failure guards)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.common import until
from helpers.signal_peer import Peer
from helpers.sql import messages_sync

R, T = "res-r", "thread-r"
THREAD = {"resource_id": R, "thread_id": T}
TTL_S = 1.0
RESCUE_BOUND_S = TTL_S + 2.0  # the goal: usable again within TTL + 2 s
GUARD_S = 20.0


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
        peer.close()


def rows(db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def finished_runs(db: str, other_than: str) -> list[str]:
    found = rows(db, "SELECT id FROM runs WHERE status='finished' AND id!=?", (other_than,))
    return [run for (run,) in found]


def history(db: str) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages_sync(db, T)]


def test_messages_pending_for_a_killed_owner_are_answered_with_no_further_send(
    start_peer: Callable[..., Peer], db: str
) -> None:
    a = start_peer(name="A", ttl=TTL_S, gate_calls=[0])  # A's run never ends by itself
    b = start_peer(name="B", ttl=TTL_S, reply="all five answered")
    a.expect("ready")
    b.expect("ready")
    a.send("send", message="hello", target=THREAD)
    dead = a.expect("accepted")["run_id"]
    a.expect("model-call")
    sent = [f"message {n}" for n in range(5)]
    for text in sent:
        b.send("send", message=text, target=THREAD)
    for _ in sent:
        assert b.expect("accepted")["action"] == "deliver"  # pending for A's run
    os.kill(a.proc.pid, signal.SIGKILL)
    a.proc.wait()
    killed_at = time.monotonic()
    call = b.expect("model-call")
    assert call["users"] == ["hello", *sent]
    wait_for(lambda: bool(finished_runs(db, dead)), "the rescuing run to finish")
    elapsed = time.monotonic() - killed_at
    assert elapsed < RESCUE_BOUND_S, f"answered {elapsed:.2f}s after the kill"
    assert rows(db, "SELECT status FROM runs WHERE id=?", (dead,)) == [("interrupted",)]
    assert history(db) == [
        ("user", "hello"), *[("user", text) for text in sent],
        ("assistant", "all five answered"),
    ]
    wait_for(lambda: rows(db, "SELECT COUNT(*) FROM leases") == [(0,)], "the lease released")


OWNER_SCRIPT = """
import asyncio, sqlite3, sys, time
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.testing import ScriptedModel

db, resource, thread = sys.argv[1:4]

async def reply(messages, tools):
    print("model-call", flush=True)
    deadline = time.monotonic() + 15  # until another process queued a message (bounded)
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            if conn.execute("SELECT 1 FROM signals WHERE status='queued'").fetchone():
                break
        await asyncio.sleep(0.02)
    return "first answer"

async def main():
    memory = Memory(store=SqliteStore(db), lease_ttl_s=float(sys.argv[4]))
    agent = Agent(name="script", id="peer", instructions="x",
                  model=ScriptedModel(handler=reply), memory=memory)
    result = await agent.generate("first", memory={"resource": resource, "thread": thread})
    print("done", result.text, flush=True)
    # and returns, without agent.close(): asyncio.run cancels what is left

asyncio.run(main())
"""


def test_a_message_queued_behind_a_script_that_exits_is_answered_by_a_live_process(
    start_peer: Callable[..., Peer], db: str
) -> None:
    b = start_peer(name="B", ttl=TTL_S, reply="second answer")
    b.expect("ready")
    script = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, db, R, T, str(TTL_S)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert script.stdout is not None
        assert script.stdout.readline().strip() == "model-call"
        b.send("send", kind="queue", message="second", target=THREAD)
        assert b.expect("accepted")["action"] == "deliver"
        out, err = script.communicate(timeout=GUARD_S)
    finally:
        if script.poll() is None:
            script.kill()
            script.wait()
    assert "done first answer" in out, err
    exited_at = time.monotonic()
    call = b.expect("model-call")
    assert call["users"][-1] == "second"
    wait_for(lambda: ("assistant", "second answer") in history(db), "the queued answer")
    assert time.monotonic() - exited_at < RESCUE_BOUND_S
    assert history(db) == [
        ("user", "first"), ("assistant", "first answer"),
        ("user", "second"), ("assistant", "second answer"),
    ]
    wait_for(lambda: rows(db, "SELECT COUNT(*) FROM leases") == [(0,)], "the lease released")


CANCELLED_SCRIPT = """
import asyncio, sqlite3, sys, time
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.testing import ScriptedModel

db, resource, thread, ttl = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
second_call = asyncio.Event()

async def reply(messages, tools):
    if second_call.is_set() or any(m["content"] == "second" for m in messages
                                   if m["role"] == "user"):
        second_call.set()  # the queued run took "second": it never answers here
        await asyncio.Event().wait()
    print("model-call", flush=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with sqlite3.connect(db) as conn:
            if conn.execute("SELECT 1 FROM signals WHERE status='queued'").fetchone():
                break
        await asyncio.sleep(0.02)
    return "first answer"

async def main():
    memory = Memory(store=SqliteStore(db), lease_ttl_s=ttl)
    agent = Agent(name="script", id="peer", instructions="x",
                  model=ScriptedModel(handler=reply), memory=memory)
    await agent.generate("first", memory={"resource": resource, "thread": thread})
    await asyncio.wait_for(second_call.wait(), 15)  # the queued run is mid-call: exit now
    print("exiting", flush=True)

asyncio.run(main())
"""


def test_a_queued_message_taken_by_a_run_cancelled_at_exit_is_answered_elsewhere(
    start_peer: Callable[..., Peer], db: str
) -> None:
    b = start_peer(name="B", ttl=TTL_S, reply="second answer")
    b.expect("ready")
    script = subprocess.Popen(
        [sys.executable, "-c", CANCELLED_SCRIPT, db, R, T, str(TTL_S)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert script.stdout is not None
        assert script.stdout.readline().strip() == "model-call"
        b.send("send", kind="queue", message="second", target=THREAD)
        assert b.expect("accepted")["action"] == "deliver"
        out, err = script.communicate(timeout=GUARD_S)
    finally:
        if script.poll() is None:
            script.kill()
            script.wait()
    assert "exiting" in out, err
    exited_at = time.monotonic()
    call = b.expect("model-call")
    assert call["users"][-1] == "second"
    wait_for(lambda: ("assistant", "second answer") in history(db), "the queued answer")
    assert time.monotonic() - exited_at < RESCUE_BOUND_S
    assert history(db) == [
        ("user", "first"), ("assistant", "first answer"),
        ("user", "second"), ("assistant", "second answer"),
    ]
    wait_for(lambda: rows(db, "SELECT COUNT(*) FROM leases") == [(0,)], "the lease released")


# -- the rescuer is told, it does not poll (issue 22) ---------------------------------------------


def test_a_stranded_message_is_answered_within_the_lease_expiry_plus_100_ms(
    start_peer: Callable[..., Peer], db: str
) -> None:
    """B's rescuer sleeps until the dead run's lease runs out (it learnt when from the store
    after delivering into that run), then answers at once: no one-second poll in between."""
    a = start_peer(name="A", ttl=TTL_S, gate_calls=[0])  # A's run never ends by itself
    b = start_peer(name="B", ttl=TTL_S, reply="answered")
    a.expect("ready")
    b.expect("ready")
    a.send("send", message="hello", target=THREAD)
    dead = a.expect("accepted")["run_id"]
    a.expect("model-call")
    b.send("send", message="are you there?", target=THREAD)
    assert b.expect("accepted")["action"] == "deliver"  # pending for A's run
    os.kill(a.proc.pid, signal.SIGKILL)
    a.proc.wait()
    [(expires_at,)] = rows(db, "SELECT expires_at FROM leases WHERE run_id=?", (dead,))

    wait_for(lambda: bool(finished_runs(db, dead)), "the rescuing run to finish")

    [(ended_at,)] = rows(db, "SELECT ended_at FROM runs WHERE status='finished' AND id!=?",
                         (dead,))
    late_ms = (ended_at - expires_at) * 1000
    assert 0 <= late_ms <= 100, f"answered {late_ms:.0f} ms after the lease expired"
    assert history(db)[-1] == ("assistant", "answered")


async def test_an_idle_rescuer_does_not_look_until_something_changes(tmp_path: Path) -> None:
    """With nothing waiting it has no deadline: across more than the old one-second poll it
    reads the store not once; in a process that watches a thread, a commit by another process
    (another store object) wakes it."""
    import asyncio

    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.testing import ScriptedModel

    store, other = SqliteStore(tmp_path / "idle.db"), SqliteStore(tmp_path / "idle.db")
    agent = Agent(name="idle", instructions="x", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store=store))
    try:
        await (await agent.send_message("hi", resource_id=R, thread_id=T).accepted)[
            "output"].result()
        subscription = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
        rescuer = agent.runtime.rescuer
        assert rescuer is not None
        # The change feed's first marker wakes every watch once, and the run's last commits
        # may be heard once: let those settle, then measure.
        await asyncio.sleep(0.5)
        assert rescuer.looks >= 1
        looks = rescuer.looks
        await asyncio.sleep(1.5)  # measuring idleness: longer than the old poll interval
        assert rescuer.looks == looks
        await other.ensure_thread("another", R)  # another process's commit
        for _ in range(400):  # bounded: the change feed hears it within milliseconds
            if rescuer.looks > looks:
                break
            await asyncio.sleep(0.005)
        assert rescuer.looks > looks
        subscription.unsubscribe()
    finally:
        await agent.close()
        await store.close()
        await other.close()


async def test_messages_queued_behind_this_process_s_own_run_do_not_poke_the_rescuer(
    tmp_path: Path,
) -> None:
    """A look reads every waiting signal, so a burst queued behind a run this process runs
    (which starts their runs itself when it ends) must not poke the rescuer; a message queued
    behind another process's run does (that owner may die)."""
    import asyncio

    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.testing import ScriptedModel

    entered, gate = asyncio.Event(), asyncio.Event()

    async def held(messages: list[dict[str, Any]], tools: Any) -> str:
        if not entered.is_set():
            entered.set()
            await gate.wait()
        return "ok"

    store, other_store = SqliteStore(tmp_path / "q.db"), SqliteStore(tmp_path / "q.db")
    agent = Agent(name="q", instructions="x", model=ScriptedModel(handler=held),
                  memory=Memory(store=store))
    other = Agent(name="q", instructions="x", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store=other_store))
    try:
        woken = await agent.send_message("hold", **THREAD).accepted
        await asyncio.wait_for(entered.wait(), GUARD_S)
        rescuer = agent.runtime.rescuer
        assert rescuer is not None
        queued = [agent.queue_message(f"q{i}", **THREAD).accepted for i in range(50)]
        assert {d["action"] for d in await asyncio.gather(*queued)} == {"deliver"}
        assert rescuer.pokes == 0

        await other.queue_message("from elsewhere", **THREAD).accepted
        other_rescuer = other.runtime.rescuer
        assert other_rescuer is not None and other_rescuer.pokes == 1
        gate.set()
        await asyncio.wait_for(woken["output"].result(), GUARD_S)
    finally:
        gate.set()
        await other.close()
        await agent.close()
        await store.close()
        await other_store.close()


async def test_a_signal_taken_before_the_rescuer_looks_is_answered_after_its_run_is_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B queues a message behind A's run, and its rescuer looks only once A's next run has
    taken the message: nothing waits then. That run is cancelled as if its process exited: it
    hands the message back (a resume marker) and releases its lease, a commit B does not hear
    of (B watches no thread). B minds the thread it sent into, looks again when the lease would
    have run out, and answers. CI caught the unminded rescuer under load: it slept for ever."""
    import asyncio

    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.testing import ScriptedModel

    first_held, queued_taken, b_called = asyncio.Event(), asyncio.Event(), asyncio.Event()
    release_first = asyncio.Event()

    async def owner_model(messages: list[dict[str, Any]], tools: Any) -> str:
        if any(m["role"] == "user" and m["content"] == "second" for m in messages):
            queued_taken.set()
            await asyncio.Event().wait()  # mid-call when its process exits
        first_held.set()
        await release_first.wait()
        return "first answer"

    async def other_model(messages: list[dict[str, Any]], tools: Any) -> str:
        b_called.set()
        return "second answer"

    db = tmp_path / "minded.db"
    a_store, b_store = SqliteStore(db), SqliteStore(db)
    real_outlook = b_store.rescue_outlook

    async def outlook_once_taken() -> tuple[bool, float | None]:
        await queued_taken.wait()  # B's rescuer looks only after A's queued run took it
        return await real_outlook()

    monkeypatch.setattr(b_store, "rescue_outlook", outlook_once_taken)
    a = Agent(name="peer", id="peer", instructions="x", model=ScriptedModel(handler=owner_model),
              memory=Memory(store=a_store, lease_ttl_s=TTL_S))
    b = Agent(name="peer", id="peer", instructions="x", model=ScriptedModel(handler=other_model),
              memory=Memory(store=b_store, lease_ttl_s=TTL_S))
    try:
        first = await a.stream("first", memory={"resource": R, "thread": T})
        await asyncio.wait_for(first_held.wait(), GUARD_S)
        assert (await b.queue_message("second", **THREAD).accepted)["action"] == "deliver"
        assert b.runtime.rescuer is not None and b.runtime.rescuer.minding == {T}
        release_first.set()
        await asyncio.wait_for(first.result(), GUARD_S)
        await asyncio.wait_for(queued_taken.wait(), GUARD_S)
        rescuer = b.runtime.rescuer
        await until(lambda: rescuer.looks >= 1, "B's look, held until now", GUARD_S)
        assert rescuer.looks == 1  # it saw nothing waiting: the message is in A's run
        await a.runtime.stop_dispatcher()  # A's process exits: no rescuer of its own,
        (queued,) = a.local_runs()  # and its queued run is cancelled mid-call
        assert queued.task is not None
        queued.task.cancel()
        await asyncio.wait({queued.task}, timeout=GUARD_S)
        await asyncio.wait_for(b_called.wait(), RESCUE_BOUND_S)
        await asyncio.wait_for(b.wait_for_local_runs(), GUARD_S)
        assert [(m.role, m.content) for m in await b_store.list_messages(T)] == [
            ("user", "first"), ("assistant", "first answer"),
            ("user", "second"), ("assistant", "second answer"),
        ]
        assert rescuer.minding == frozenset()  # the run ended: nothing to mind
    finally:
        release_first.set()
        await a.close(timeout=GUARD_S)
        await b.close(timeout=GUARD_S)
        await a_store.close()
        await b_store.close()
