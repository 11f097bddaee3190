"""Group commit on PostgreSQL, with SQLite's guarantees (tests/test_group_commit.py holds
SQLite's own): a burst of sends shares a few transactions, each caller hears of its signal only
once it is committed, in order; of concurrent sends to an idle thread from two store objects
(as two processes) exactly one wakes it; a bad signal fails alone; a group whose transaction
fails fails every caller of that group and nothing of it is stored, while the groups around it
keep their receipts.

The shared tests run on both stores (``both_stores``); runs are held open with a gated model
call (never a sleep)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pg_server
import pytest
from helpers.common import AgentFactory, HeldFirstCall, StoreFactory

from tui_agent import Memory
from tui_agent.store import open_store
from tui_agent.store.codec import new_id
from tui_agent.store.postgres import PostgresStore
from tui_agent.store.records import SignalIn

pytestmark = pytest.mark.both_stores

R, T = "res-g", "thread-g"
GUARD_S = 20.0  # failure guard only


def user_texts(messages: list[dict[str, Any]]) -> list[Any]:
    return [m["content"] for m in messages if m["role"] == "user"]


def user_signal(text: str, signal_id: str | None = None) -> SignalIn:
    return SignalIn(signal_id or new_id(), "user", {"role": "user", "content": text},
                    {"text": text})


def commits_of(store: Any) -> int:
    return int(store.local_commits)


async def test_a_burst_of_every_kind_shares_a_few_transactions_in_order_and_durable(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    store, other = stores(), stores()  # other: a second connection, as another process reads
    held = HeldFirstCall()
    agent = agents(model=held.model, memory=Memory(store=store))
    woken = await agent.send_message("start", resource_id=R, thread_id=T).accepted
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    texts = [f"m{i}" for i in range(200)]
    durable: list[asyncio.Future[bool]] = []
    before = commits_of(store)

    receipts = []
    for i, text in enumerate(texts):
        if i % 3 == 0:
            receipt = agent.send_message(text, resource_id=R, thread_id=T)
        elif i % 3 == 1:
            receipt = agent.send_signal({"type": "user", "contents": text},
                                        resource_id=R, thread_id=T)
        else:
            receipt = agent.send_signal({"type": "reactive", "contents": text,
                                         "attributes": {"n": str(i)}}, resource_id=R, thread_id=T)
        receipts.append(receipt)
    for receipt in receipts:  # checked the moment each receipt resolves, through `other`
        sid = receipt.signal.id
        durable.append(asyncio.ensure_future(_stored_when(receipt.accepted, other, sid)))
    decisions = await asyncio.wait_for(asyncio.gather(*(r.accepted for r in receipts)), GUARD_S)

    assert {d["action"] for d in decisions} == {"deliver"}
    assert {d["run_id"] for d in decisions} == {woken["run_id"]}
    assert await asyncio.gather(*durable) == [True] * len(texts)
    assert 1 <= commits_of(store) - before <= 20  # shared, not one per send
    held.gate.set()
    await asyncio.wait_for(woken["output"].result(), GUARD_S)
    seen = [m["content"] for m in held.calls[1] if m["role"] != "system"]
    assert seen[0] == "start"
    assert [text for text in texts if not any(text in str(s) for s in seen)] == []
    positions = [next(k for k, s in enumerate(seen) if f">{t}<" in str(s) or s == t)
                 for t in texts]
    assert positions == sorted(positions)  # the next model input has them in the order sent


async def _stored_when(accepted: asyncio.Future[Any], other: Any, signal_id: str) -> bool:
    await accepted
    waiting = await other.waiting_signals(T)
    return any(s["id"] == signal_id for s in waiting)


async def test_concurrent_sends_from_two_stores_to_an_idle_thread_wake_it_once(
    stores: StoreFactory, tmp_path: Path
) -> None:
    shared = tmp_path / "shared.sqlite"
    first, second = stores(shared), stores(shared)  # two processes on one database
    await first.ensure_thread(T, R)

    def burst(store: Any, owner: str) -> list[asyncio.Future[Any]]:
        return [store.route_signal_soon(T, R, user_signal(f"{owner}{i}"), if_active="deliver",
                                        if_idle="wake", owner=owner, ttl_s=30)
                for i in range(50)]

    results = await asyncio.wait_for(
        asyncio.gather(*burst(first, "a"), *burst(second, "b")), GUARD_S)

    wakes = [r for r in results if r.action == "wake"]
    assert len(wakes) == 1
    assert {r.run_id for r in results} == {wakes[0].run_id}  # every other one delivers into it
    assert len(await first.waiting_signals(T)) == 100


async def test_a_burst_of_queued_messages_waits_in_order_each_for_a_run_of_its_own(
    store: Any,
) -> None:
    assert await store.start_run(T, R, new_id(), owner="me", ttl_s=30)
    before = commits_of(store)

    results = await asyncio.gather(*(
        store.route_signal(T, R, user_signal(f"q{i}"), if_active="deliver", if_idle="wake",
                           queue=True, owner="me", ttl_s=30) for i in range(20)))

    assert [r.action for r in results] == ["deliver"] * 20
    assert len({r.run_id for r in results}) == 20  # each its own run, started in turn
    assert commits_of(store) - before <= 2
    waiting = await store.waiting_signals(T)
    assert [(w["status"], w["run_id"]) for w in waiting] == [
        ("queued", r.run_id) for r in results]


@pytest.mark.parametrize("size", [5, 40])  # 40: PostgreSQL loads the batch with COPY
async def test_a_bad_signal_in_a_burst_fails_alone_and_the_rest_keep_their_order(
    store: Any, size: int,
) -> None:
    run_id = new_id()
    assert await store.start_run(T, R, run_id, owner="me", ttl_s=30)
    taken = new_id()
    await store.route_signal(T, R, user_signal("first", taken), if_active="deliver",
                             if_idle="wake", owner="me", ttl_s=30)
    burst = [user_signal(f"s{i}") for i in range(size)]
    burst.insert(2, user_signal("same id again", taken))  # a duplicate id: its INSERT fails
    before = commits_of(store)

    results = await asyncio.gather(
        *(store.route_signal(T, R, s, if_active="deliver", if_idle="wake", owner="me", ttl_s=30)
          for s in burst),
        return_exceptions=True,
    )

    assert isinstance(results[2], Exception) and "unique" in str(results[2]).lower()
    assert [r.action for i, r in enumerate(results) if i != 2] == ["deliver"] * size
    assert commits_of(store) - before == 1
    claimed = await store.claim_signals(T, R, run_id)
    assert [s["message"]["content"] for s in claimed] == [
        "first", *(f"s{i}" for i in range(size))]


@pytest.fixture
async def pg_store(pg_database: str) -> AsyncIterator[PostgresStore]:
    store = open_store(pg_database)
    assert isinstance(store, PostgresStore)
    try:
        yield store
    finally:
        await store.close()


async def test_a_group_that_fails_at_commit_fails_its_callers_only_and_the_writer_goes_on(
    pg_store: PostgresStore,
) -> None:
    """A constraint checked at COMMIT fails the whole group half-way through committing:
    its callers get the error and nothing of it is stored; the group queued behind it (sent
    while it was in flight) commits and its callers get their receipts."""
    store = pg_store
    run_id = new_id()
    assert await store.start_run(T, R, run_id, owner="me", ttl_s=30)
    for statement in POISON_AT_COMMIT:
        await pg_server.fetch(store.url, statement)

    def send(text: str) -> asyncio.Future[Any]:
        return store.route_signal_soon(T, R, user_signal(text), if_active="deliver",
                                       if_idle="wake", owner="me", ttl_s=30)

    doomed = [send(f"d{i}") for i in range(5)] + [send("poison")]
    # The writer takes the doomed group on its first turn (it is in flight from then on);
    # what is sent after that queues behind it, as the next group.
    for _ in range(100):  # bounded: a writer's first turn is one loop iteration away
        if store.route_queue_length == 0:
            break
        await asyncio.sleep(0)  # one loop turn: lets the writer take the queue
    assert store.route_queue_length == 0 and not doomed[0].done()
    behind = [send(f"k{i}") for i in range(5)]
    failed = await asyncio.wait_for(asyncio.gather(*doomed, return_exceptions=True), GUARD_S)
    kept = await asyncio.wait_for(asyncio.gather(*behind), GUARD_S)

    assert all(isinstance(f, Exception) and "poison" in str(f) for f in failed)
    assert [k.action for k in kept] == ["deliver"] * 5
    claimed = await store.claim_signals(T, R, run_id)
    assert [s["message"]["content"] for s in claimed] == [f"k{i}" for i in range(5)]


POISON_AT_COMMIT = ["""
CREATE FUNCTION poison_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.data LIKE '%"poison"%' THEN
        RAISE EXCEPTION 'poison signal refused at commit';
    END IF;
    RETURN NULL;
END $$
""", """
CREATE CONSTRAINT TRIGGER poison_at_commit AFTER INSERT ON signals
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION poison_check()
"""]
