"""Retrying an answer and editing a message keep the old words in the history, marked
superseded, and out of every later model call; a thread's chosen model answers its runs,
from any process (issue 23)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.common import AgentFactory
from openai_server import FakeOpenAIServer

from tui_agent import Memory, SqliteStore
from tui_agent.errors import ConfigError, MissingCredentialError, ThreadBusyError
from tui_agent.testing import ScriptedModel

R, T = "me", "main"
MEMORY = {"resource": R, "thread": T}


class Recorder:
    """A scripted model that answers a1, a2, … and keeps what each call was given."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls.append(messages)
        return f"a{len(self.calls)}"

    def said(self, call: int) -> list[tuple[str, Any]]:
        return [(m["role"], m["content"]) for m in self.calls[call] if m["role"] != "system"]


async def test_a_retried_answer_stays_in_history_marked_and_no_model_sees_it(
    agents: AgentFactory, store: SqliteStore
) -> None:
    model = Recorder()
    agent = agents(model=ScriptedModel(handler=model), memory=Memory(store=store))
    await agent.generate("q", memory=MEMORY)

    retried = await agent.retry(resource_id=R, thread_id=T)
    result = await retried.result()

    assert result.text == "a2"
    assert model.said(1) == [("user", "q")]  # the same input, without the first answer
    history = await agent.memory.list_messages(T)
    assert [(m.role, m.content) for m in history] == [
        ("user", "q"), ("assistant", "a1"), ("assistant", "a2")]
    assert history[1].metadata["superseded"]["by"] == result.run_id
    assert "superseded" not in history[2].metadata
    await agent.generate("next", memory=MEMORY)
    assert model.said(2) == [("user", "q"), ("assistant", "a2"), ("user", "next")]


async def test_retry_is_refused_on_a_busy_or_empty_thread(
    agents: AgentFactory, store: SqliteStore
) -> None:
    agent = agents(model=ScriptedModel(replies=["x"]), memory=Memory(store=store))
    with pytest.raises(ConfigError, match="no message to answer again"):
        await agent.retry(resource_id=R, thread_id=T)
    assert await store.start_run(T, R, "someone-else", owner="other", ttl_s=30)
    await agent.memory.save_messages([{"role": "user", "content": "q"}], thread_id=T,
                                     resource_id=R)
    with pytest.raises(ThreadBusyError, match="already has a live run"):
        await agent.retry(resource_id=R, thread_id=T)
    assert all("superseded" not in m.metadata for m in await agent.memory.list_messages(T))


async def test_an_edited_message_and_its_answer_leave_the_model_s_context(
    agents: AgentFactory, store: SqliteStore
) -> None:
    model = Recorder()
    agent = agents(model=ScriptedModel(handler=model), memory=Memory(store=store))
    await agent.generate("first", memory=MEMORY)
    await agent.generate("typo", memory=MEMORY)

    exchange = await agent.memory.last_exchange(T)
    assert exchange.user is not None and exchange.user.content == "typo"
    assert [m.content for m in exchange.answer] == ["a2"]
    ids = [exchange.user.id, *(m.id for m in exchange.answer)]
    assert await agent.memory.supersede(T, ids, by="edit") == ids
    await agent.generate("fixed", memory=MEMORY)

    assert model.said(2) == [("user", "first"), ("assistant", "a1"), ("user", "fixed")]
    again = await agent.memory.last_exchange(T)
    assert again.user is not None and again.user.content == "fixed"


async def test_a_thread_s_chosen_model_answers_its_runs(
    agents: AgentFactory, store: SqliteStore, openai_server: FakeOpenAIServer
) -> None:
    """The thread keeps the model; the agent's own answers every other thread."""
    openai_server.script("from the thread's model")
    agent = agents(model=ScriptedModel(replies=["from the agent's model"] * 2),
                   memory=Memory(store=store))
    await agent.memory.set_thread_model(T, "openai/gpt-4o-mini", resource_id=R)
    assert await agent.memory.thread_model(T) == "openai/gpt-4o-mini"

    chosen = await agent.generate("hi", memory=MEMORY)
    other = await agent.generate("hi", memory={"resource": R, "thread": "other"})

    assert chosen.text == "from the thread's model"
    assert openai_server.requests[0]["model"] == "gpt-4o-mini"
    assert other.text == "from the agent's model"
    await agent.memory.set_thread_model(T, None, resource_id=R)
    assert await agent.memory.thread_model(T) is None
    assert (await agent.generate("hi", memory=MEMORY)).text == "from the agent's model"


async def test_a_chosen_model_without_its_key_fails_the_run_naming_the_variable(
    agents: AgentFactory, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = agents(model=ScriptedModel(replies=["x"]), memory=Memory(store=store))
    await agent.memory.set_thread_model(T, "openai/gpt-4o-mini", resource_id=R)
    with pytest.raises(MissingCredentialError, match="OPENAI_API_KEY"):
        await agent.generate("hi", memory=MEMORY)
    with pytest.raises(ConfigError):
        await agent.memory.set_thread_model(T, "", resource_id=R)
