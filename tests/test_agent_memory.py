"""Memory threads under the agent: the memory option, history to the model, messages stored as
they happen (also when a run crashes), busy threads, and Memory's reading API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from helpers.common import AgentFactory
from pydantic import BaseModel

from tui_agent import Agent, Memory, SqliteStore, create_tool
from tui_agent.errors import (
    ConfigError,
    ModelCallError,
    RequestContextError,
    StoreError,
    ThreadBusyError,
)
from tui_agent.models.base import ModelRequest, StepEnd, TextDelta
from tui_agent.testing import ScriptedModel


class AddInput(BaseModel):
    a: int
    b: int


ADD = create_tool(id="add", description="Add", input_schema=AddInput, execute=lambda i: i.a + i.b)


@pytest.fixture
def make_agent(agents: AgentFactory) -> AgentFactory:
    """``make_agent(model, memory, **options)``: an agent named "mem", closed after the test."""

    def make(model: Any, memory: Memory, **options: Any) -> Agent:
        return agents(name="mem", model=model, memory=memory, **options)

    return make


def on(thread: Any, resource: str = "user-1") -> dict[str, Any]:
    return {"memory": {"resource": resource, "thread": thread}}


def roles(messages: list[Any]) -> list[tuple[str, Any]]:
    return [(m.role, m.content) for m in messages]


def is_utc(value: Any) -> bool:
    return value.tzinfo is not None and value.utcoffset() == timedelta(0)


# -- the memory option -----------------------------------------------------------------------


async def test_a_thread_id_creates_the_thread_under_the_resource(
    memory: Memory, make_agent: AgentFactory
) -> None:
    assert await memory.get_thread("t1") is None
    result = await make_agent(ScriptedModel(["hello"]), memory).generate("hi", **on("t1"))
    thread = await memory.get_thread("t1")
    assert thread is not None
    assert (thread.id, thread.resource_id, thread.title, thread.metadata) == (
        "t1",
        "user-1",
        None,
        {},
    )
    assert (result.thread_id, result.resource_id) == ("t1", "user-1")


async def test_a_thread_object_creates_then_updates_title_and_metadata(
    memory: Memory, make_agent: AgentFactory
) -> None:
    agent = make_agent(ScriptedModel(["a", "b", "c"]), memory)
    await agent.generate("hi", **on({"id": "t1", "title": "Plans", "metadata": {"p": 1}}))
    thread = await memory.get_thread("t1")
    assert thread is not None and (thread.title, thread.metadata) == ("Plans", {"p": 1})
    created = thread.created_at

    await agent.generate("more", **on({"id": "t1", "title": "Trip plans", "metadata": {"p": 2}}))
    thread = await memory.get_thread("t1")
    assert thread is not None and (thread.title, thread.metadata) == ("Trip plans", {"p": 2})
    assert thread.created_at == created and thread.updated_at >= created

    await agent.generate("again", **on("t1"))
    thread = await memory.get_thread("t1")
    assert thread is not None and thread.title == "Trip plans", "an id alone keeps the title"
    assert len(await memory.list_threads("user-1")) == 1


async def test_recent_history_goes_to_the_model(memory: Memory, make_agent: AgentFactory) -> None:
    model = ScriptedModel(
        [{"tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}}]}, "3.", "You asked 1+2."]
    )
    agent = make_agent(model, memory, tools={"add": ADD})
    await agent.generate("What is 1+2?", **on("t1"))
    await agent.generate("What did I ask?", **on("t1"))

    sent = model.requests[2].messages
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[1] == {"role": "user", "content": "What is 1+2?"}
    call_id = sent[2]["tool_calls"][0]["id"]
    assert sent[2]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1, "b": 2}'}
    assert sent[3] == {"role": "tool", "content": "3", "tool_call_id": call_id}
    assert sent[4] == {"role": "assistant", "content": "3."}
    assert sent[5] == {"role": "user", "content": "What did I ask?"}


async def test_other_threads_history_does_not_leak(
    memory: Memory, make_agent: AgentFactory
) -> None:
    model = ScriptedModel(["one", "two"])
    agent = make_agent(model, memory)
    await agent.generate("on thread one", **on("t1"))
    await agent.generate("on thread two", **on("t2"))
    assert [m["content"] for m in model.requests[1].messages] == ["Be brief.", "on thread two"]


async def test_history_is_bounded_by_last_messages(
    store: SqliteStore, make_agent: AgentFactory
) -> None:
    memory = Memory(store=store, last_messages=2)
    model = ScriptedModel(["a1", "a2", "a3"])
    agent = make_agent(model, memory)
    await agent.generate("q1", **on("t1"))
    await agent.generate("q2", **on("t1"))
    await agent.generate("q3", **on("t1"))
    assert [m["content"] for m in model.requests[2].messages] == ["Be brief.", "q2", "a2", "q3"]


async def test_messages_are_stored_with_roles_and_run_id(
    memory: Memory, make_agent: AgentFactory
) -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "add", "args": {"a": 2, "b": 2}}]}, "4."])
    result = await make_agent(model, memory, tools={"add": ADD}).generate("2+2?", **on("t1"))
    stored = await memory.list_messages("t1")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert {m.run_id for m in stored} == {result.run_id}
    assert stored[0].content == "2+2?" and stored[2].content == "4" and stored[3].content == "4."
    assert stored[1].metadata["tool_calls"][0]["function"]["name"] == "add"
    assert stored[2].metadata["tool_call_id"] == result.tool_calls[0].tool_call_id
    assert all(is_utc(m.created_at) and m.thread_id == "t1" for m in stored)
    run = await memory.store.get_run(result.run_id)
    assert run is not None and (run.status, run.finish_reason) == ("finished", "stop")
    assert run.agent_id == "mem"


async def test_messages_are_stored_as_they_happen(memory: Memory, make_agent: AgentFactory) -> None:
    seen_in_store: list[list[tuple[str, Any]]] = []

    async def handler(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        seen_in_store.append(roles(await memory.list_messages("t1")))  # during step 2
        return "5."

    model = ScriptedModel(
        [{"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]}], handler=handler
    )
    await make_agent(model, memory, tools={"add": ADD}).generate("2+3?", **on("t1"))
    assert [role for role, _ in seen_in_store[0]] == ["user", "assistant", "tool"]
    assert seen_in_store[0][2] == ("tool", "5")


async def test_a_crash_mid_run_keeps_what_was_said_and_frees_the_thread(
    memory: Memory, make_agent: AgentFactory
) -> None:
    model = ScriptedModel(
        [
            {"text": "Adding.", "tool_calls": [{"name": "add", "args": {"a": 1, "b": 1}}]},
            ModelCallError("provider exploded", status_code=500),
        ]
    )
    agent = make_agent(model, memory, tools={"add": ADD})
    output = await agent.stream("1+1?", **on("t1"))
    with pytest.raises(ModelCallError, match="provider exploded"):
        await output.result()
    run_id = output.run_id

    stored = await memory.list_messages("t1")
    assert roles(stored) == [("user", "1+1?"), ("assistant", "Adding."), ("tool", "2")]
    assert {m.run_id for m in stored} == {run_id}
    run = await memory.store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert "provider exploded" in (run.error or "")
    assert await memory.store.active_run("t1") is None, "the lease was released"

    again = make_agent(ScriptedModel(["Recovered."]), memory, tools={"add": ADD})
    result = await again.generate("still there?", **on("t1"))
    assert result.text == "Recovered."


async def test_a_failed_first_step_keeps_the_user_message(
    memory: Memory, make_agent: AgentFactory
) -> None:
    agent = make_agent(ScriptedModel([ModelCallError("rate limited", status_code=429)]), memory)
    with pytest.raises(ModelCallError):
        await agent.generate("hello?", **on("t1"))
    assert roles(await memory.list_messages("t1")) == [("user", "hello?")]
    (run,) = await memory.store.list_runs("t1")
    assert run.status == "failed" and run.finish_reason == "error"


class _FailsMidAnswer:
    """A model that says a few words, then its connection drops."""

    model_id = "test/fails-mid-answer"

    def check_ready(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        yield TextDelta("The first half of ")
        yield TextDelta("an answer")
        raise ModelCallError("connection reset", status_code=None)


async def test_a_run_that_fails_mid_answer_keeps_the_partial_text(
    memory: Memory, make_agent: AgentFactory
) -> None:
    agent = make_agent(_FailsMidAnswer(), memory)
    with pytest.raises(ModelCallError):
        await agent.generate("tell me", **on("t1"))
    stored = await memory.list_messages("t1")
    assert roles(stored) == [("user", "tell me"), ("assistant", "The first half of an answer")]
    assert stored[-1].metadata.get("failed") is True


async def test_close_waits_for_a_streamed_run_so_its_store_can_be_closed_next(
    memory: Memory, make_agent: AgentFactory
) -> None:
    agent = make_agent(ScriptedModel(["an answer in a few chunks"], delay_s=0.01), memory)
    output = await agent.stream("hi", **on("t1"))
    await agent.close()
    assert output.done(), "close() returned while the run still wrote to the store"
    await memory.store.close()
    assert (await output.result()).text == "an answer in a few chunks"
    stored = await memory.list_messages("t1")
    assert roles(stored) == [("user", "hi"), ("assistant", "an answer in a few chunks")]


# -- bad input stores nothing ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"resource": "user-1"}, "memory needs a thread"),
        ({"thread": "t1"}, "memory needs a resource"),
        ({"resource": "user-1", "thread": ""}, "non-empty"),
        ({"resource": "user-1", "thread": {"title": "no id"}}, "needs an 'id'"),
        ({"resource": "user-1", "thread": {"id": "t1", "metadata": "x"}}, "metadata must be"),
    ],
)
async def test_a_bad_memory_option_is_a_clear_error_and_stores_nothing(
    memory: Memory, option: dict[str, Any], message: str, make_agent: AgentFactory
) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ConfigError, match=message):
        await make_agent(model, memory).generate("hi", memory=option)
    assert model.calls == 0
    assert await memory.list_threads() == []


async def test_a_bad_request_context_stores_nothing(
    memory: Memory, make_agent: AgentFactory
) -> None:
    model = ScriptedModel(["never"])
    agent = make_agent(
        model, memory, request_context_schema={"type": "object", "required": ["user_id"]}
    )
    with pytest.raises(RequestContextError, match="user_id"):
        await agent.generate("hi", **on("t1"))
    assert model.calls == 0
    assert await memory.get_thread("t1") is None


async def test_a_thread_of_another_resource_is_refused(
    memory: Memory, make_agent: AgentFactory
) -> None:
    agent = make_agent(ScriptedModel(["a", "b"]), memory)
    await agent.generate("hi", **on("t1", resource="alice"))
    with pytest.raises(StoreError, match="belongs to resource 'alice'"):
        await agent.generate("mine now", **on("t1", resource="mallory"))
    assert roles(await memory.list_messages("t1")) == [("user", "hi"), ("assistant", "a")]


class GateModel:
    """Says ``text`` then waits for ``gate`` (so a run stays live without sleeps)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.gate = asyncio.Event()
        self.started = asyncio.Event()

    @property
    def model_id(self) -> str:
        return "test/gate"

    def check_ready(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        yield TextDelta(self.text)
        self.started.set()
        await self.gate.wait()
        yield StepEnd("stop")


async def test_generate_on_a_thread_with_a_live_run_is_thread_busy(
    memory: Memory, make_agent: AgentFactory, agents: AgentFactory
) -> None:
    slow = GateModel("working")
    first = make_agent(slow, memory)
    other_model = ScriptedModel(["never", "now"])
    other = agents(name="other", instructions="x", model=other_model, memory=memory)

    output = await first.stream("long job", **on("t1"))
    await slow.started.wait()
    with pytest.raises(ThreadBusyError, match=output.run_id) as info:
        await other.generate("me too", **on("t1"))
    assert "send_message" in str(info.value)
    assert other_model.calls == 0
    assert roles(await memory.list_messages("t1")) == [("user", "long job")]

    slow.gate.set()
    assert (await output.result()).text == "working"
    other_model._replies.pop(0)  # the refused call never consumed its reply
    assert (await other.generate("me too", **on("t1"))).text == "now"


# -- Memory's reading API --------------------------------------------------------------------


async def test_threads_can_be_read_listed_and_updated(memory: Memory) -> None:
    await memory.create_thread("a", resource_id="alice", title="A")
    await memory.create_thread("b", resource_id="bob")
    await memory.create_thread("c", resource_id="alice", metadata={"pinned": True})

    thread = await memory.get_thread("a")
    assert thread is not None
    assert (thread.id, thread.resource_id, thread.title) == ("a", "alice", "A")
    assert is_utc(thread.created_at) and is_utc(thread.updated_at)
    assert thread["title"] == "A", "rows read like dicts"
    assert await memory.get_thread("missing") is None
    assert {t.id for t in await memory.list_threads("alice")} == {"a", "c"}
    assert {t.id for t in await memory.list_threads()} == {"a", "b", "c"}

    updated = await memory.update_thread("b", title="Bob's", metadata={"tag": "x"})
    assert (updated.title, updated.metadata) == ("Bob's", {"tag": "x"})
    assert updated.updated_at >= updated.created_at
    with pytest.raises(StoreError, match="no thread 'zzz'"):
        await memory.update_thread("zzz", title="x")
    assert await memory.get_thread("zzz") is None


async def test_save_recall_and_list_messages_with_before_paging(memory: Memory) -> None:
    saved = await memory.save_messages(
        [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(7)],
        thread_id="t1",
        resource_id="alice",
    )
    assert [m.content for m in saved] == [f"m{i}" for i in range(7)]
    assert len({m.id for m in saved}) == 7
    assert all(is_utc(m.created_at) and m.run_id is None for m in saved)
    thread = await memory.get_thread("t1")
    assert thread is not None and thread.resource_id == "alice", "save_messages creates it"

    assert [m.content for m in await memory.recall("t1", last_messages=3)] == ["m4", "m5", "m6"]
    assert len(await memory.recall("t1")) == 7
    page = await memory.list_messages("t1", limit=3)
    assert [m.content for m in page] == ["m4", "m5", "m6"]
    older = await memory.list_messages("t1", limit=3, before=page[0].id)
    assert [m.content for m in older] == ["m1", "m2", "m3"]
    oldest = await memory.list_messages("t1", limit=3, before=older[0].id)
    assert [m.content for m in oldest] == ["m0"]
    assert await memory.list_messages("t1", before=oldest[0].id) == []
    assert await memory.list_messages("nope") == []


async def test_saved_messages_are_history_for_the_next_run(
    memory: Memory, make_agent: AgentFactory
) -> None:
    await memory.save_messages(
        [
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": "Hi Ada."},
        ],
        thread_id="t1",
        resource_id="user-1",
    )
    model = ScriptedModel(["Ada."])
    await make_agent(model, memory).generate("Who am I?", **on("t1"))
    assert [m["content"] for m in model.requests[0].messages] == [
        "Be brief.",
        "My name is Ada.",
        "Hi Ada.",
        "Who am I?",
    ]


async def test_save_messages_rejects_bad_rows_and_stores_none(memory: Memory) -> None:
    with pytest.raises(StoreError, match=r"messages\[1\]: role"):
        await memory.save_messages(
            [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}],
            thread_id="t1",
            resource_id="r",
        )
    with pytest.raises(StoreError, match=r"messages\[0\]: no content"):
        await memory.save_messages([{"role": "user"}], thread_id="t1", resource_id="r")
    assert await memory.get_thread("t1") is None
