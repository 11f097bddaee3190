"""Compound signal writes (``tui_agent.store.compound``), on both stores: a burst of state
signals, and of notifications, into a live run is ONE commit (the lane's version or the record,
and its signal's routing, in one transaction of the group), each caller gets its own result in
the order sent, and a call that fails in the middle of a batch fails only its caller (the batch
is replayed one by one), with nothing of it stored. Runs are held open with a gated model call
(never a sleep)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from helpers.common import AgentFactory, HeldFirstCall, StoreFactory

from tui_agent import Memory
from tui_agent.errors import SignalError
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "res-c", "thread-c"
GUARD_S = 20.0  # failure guard only


async def _held_run(agents: AgentFactory, store: Any, **options: Any) -> tuple[Any, Any, Any]:
    held = HeldFirstCall()
    agent = agents(model=held.model, memory=Memory(store=store), **options)
    changed = store.add_listener(T)
    woken = await agent.send_message("start", resource_id=R, thread_id=T).accepted
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    # The run's own step-start is stored before a burst is counted (its commit is not ours).
    while not any(e["type"] == "step-start" for e in await store.read_events(T, 0)):
        await asyncio.wait_for(changed.wait(), GUARD_S)
        changed.clear()
    store.remove_listener(T, changed)
    return agent, held, woken


async def _finish(held: HeldFirstCall, woken: dict[str, Any]) -> list[Any]:
    held.gate.set()
    await asyncio.wait_for(woken["output"].result(), GUARD_S)
    after = held.calls[1] if len(held.calls) > 1 else []  # what the run took next, if any
    return [m["content"] for m in after if m["role"] != "system"]


async def test_a_burst_of_state_signals_is_one_commit_with_versions_in_order(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    store = stores()
    agent, held, woken = await _held_run(agents, store)
    before = store.local_commits

    results = await asyncio.wait_for(asyncio.gather(*(
        agent.send_state_signal({"id": f"lane{i % 4}", "cache_key": f"k{i}", "value": {"i": i}},
                                resource_id=R, thread_id=T)
        for i in range(200))), GUARD_S)

    assert store.local_commits - before == 1
    assert {r["accepted"]["action"] for r in results} == {"deliver"}
    assert {r["accepted"]["run_id"] for r in results} == {woken["run_id"]}
    for lane in range(4):  # each lane's versions follow the order sent, no gap
        mine = [r for i, r in enumerate(results) if i % 4 == lane]
        assert [r["version"] for r in mine] == list(range(1, 51))
        assert [r["signal"].attributes["version"] for r in mine] == list(range(1, 51))
    current = await store.get_state_lane(T, "lane3")
    assert current is not None and current.version == 50 and current.value == {"i": 199}
    unchanged = await agent.send_state_signal(
        {"id": "lane3", "cache_key": "k199", "value": {"i": 199}}, resource_id=R, thread_id=T)
    assert unchanged == {"skipped": True, "reason": "unchanged"}  # cache_key dedupe holds
    seen = await _finish(held, woken)
    versions = [s for s in seen if 'id="lane0"' in str(s)]
    assert [f'version="{v}"' in str(s) for v, s in enumerate(versions, 1)] == [True] * 50


async def test_a_failing_state_signal_in_a_burst_fails_only_its_caller(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    store = stores()
    agent, held, woken = await _held_run(agents, store)
    before = store.local_commits

    results = await asyncio.wait_for(asyncio.gather(*(
        agent.send_state_signal({"id": "lane", "cache_key": f"k{i}", "value": i},
                                resource_id="someone-else" if i == 3 else R, thread_id=T)
        for i in range(8)), return_exceptions=True), GUARD_S)

    assert isinstance(results[3], SignalError) and "belongs to resource" in str(results[3])
    assert [r["version"] for i, r in enumerate(results) if i != 3] == list(range(1, 8))
    assert store.local_commits - before == 1
    history = await store.state_lane_history(T, "lane")
    assert [v.cache_key for v in reversed(history)] == [f"k{i}" for i in range(8) if i != 3]
    seen = await _finish(held, woken)
    assert sum('id="lane"' in str(s) for s in seen) == 7


def _note(i: int, **extra: Any) -> dict[str, Any]:
    return {"source": "ci", "kind": "build", "summary": f"n{i}", "priority": "high",
            "dedupe_key": f"d{i}", **extra}


async def test_a_burst_of_notifications_is_one_commit_each_delivered_in_order(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    store = stores()
    agent, held, woken = await _held_run(
        agents, store, notifications={"delivery_policy": {"default": "deliver"}})
    before = store.local_commits

    results = await asyncio.wait_for(asyncio.gather(*(
        agent.send_notification_signal(_note(i), resource_id=R, thread_id=T)
        for i in range(200))), GUARD_S)

    assert store.local_commits - before == 1
    assert {r["accepted"]["action"] for r in results} == {"deliver"}
    assert {r["run_id"] for r in results} == {woken["run_id"]}
    assert {r["record"].status for r in results} == {"delivered"}
    assert [r["record"].summary for r in results] == [f"n{i}" for i in range(200)]
    assert {r["record"].delivery_attempts for r in results} == {1}
    stored = await store.get_notification(results[7]["record"].id)
    assert stored == results[7]["record"]  # what the caller got is what is stored
    seen = await _finish(held, woken)
    positions = [next(k for k, s in enumerate(seen) if f">n{i}<" in str(s)) for i in range(200)]
    assert positions == sorted(positions)


async def test_a_burst_of_deferred_notifications_merges_by_dedupe_key_in_one_commit(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    store = stores()
    later = datetime.now(UTC) + timedelta(hours=1)
    policy = {"default": {"action": "defer", "deliver_at": later}}
    agent, held, woken = await _held_run(
        agents, store, notifications={"delivery_policy": policy})
    before = store.local_commits

    results = await asyncio.wait_for(asyncio.gather(*(
        agent.send_notification_signal(_note(i, dedupe_key=f"d{i % 2}"), resource_id=R,
                                       thread_id=T)
        for i in range(10))), GUARD_S)

    assert store.local_commits - before == 1
    assert {r["decision"].action for r in results} == {"defer"}
    assert len({r["record"].id for r in results}) == 2  # the burst merged by its two keys
    assert [r["record"].coalesced_count for r in results] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    pending = await store.list_notifications(thread_id=T, status="pending")
    assert sorted(n.coalesced_count for n in pending) == [5, 5]
    assert sorted(n.summary for n in pending) == ["n8", "n9"]
    assert await _finish(held, woken) == []  # deferred: nothing reached the run


async def test_a_failing_notification_in_a_burst_fails_only_its_caller(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    store = stores()
    agent, held, woken = await _held_run(
        agents, store, notifications={"delivery_policy": {"default": "deliver"}})
    before = store.local_commits

    results = await asyncio.wait_for(asyncio.gather(*(
        agent.send_notification_signal(_note(i), resource_id="someone-else" if i == 2 else R,
                                       thread_id=T)
        for i in range(6)), return_exceptions=True), GUARD_S)

    assert isinstance(results[2], SignalError) and "belongs to resource" in str(results[2])
    assert [r["record"].status for i, r in enumerate(results) if i != 2] == ["delivered"] * 5
    assert store.local_commits - before == 1
    stored = await store.list_notifications(thread_id=T)
    assert sorted(n.summary for n in stored) == ["n0", "n1", "n3", "n4", "n5"]
    seen = await _finish(held, woken)
    assert [i for i in range(6) if any(f">n{i}<" in str(s) for s in seen)] == [0, 1, 3, 4, 5]


async def test_a_burst_of_notifications_sent_now_merges_a_waiting_record_into_one_call_only(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    """A record waiting (deferred, unclaimed) is the merge target of the burst's first call
    with its key, as one after another: that call claims it, so the next ones make their own."""
    store = stores()
    agent, held, woken = await _held_run(
        agents, store, notifications={"delivery_policy": {"default": "deliver"}})
    later = datetime.now(UTC) + timedelta(hours=1)
    deferring = agents(model=ScriptedModel(replies=["-"]), memory=Memory(store=store),
                       notifications={"delivery_policy": {"default": {
                           "action": "defer", "deliver_at": later}}})
    waiting = await deferring.send_notification_signal(_note(0, dedupe_key="same"),
                                                        resource_id=R, thread_id=T)
    before = store.local_commits

    results = await asyncio.wait_for(asyncio.gather(*(
        agent.send_notification_signal(_note(i, dedupe_key="same"), resource_id=R, thread_id=T)
        for i in range(1, 4))), GUARD_S)

    assert store.local_commits - before == 1
    assert results[0]["record"].id == waiting["record"].id
    assert [r["record"].coalesced_count for r in results] == [2, 1, 1]
    assert len({r["record"].id for r in results}) == 3
    assert {r["record"].status for r in results} == {"delivered"}
    await _finish(held, woken)


PLAIN_SHAPES: list[dict[str, Any]] = [
    {"payload": {"n": 1.5, "ok": True, "url": "https://é"}, "summary": "é <b>&\"\n😀"},
    {"attributes": {"repo": "x/y", "n": 3, "gone": None}, "metadata": {"pr": 7, "by": "ü"}},
    {"metadata": {"none": None}, "payload": "text", "coalesce_key": "c"},
    {"payload": {"nested": [1, {"a": 2}]}},  # not plain: the general path, in the same burst
    {"attributes": {"list": [1, 2]}},  # not plain either
]


async def test_each_caller_of_a_mixed_burst_gets_the_record_stored_and_the_model_the_same_message(
    stores: StoreFactory, agents: AgentFactory
) -> None:
    """Plain notifications (their record made from what was written, never read back) and
    general ones in one burst: each caller's record is the stored one, and the run is given
    what the general path gives it (a policy with decide() takes that path for all)."""
    store = stores()
    agent, held, woken = await _held_run(
        agents, store, notifications={"delivery_policy": {"default": "deliver"}})
    before = store.local_commits
    shapes = [_note(i, **PLAIN_SHAPES[i % len(PLAIN_SHAPES)]) for i in range(20)]

    results = await asyncio.wait_for(asyncio.gather(*(
        agent.send_notification_signal(shape, resource_id=R, thread_id=T)
        for shape in shapes)), GUARD_S)

    assert store.local_commits - before == 1
    for result in results:
        assert result["record"] == await store.get_notification(result["record"].id)
        assert result["record"].status == "delivered"
        assert result["signal"].metadata["notification_id"] == result["record"].id
        assert result["decision"].reason == "delivery_policy.default"
    assert [r["record"].summary for r in results] == [s["summary"] for s in shapes]
    seen = await _finish(held, woken)
    ids = {r["record"].id: f"N{i}" for i, r in enumerate(results)}

    general_store = stores()
    agent2, held2, woken2 = await _held_run(agents, general_store, notifications={
        "delivery_policy": {"decide": lambda record, state: "deliver"}})
    general = [await agent2.send_notification_signal(shape, resource_id=R, thread_id=T)
               for shape in shapes]
    seen2 = await _finish(held2, woken2)
    ids2 = {r["record"].id: f"N{i}" for i, r in enumerate(general)}

    def named(messages: list[Any], by: dict[str, str]) -> list[str]:
        out = [str(m) for m in messages if "<notification" in str(m)]
        for record_id, name in by.items():
            out = [m.replace(record_id, name) for m in out]
        return out

    # (the same thread of the same database: the model is given the first burst as history)
    assert named(seen, ids) == named(seen2, ids2)[-20:] and len(named(seen, ids)) == 20
    for mine, theirs in zip(results, general, strict=True):
        skip = {"id", "thread_id", "created_at", "updated_at", "delivered_at"}
        assert mine["record"].model_dump(exclude=skip) == theirs["record"].model_dump(
            exclude=skip)
