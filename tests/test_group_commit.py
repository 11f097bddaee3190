"""Group commit: writes that arrive together share one transaction, each caller learns of its
own write only once it is committed, and one caller's failing write costs the others nothing.
Also: a reader sees a run's first delta before the model has produced its whole answer.

Runs are held open with a gated model call (never a sleep): the test knows the run is mid-step
because the gated call said so."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers.common import AgentFactory, HeldFirstCall

from tui_agent import Memory, SqliteStore
from tui_agent.errors import StoreError
from tui_agent.models.base import ModelRequest
from tui_agent.store import txn
from tui_agent.store.codec import loads, new_id
from tui_agent.store.records import EventIn, SignalIn
from tui_agent.testing import ScriptedModel

R, T = "res-1", "thread-1"
GUARD_S = 10.0  # failure guard only: every wait below ends on an event


def user_texts(messages: list[dict[str, Any]]) -> list[Any]:
    return [m["content"] for m in messages if m["role"] == "user"]


def stored_signal(path: str, signal_id: str) -> int:
    """How many rows another connection (as another process would) sees for the signal."""
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM signals WHERE id=?", (signal_id,)).fetchone()[0]


def user_signal(text: str, signal_id: str | None = None) -> SignalIn:
    return SignalIn(signal_id or new_id(), "user", {"role": "user", "content": text},
                    {"text": text})


# -- a burst of sends ----------------------------------------------------------------------------


async def test_a_burst_of_sends_is_stored_once_each_in_order_and_durable_when_accepted(
    store: SqliteStore, agents: AgentFactory, tmp_path: Path
) -> None:
    held = HeldFirstCall()
    agent = agents(model=held.model, memory=Memory(store=store))
    woken = await agent.send_message("start", resource_id=R, thread_id=T).accepted
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    texts = [f"m{i}" for i in range(100)]
    durable_when_accepted: list[bool] = []
    commits = store.local_commits

    receipts = [agent.send_message(text, resource_id=R, thread_id=T) for text in texts]
    for receipt in receipts:
        receipt.accepted.add_done_callback(  # checked the moment the receipt resolves
            lambda _, sid=receipt.signal.id: durable_when_accepted.append(
                stored_signal(store.path, sid) == 1
            )
        )
    decisions = await asyncio.wait_for(asyncio.gather(*(r.accepted for r in receipts)), GUARD_S)

    assert [d["action"] for d in decisions] == ["deliver"] * len(texts)
    assert {d["run_id"] for d in decisions} == {woken["run_id"]}
    assert durable_when_accepted == [True] * len(texts)
    assert 1 <= store.local_commits - commits < len(texts) // 10  # shared, not one per send
    held.gate.set()
    await asyncio.wait_for(woken["output"].result(), GUARD_S)
    assert user_texts(held.calls[1]) == ["start", *texts]  # the next model input, in order

    reopened = SqliteStore(store.path)  # what a later process reads: each once, in order
    try:
        stored = await reopened.list_messages(T, limit=1000)
    finally:
        await reopened.close()
    assert [m.content for m in stored if m.role == "user"] == ["start", *texts]


async def test_close_waits_for_every_receipt_of_a_large_burst(
    store: SqliteStore, agents: AgentFactory
) -> None:
    """Receipts are tracked without a callback each and pruned in bulk: past several prunes,
    close() still waits for every one, and once settled none is left in the background."""
    held = HeldFirstCall()
    agent = agents(model=held.model, memory=Memory(store=store))
    woken = await agent.send_message("start", resource_id=R, thread_id=T).accepted
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    first = [agent.send_message(f"a{i}", resource_id=R, thread_id=T) for i in range(700)]
    await asyncio.wait_for(asyncio.gather(*(r.accepted for r in first)), GUARD_S)
    assert agent.runtime.background() == []  # settled receipts are not waited for
    last = [agent.send_message(f"b{i}", resource_id=R, thread_id=T) for i in range(300)]
    held.gate.set()
    await asyncio.wait_for(agent.close(), GUARD_S)  # no await on the receipts themselves
    assert all(r.accepted.done() and not r.accepted.cancelled() for r in last)
    assert all(stored_signal(store.path, r.signal.id) == 1 for r in last)
    assert woken["action"] == "wake"


async def test_sends_to_an_idle_thread_in_one_group_wake_one_run_that_takes_them_all(
    store: SqliteStore, agents: AgentFactory
) -> None:
    seen: list[list[dict[str, Any]]] = []

    def reply(messages: list[dict[str, Any]], tools: Any) -> str:
        seen.append(messages)
        return "ok"

    agent = agents(model=ScriptedModel(handler=reply), memory=Memory(store=store))
    texts = [f"hello {i}" for i in range(20)]
    receipts = [agent.send_message(text, resource_id=R, thread_id=T) for text in texts]
    decisions = await asyncio.wait_for(asyncio.gather(*(r.accepted for r in receipts)), GUARD_S)

    assert decisions[0]["action"] == "wake"  # the first won the lease inside the group …
    run_id = decisions[0]["run_id"]
    assert all(d == {"action": "deliver", "run_id": run_id} for d in decisions[1:])  # … the rest
    await asyncio.wait_for(decisions[0]["output"].result(), GUARD_S)
    assert user_texts(seen[0]) == texts


# -- failures stay with their caller -------------------------------------------------------------


async def test_one_failing_write_in_a_group_does_not_lose_the_others(store: SqliteStore) -> None:
    await store.ensure_thread(T, R)
    commits = store.local_commits
    results = await asyncio.gather(
        store.append_events(T, [EventIn("data-note", {"n": 0})]),
        store.append_events(T, [EventIn("data-note", {"n": 1})]),
        store.update_thread("no-such-thread", title="x"),  # raises inside the transaction
        store.append_events(T, [EventIn("data-note", {"n": 2})]),
        return_exceptions=True,
    )

    assert results[0] is None and results[1] is None and results[3] is None
    assert isinstance(results[2], StoreError) and "no-such-thread" in str(results[2])
    assert store.local_commits - commits == 1  # all four queued before the writer's turn
    notes = [e["payload"]["n"] for e in await store.read_events(T, 0) if e["type"] == "data-note"]
    assert notes == [0, 1, 2]


async def test_a_bad_signal_in_a_burst_fails_alone_and_the_rest_keep_their_order(
    store: SqliteStore,
) -> None:
    run_id = new_id()
    assert await store.start_run(T, R, run_id, owner="me", ttl_s=30)
    taken = new_id()
    await store.route_signal(T, R, user_signal("first", taken), if_active="deliver",
                             if_idle="wake", owner="me", ttl_s=30)
    burst = [user_signal(f"s{i}") for i in range(5)]
    burst.insert(2, user_signal("same id again", taken))  # a duplicate id: the INSERT fails
    commits = store.local_commits

    results = await asyncio.gather(
        *(store.route_signal(T, R, s, if_active="deliver", if_idle="wake", owner="me", ttl_s=30)
          for s in burst),
        return_exceptions=True,
    )

    assert isinstance(results[2], sqlite3.IntegrityError)
    assert [r.action for i, r in enumerate(results) if i != 2] == ["deliver"] * 5  # type: ignore[union-attr]
    assert store.local_commits - commits == 1
    claimed = await store.claim_signals(T, R, run_id)
    assert [s["message"]["content"] for s in claimed] == ["first", *(f"s{i}" for i in range(5))]


async def test_a_group_that_cannot_commit_fails_every_caller_and_the_writer_goes_on(
    store: SqliteStore,
) -> None:
    await store.ensure_thread(T, R)

    def end_the_transaction(conn: sqlite3.Connection) -> None:
        conn.execute("ROLLBACK")  # the group's transaction is gone: nothing of it is stored

    grouped = [store.submit(txn.append, T, R, [], [EventIn("data-note", {"n": 1})]),
               store.submit(end_the_transaction)]
    results = await asyncio.gather(*grouped, return_exceptions=True)

    assert all(isinstance(r, sqlite3.OperationalError) for r in results)
    await store.append_events(T, [EventIn("data-note", {"n": 2})])  # the store still writes
    notes = [e["payload"]["n"] for e in await store.read_events(T, 0) if e["type"] == "data-note"]
    assert notes == [2]


@pytest.mark.parametrize(("group_commit", "commits_for_five"), [(True, 1), (False, 5)],
                         ids=["one loop iteration's writes share one transaction",
                              "without group commit every write is its own"])
async def test_the_writes_of_one_loop_iteration_and_their_transactions(
    tmp_path: Path, group_commit: bool, commits_for_five: int,
) -> None:
    store = SqliteStore(tmp_path / "s.sqlite", group_commit=group_commit)
    try:
        await store.ensure_thread(T, R)
        commits = store.local_commits
        await asyncio.gather(*(store.append_events(T, [EventIn("data-note", {"n": n})])
                               for n in range(5)))
        assert store.local_commits - commits == commits_for_five
    finally:
        await store.close()


async def test_a_cancelled_caller_s_queued_write_is_still_committed(store: SqliteStore) -> None:
    await store.ensure_thread(T, R)
    queued = store.submit(txn.append, T, R, [], [EventIn("data-note", {"n": 1})])
    queued.cancel()  # what awaiting it does when its caller is cancelled
    await store.append_events(T, [EventIn("data-note", {"n": 2})])  # commits after it
    notes = [e["payload"]["n"] for e in await store.read_events(T, 0) if e["type"] == "data-note"]
    assert notes == [1, 2]


def test_a_batch_that_fails_is_replayed_one_by_one_in_savepoints(tmp_path: Path) -> None:
    """The batch form's fallback, on a bare connection: the rows of the good calls land, the
    bad call gets its own error."""
    path = tmp_path / "batch.sqlite"
    asyncio.run(_make_thread_with_run(path))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        taken = conn.execute("SELECT id FROM signals").fetchone()[0]
        calls = [(T, R, s, s, "deliver", "wake", False, "me", 30.0, None)
                 for s in (user_signal("a"), user_signal("dup", taken), user_signal("b"))]
        outcomes = txn.in_group(conn, [(txn.route_signal, c) for c in calls])
        assert [o.error is None for o in outcomes] == [True, False, True]
        contents = [row[0] for row in conn.execute("SELECT message FROM signals ORDER BY seq")]
        assert [loads(c)["content"] for c in contents] == ["taken", "a", "b"]
    finally:
        conn.close()


def test_a_full_disk_in_a_group_fails_the_whole_group_with_its_own_error(tmp_path: Path) -> None:
    """SQLite rolls the whole transaction back when the disk is full: the group raises that
    error (nothing of it stored), not "no such savepoint" from rolling back a callee."""
    path = tmp_path / "full.sqlite"
    asyncio.run(_make_thread_with_run(path))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count={pages + 2}")
        small = [EventIn("text-delta", {"text": "x"})]
        large = [EventIn("text-delta", {"text": "x" * 200_000})]
        writes = [(txn.append, (T, R, [], small)), (txn.append, (T, R, [], large))]
        with pytest.raises(sqlite3.OperationalError, match="full"):
            txn.in_group(conn, writes)
        assert not conn.in_transaction
        deltas = conn.execute("SELECT COUNT(*) FROM events WHERE type='text-delta'").fetchone()
        assert deltas == (0,)
    finally:
        conn.close()


async def _make_thread_with_run(path: Path) -> None:
    store = SqliteStore(path)
    try:
        assert await store.start_run(T, R, new_id(), owner="me", ttl_s=30)
        await store.route_signal(T, R, user_signal("taken"), if_active="deliver",
                                 if_idle="wake", owner="me", ttl_s=30)
    finally:
        await store.close()


# -- the first delta -----------------------------------------------------------------------------


class CountingModel(ScriptedModel):
    """Counts the deltas it has produced: how far ahead of its reader it ran."""

    produced = 0

    async def _chunks(self, text: str, request: ModelRequest) -> AsyncIterator[str]:
        async for piece in super()._chunks(text, request):
            self.produced += 1
            yield piece


@pytest.mark.parametrize("with_memory", [False, True])
async def test_a_reader_sees_the_first_delta_before_the_model_has_produced_the_reply(
    agents: AgentFactory, store: SqliteStore, with_memory: bool
) -> None:
    total = 5000
    model = CountingModel(replies=["x" * total], chunk_size=1)  # never waits between deltas
    agent = agents(model=model, memory=Memory(store=store) if with_memory else None)
    options: dict[str, Any] = {"memory": {"resource": R, "thread": T}} if with_memory else {}
    output = await agent.stream("go", **options)
    produced_at_first: int | None = None
    received = 0
    async for _ in output.text_stream:
        if produced_at_first is None:
            produced_at_first = model.produced
        received += 1

    assert received == total
    assert produced_at_first is not None and produced_at_first < total // 100
