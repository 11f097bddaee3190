"""Issue 22: waking an idle thread is fast. A send that wins the wake reaches its model after two
store round trips — its routing and the run's start (``Store.claim_wake``: the history, the
signals taken, the thread's chosen model and the editor's stored overrides, in one transaction)
— and the woken run still honours what those reads were for: the thread's model, the stored
instructions, and the signals sent while its plan waited (tests/test_signals_routing.py has the
late-signals case)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.common import AgentFactory
from openai_server import FakeOpenAIServer

import tui_agent.store.sqlite as sqlite_module
from tui_agent import Memory
from tui_agent.store import SqliteStore
from tui_agent.testing import ScriptedModel

R = "res-wake"
GUARD_S = 10.0


async def test_a_wake_reaches_its_model_after_two_store_round_trips(
    agents: AgentFactory, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    trips: list[str] = []
    at_model_call: list[list[str]] = []
    run_with_connection = sqlite_module.run_with_connection

    async def counted(db: Any, fn: Any, *args: Any) -> Any:
        inner = args[0] if fn.__name__ == "in_transaction" else fn
        name = inner.__name__ if inner.__name__ != "in_dialect" else args[1].__name__
        trips.append(name)
        return await run_with_connection(db, fn, *args)

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
    monkeypatch.setattr(sqlite_module, "run_with_connection", counted)
    monkeypatch.setattr(store, "fetchall", counted_read)
    trips.clear()
    woken = await agent.send_message("hi", resource_id=R, thread_id="idle").accepted
    result = await asyncio.wait_for(woken["output"].result(), GUARD_S)
    assert result.text == "hello"
    assert at_model_call[-1] == ["route_signal", "claim_wake"]


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
