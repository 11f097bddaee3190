"""Issue 22: waking an idle thread is fast. A send that wins the wake reaches its model after one
store round trip: its routing claims the run's start in the same transaction (the history, the
signals taken, the thread's chosen model and the editor's stored overrides:
``route_signal``'s ``claim_on_wake``); a wake with stream options of its own claims it in a
second (``Store.claim_wake``), as its options may change what it reads. The woken run still
honours what those reads were for: the thread's model, the stored instructions, and the signals
sent between the claim and its first call (tests/test_signals_routing.py has the case of a plan
that waits)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.common import AgentFactory, Seen
from openai_server import FakeOpenAIServer

from tui_agent import Memory
from tui_agent.agent.router import SignalReceipt
from tui_agent.store import SqliteStore
from tui_agent.store.records import WakeStart
from tui_agent.store.sqlite_turns import ConnectionTurns
from tui_agent.testing import ScriptedModel

R = "res-wake"
GUARD_S = 10.0


@pytest.mark.parametrize(("stream_options", "expected"), [
    (None, ["route_signal"]),
    ({"max_steps": 3}, ["route_signal", "claim_wake"]),
], ids=["plain send: one round trip", "with stream options: two"])
async def test_a_wake_reaches_its_model_after_the_fewest_store_round_trips(
    agents: AgentFactory, store: SqliteStore, monkeypatch: pytest.MonkeyPatch,
    stream_options: dict[str, Any] | None, expected: list[str],
) -> None:
    trips: list[str] = []
    at_model_call: list[list[str]] = []
    transaction = ConnectionTurns.transaction

    async def counted(turns: ConnectionTurns, fn: Any, *args: Any) -> Any:
        body, rest = (args[0], args[1:]) if fn.__name__ == "_with_trails" else (fn, args)
        trips.append(body.__name__ if body.__name__ != "in_dialect" else rest[0].__name__)
        return await transaction(turns, fn, *args)

    fetchall = store.fetchall

    async def counted_read(sql: str, params: Any = ()) -> Any:
        trips.append(f"read: {sql[:40]}")
        return await fetchall(sql, params)

    def reply(messages: list[dict[str, Any]], tools: Any) -> str:
        at_model_call.append(list(trips))
        return "hello"

    agent = agents(model=ScriptedModel(handler=reply), memory=Memory(store=store))
    warm = await agent.send_message("warm up", resource_id=R, thread_id="warm").accepted
    await warm["output"].result()  # the store opened, the dispatcher and rescuer started
    monkeypatch.setattr(ConnectionTurns, "transaction", counted)
    monkeypatch.setattr(store, "fetchall", counted_read)
    trips.clear()
    if_idle = None if stream_options is None else {"stream_options": stream_options}
    woken = await agent.send_message(
        "hi", resource_id=R, thread_id="idle", if_idle=if_idle).accepted
    result = await asyncio.wait_for(woken["output"].result(), GUARD_S)
    assert result.text == "hello"
    assert at_model_call[-1] == expected


async def test_a_send_between_the_routings_claim_and_the_runs_start_is_in_its_first_call(
    agents: AgentFactory, store: SqliteStore, seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The wake's routing took "first"; "meanwhile" is delivered into the woken run before its
    # task starts it (its default options wait for that delivery to commit).
    meanwhile: list[SignalReceipt] = []

    async def defaults(context: Any) -> dict[str, Any]:
        if meanwhile:
            await asyncio.wait_for(asyncio.shield(meanwhile[0].accepted), GUARD_S)
        return {}

    agent = agents(model=ScriptedModel(handler=seen), memory=Memory(store=store),
                   default_options=defaults)
    runtime = agent.runtime
    claimed_early = runtime.claimed_early

    def claimed_then_send(run_id: str, started: WakeStart) -> None:
        claimed_early(run_id, started)
        meanwhile.append(agent.send_message("meanwhile", resource_id=R, thread_id="late"))

    monkeypatch.setattr(runtime, "claimed_early", claimed_then_send)
    woken = await agent.send_message("first", resource_id=R, thread_id="late").accepted
    await asyncio.wait_for(woken["output"].result(), GUARD_S)
    assert (await meanwhile[0].accepted)["action"] == "deliver"
    assert len(seen.calls) == 1, "the run took the late send between steps, not before"
    texts = [str(m["content"]) for m in seen.calls[0] if m["role"] == "user"]
    assert ["first" in texts[0], "meanwhile" in texts[1]] == [True, True]


async def test_a_burst_into_an_idle_thread_is_answered_in_one_model_call(
    agents: AgentFactory, store: SqliteStore, seen: Seen
) -> None:
    agent = agents(model=ScriptedModel(handler=seen), memory=Memory(store=store))
    receipts = [agent.send_message(f"part {i}", resource_id=R, thread_id="burst")
                for i in range(20)]
    decisions = await asyncio.wait_for(
        asyncio.gather(*(receipt.accepted for receipt in receipts)), GUARD_S)
    assert [d["action"] for d in decisions] == ["wake"] + ["deliver"] * 19
    await asyncio.wait_for(decisions[0]["output"].result(), GUARD_S)
    assert len(seen.calls) == 1
    texts = [str(m["content"]) for m in seen.calls[0] if m["role"] == "user"]
    assert [f"part {i}" in text for i, text in enumerate(texts)] == [True] * 20


async def test_a_wake_answers_with_the_thread_s_model_and_the_stored_instructions(
    agents: AgentFactory, store: SqliteStore, openai_server: FakeOpenAIServer
) -> None:
    openai_server.script("from the thread's model")
    agent = agents(model=ScriptedModel(replies=["from the agent's model"]),
                   memory=Memory(store=store), editor={"instructions": True})
    await agent.save_editor_overrides({"instructions": "Edited instructions."})
    assert agent.memory is not None
    await agent.memory.set_thread_model("chosen", "openai/gpt-4o-mini", resource_id=R)
    woken = await agent.send_message("hi", resource_id=R, thread_id="chosen").accepted
    result = await asyncio.wait_for(woken["output"].result(), GUARD_S)
    assert result.text == "from the thread's model"
    sent = openai_server.requests[0]
    assert sent["model"] == "gpt-4o-mini"
    assert sent["messages"][0] == {"role": "system", "content": "Edited instructions."}
    assert sent["messages"][-1]["role"] == "user" and "hi" in str(sent["messages"][-1])


async def test_a_locked_agent_ignores_stored_overrides_on_a_wake(
    agents: AgentFactory, store: SqliteStore
) -> None:
    model = ScriptedModel(replies=["ok"])
    editable = agents(id="same", model=ScriptedModel(replies=[]), memory=Memory(store=store),
                      editor={"instructions": True})
    await editable.save_editor_overrides({"instructions": "Edited."})
    locked = agents(id="same", model=model, memory=Memory(store=store), editor=False)
    woken = await locked.send_message("hi", resource_id=R, thread_id="locked").accepted
    await asyncio.wait_for(woken["output"].result(), GUARD_S)
    assert model.requests[0].messages[0] == {"role": "system", "content": "Be brief."}
