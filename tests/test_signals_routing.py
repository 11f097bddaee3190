"""Signal routing in one process: send_message / queue_message / send_signal, every behavior on
an active and on an idle thread, both targets, delivery between steps, queue FIFO, bad input.

Runs are held open with gates (a model call or a tool that waits for an asyncio.Event), never
with sleeps: the test knows the run is mid-step because the gated call said so."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.common import AgentFactory
from helpers.sql import rows_sync

from tui_agent import Agent, Memory, SqliteStore, create_tool
from tui_agent.errors import SignalError
from tui_agent.store import Store
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "res-1", "thread-1"
GUARD_S = 10.0  # failure guard only: every wait below ends on an event


class Gated:
    """A scripted model whose calls are recorded and may wait at a gate.

    ``replies[i]`` answers call ``i`` (then ``"answer i"``); a call whose index is in ``gated``
    sets ``entered[i]`` and waits for ``gates[i]`` before answering."""

    def __init__(self, replies: list[Any] = (), gated: tuple[int, ...] = ()) -> None:
        self.replies = list(replies)
        self.gates = {i: asyncio.Event() for i in gated}
        self.entered = {i: asyncio.Event() for i in gated}
        self.calls: list[list[dict[str, Any]]] = []
        self.model = ScriptedModel(handler=self._reply)

    async def _reply(self, messages: list[dict[str, Any]], tools: Any) -> Any:
        index = len(self.calls)
        self.calls.append(messages)
        if index in self.gates:
            self.entered[index].set()
            await self.gates[index].wait()
        return self.replies[index] if index < len(self.replies) else f"answer {index}"

    async def wait_entered(self, index: int) -> None:
        await asyncio.wait_for(self.entered[index].wait(), GUARD_S)

    def release(self, index: int) -> None:
        self.gates[index].set()


def user_texts(messages: list[dict[str, Any]]) -> list[Any]:
    return [m["content"] for m in messages if m["role"] == "user"]


@pytest.fixture
def make_agent(agents: AgentFactory) -> AgentFactory:
    """``make_agent(store, model, tools=None)``: an agent on the store, closed after the test."""

    def make(store: SqliteStore, model: Any, tools: dict[str, Any] | None = None) -> Agent:
        return agents(name="router", model=model, tools=tools, memory=Memory(store=store))

    return make


def count_rows(store: Store, table: str, where: str = "true", params: tuple = ()) -> int:
    return int(rows_sync(store, f"SELECT COUNT(*) FROM {table} WHERE {where}", params)[0][0])


def count_text(store: SqliteStore, text: str) -> int:
    """Rows anywhere (signals, messages, events) that mention ``text``."""
    like = (f"%{text}%",)
    return (
        count_rows(store, "signals", "message LIKE ? OR data LIKE ?", like * 2)
        + count_rows(store, "messages", "content LIKE ?", like)
        + count_rows(store, "events", "payload LIKE ?", like)
    )


async def wake(agent: Agent, message: Any = "hello", **kw: Any) -> dict[str, Any]:
    receipt = agent.send_message(message, resource_id=R, thread_id=T, **kw)
    decision = await asyncio.wait_for(receipt.accepted, GUARD_S)
    assert decision["action"] == "wake"
    return decision


async def held_run(
    make_agent: AgentFactory, store: SqliteStore, replies: list[Any]
) -> tuple[Gated, Agent, dict[str, Any]]:
    """An agent whose run, woken by "start", is held in its first model call (gate 0)."""
    gated = Gated(replies, gated=(0,))
    agent = make_agent(store, gated.model)
    woken = await wake(agent, "start")
    await gated.wait_entered(0)
    return gated, agent, woken


# -- idle thread ---------------------------------------------------------------------------------


async def test_wake_starts_a_run_with_stream_options_and_returns_its_stream(
    store: SqliteStore,
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(replies=["woken answer"])
    agent = make_agent(store, model)
    receipt = agent.send_message(
        "wake up",
        resource_id=R,
        thread_id=T,
        if_idle={"stream_options": {"model_settings": {"temperature": 0.25}}},
    )
    assert receipt.signal.id and receipt.persisted is None
    decision = await receipt.accepted
    assert decision["action"] == "wake" and decision["run_id"]
    chunks = [c async for c in decision["output"]]
    types = [c["type"] for c in chunks]
    assert types[0] == "start" and types[1] == "data-user-message" and types[-1] == "finish"
    assert {c["run_id"] for c in chunks} == {decision["run_id"]}
    result = await decision["output"].result()
    assert result.text == "woken answer" and result.run_id == decision["run_id"]
    assert model.requests[0].settings == {"temperature": 0.25}
    assert user_texts(model.requests[0].messages) == ["wake up"]
    stored = await agent.memory.recall(T)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "wake up"),
        ("assistant", "woken answer"),
    ]
    assert stored[0].metadata["signal_id"] == receipt.signal.id


async def test_idle_persist_is_stored_and_subscribers_see_the_signal_not_an_empty_run(
    store: SqliteStore,
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(replies=["later answer"])
    agent = make_agent(store, model)
    await agent.memory.create_thread(T, resource_id=R)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    receipt = agent.send_signal(
        {"type": "notification", "tag_name": "ci", "contents": "build green"},
        resource_id=R,
        thread_id=T,
        if_idle={"behavior": "persist"},
    )
    assert receipt.persisted is not None
    assert await receipt.accepted == {"action": "persist"}
    await receipt.persisted
    echo = await asyncio.wait_for(anext(sub.stream), GUARD_S)
    # The signal, with no run id (no run took it), and nothing else: no empty run around it.
    assert (echo["type"], echo["run_id"]) == ("data-signal", None)
    assert echo["payload"]["contents"] == "build green"
    assert model.calls == 0
    assert [e["type"] for e in await agent.memory.store.read_events(T, 0)] == ["data-signal"]
    assert sub.active_run_id() is None
    sub.unsubscribe()
    # Persisted signals are history for the next run.
    await agent.generate("and now?", memory={"resource": R, "thread": T})
    assert user_texts(model.requests[0].messages) == ["<ci>build green</ci>", "and now?"]


async def test_idle_discard_stores_nothing_and_creates_no_thread(
    store: SqliteStore, make_agent: AgentFactory
) -> None:
    model = ScriptedModel(replies=[])
    agent = make_agent(store, model)
    receipt = agent.send_message(
        "into the void", resource_id=R, thread_id=T, if_idle={"behavior": "discard"}
    )
    assert await receipt.accepted == {"action": "discard"}
    assert await agent.memory.get_thread(T) is None
    assert count_text(store, "into the void") == 0
    assert model.calls == 0


async def test_queue_message_on_an_idle_thread_starts_at_once(
    store: SqliteStore, make_agent: AgentFactory
) -> None:
    model = ScriptedModel(replies=["queued answer"])
    agent = make_agent(store, model)
    decision = await agent.queue_message("go", resource_id=R, thread_id=T).accepted
    assert decision["action"] == "wake"
    assert (await decision["output"].result()).text == "queued answer"


# -- active thread -------------------------------------------------------------------------------


@pytest.mark.parametrize("by_run_id", [False, True], ids=["thread-target", "run-id-target"])
async def test_deliver_reaches_the_next_step_even_after_the_model_finished(
    store: SqliteStore, by_run_id: bool, make_agent: AgentFactory
) -> None:
    gated, agent, woken = await held_run(make_agent, store, ["first answer", "second answer"])
    target = {"run_id": woken["run_id"]} if by_run_id else {"resource_id": R, "thread_id": T}
    receipts = [agent.send_message(f"extra {i}", **target) for i in range(3)]
    for receipt in receipts:
        assert await receipt.accepted == {"action": "deliver", "run_id": woken["run_id"]}
    gated.release(0)
    result = await woken["output"].result()
    # The model had finished ("stop") but the loop went on with all three, each its own message.
    assert len(gated.calls) == 2 and result.text == "second answer"
    assert user_texts(gated.calls[1]) == ["start", "extra 0", "extra 1", "extra 2"]
    assert result.steps[0].signals == [r.signal.id for r in receipts]
    stored = await agent.memory.recall(T, last_messages=20)
    assert [m.content for m in stored] == [
        "start",
        "first answer",
        "extra 0",
        "extra 1",
        "extra 2",
        "second answer",
    ]
    assert {m.run_id for m in stored} == {woken["run_id"]}


async def test_signals_wait_for_the_tool_calls_of_the_step_then_follow_them(
    store: SqliteStore,
    make_agent: AgentFactory,
) -> None:
    tool_started, tool_gate = asyncio.Event(), asyncio.Event()

    async def slow(tool_input: dict[str, Any]) -> str:
        tool_started.set()
        await tool_gate.wait()
        return "tool done"

    tool = create_tool(
        id="slow", description="waits", input_schema={"type": "object"}, execute=slow
    )
    model = ScriptedModel(replies=[{"tool_calls": [{"name": "slow", "args": {}}]}, "final"])
    agent = make_agent(store, model, tools={"slow": tool})
    woken = await wake(agent, "use the tool")
    await asyncio.wait_for(tool_started.wait(), GUARD_S)
    receipt = agent.send_signal(
        {"type": "reactive", "contents": "heads up"}, resource_id=R, thread_id=T
    )
    assert (await receipt.accepted)["action"] == "deliver"
    tool_gate.set()
    result = await woken["output"].result()
    assert result.text == "final"
    second = model.requests[1].messages
    roles = [m["role"] for m in second if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "user"]  # never cut into the tool exchange
    assert second[-1]["content"] == "<system-reminder>heads up</system-reminder>"


async def test_active_persist_is_stored_without_a_model_call(
    store: SqliteStore, make_agent: AgentFactory
) -> None:
    gated, agent, woken = await held_run(make_agent, store, ["only answer"])
    receipt = agent.send_message(
        "note for later", resource_id=R, thread_id=T, if_active={"behavior": "persist"}
    )
    assert await receipt.accepted == {"action": "persist"}
    await receipt.persisted
    gated.release(0)
    result = await woken["output"].result()
    assert len(gated.calls) == 1 and result.text == "only answer"
    assert "note for later" not in user_texts(gated.calls[0])
    stored = [m.content for m in await agent.memory.recall(T)]
    assert "note for later" in stored
    # The next run has it in its history.
    await agent.generate("next", memory={"resource": R, "thread": T})
    assert "note for later" in user_texts(gated.calls[1])


async def test_active_discard_reaches_no_prompt_and_stores_nothing(
    store: SqliteStore, make_agent: AgentFactory
) -> None:
    gated, agent, woken = await held_run(make_agent, store, ["only answer"])
    receipt = agent.send_message(
        "forget me", resource_id=R, thread_id=T, if_active={"behavior": "discard"}
    )
    assert await receipt.accepted == {"action": "discard"}
    gated.release(0)
    await woken["output"].result()
    await agent.generate("next", memory={"resource": R, "thread": T})
    assert len(gated.calls) == 2
    assert all("forget me" not in str(call) for call in gated.calls)
    assert count_text(store, "forget me") == 0


async def test_branch_attributes_are_merged_for_the_branch_taken(
    store: SqliteStore, make_agent: AgentFactory
) -> None:
    gated = Gated(["a", "b"], gated=(0,))
    agent = make_agent(store, gated.model)
    woken = await wake(
        agent,
        {"contents": "hi", "attributes": {"name": "Ann"}},
        if_idle={"attributes": {"via": "idle"}},
    )
    await gated.wait_entered(0)
    agent.send_message(
        {"contents": "more", "attributes": {"name": "Ann"}},
        resource_id=R,
        thread_id=T,
        if_active={"attributes": {"via": "active"}},
        if_idle={"attributes": {"via": "idle"}},
    )
    await asyncio.wait_for(_pending(store), GUARD_S)
    gated.release(0)
    await woken["output"].result()
    assert user_texts(gated.calls[1]) == [
        '<user name="Ann" via="idle">hi</user>',
        '<user name="Ann" via="active">more</user>',
    ]
    await agent.close()


async def _pending(store: SqliteStore) -> None:
    """Until a signal is pending on T (the route task runs in the background)."""
    listener = store.add_listener(T)
    try:
        while not await store.has_pending_signals(T):
            listener.clear()
            await listener.wait()
    finally:
        store.remove_listener(T, listener)


async def test_messages_sent_while_the_woken_run_starts_are_in_its_first_call(
    store: SqliteStore,
    make_agent: AgentFactory,
) -> None:
    """The window between winning the wake (lease taken) and the run's first claim: messages
    delivered there must reach the first model call, not wait for a second step."""
    model_gate, resolving = asyncio.Event(), asyncio.Event()
    scripted = ScriptedModel(replies=["one call"])

    async def slow_model(context: Any) -> ScriptedModel:
        resolving.set()
        await model_gate.wait()
        return scripted

    agent = make_agent(store, slow_model)
    first = agent.send_message("m0", resource_id=R, thread_id=T)
    await asyncio.wait_for(resolving.wait(), GUARD_S)  # lease taken, run not yet started
    late = [agent.send_message(f"m{i}", resource_id=R, thread_id=T) for i in (1, 2)]
    run_ids = [(await r.accepted)["run_id"] for r in late]
    model_gate.set()
    decision = await first.accepted
    assert run_ids == [decision["run_id"]] * 2
    await decision["output"].result()
    assert scripted.calls == 1
    assert user_texts(scripted.requests[0].messages) == ["m0", "m1", "m2"]


# -- queue ---------------------------------------------------------------------------------------


async def test_queued_messages_run_one_at_a_time_in_fifo_order(
    store: SqliteStore, make_agent: AgentFactory
) -> None:
    gated, agent, woken = await held_run(make_agent, store, ["first"])
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    receipts = [agent.queue_message(f"q{i}", resource_id=R, thread_id=T) for i in range(3)]
    decisions = [await r.accepted for r in receipts]
    queued_ids = [d["run_id"] for d in decisions]
    assert all(d["action"] == "deliver" for d in decisions)
    assert len(set(queued_ids) | {woken["run_id"]}) == 4  # each its own future run
    gated.release(0)
    await woken["output"].result()
    events = await _until_finished(sub, set(queued_ids))
    # Runs never overlap: each run's start comes after the previous run's finish.
    order = [(e["type"], e["run_id"]) for e in events if e["type"] in ("start", "finish")]
    assert order == [
        (kind, run_id) for run_id in [woken["run_id"], *queued_ids] for kind in ("start", "finish")
    ]
    # Each queued run's model call got its own message, last, after the previous answers.
    assert [user_texts(call)[-1] for call in gated.calls] == ["start", "q0", "q1", "q2"]
    assert [len(user_texts(call)) for call in gated.calls] == [1, 2, 3, 4]
    runs = {run.id: run for run in await store.list_runs(T)}
    assert all(runs[run_id].status == "finished" for run_id in queued_ids)
    for before, after in zip([woken["run_id"], *queued_ids], queued_ids, strict=False):
        assert runs[before].ended_at <= runs[after].started_at
    sub.unsubscribe()
    await agent.close()


async def _until_finished(sub: Any, run_ids: set[str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []

    async def read() -> None:
        left = set(run_ids)
        async for event in sub.stream:
            events.append(event)
            if event["type"] == "finish":
                left.discard(event["run_id"])
                if not left:
                    return

    await asyncio.wait_for(read(), GUARD_S)
    return events


# -- bad input -----------------------------------------------------------------------------------


THREAD = {"resource_id": R, "thread_id": T}
BAD_CALLS: list[tuple[str, str, Any, dict[str, Any], str]] = [
    ("resource-without-thread", "send_message", "x", {"resource_id": R}, "without thread_id"),
    ("thread-without-resource", "send_message", "x", {"thread_id": T}, "without resource_id"),
    ("no-target", "send_message", "x", {}, "no target"),
    ("unknown-type", "send_signal", {"type": "alert", "contents": "x"}, THREAD, "tag_name"),
    (
        "bad-tag",
        "send_signal",
        {"type": "user", "tag_name": "1bad", "contents": "x"},
        THREAD,
        "tag_name",
    ),
    (
        "empty-tag",
        "send_signal",
        {"type": "user", "tag_name": "", "contents": "x"},
        THREAD,
        "tag_name",
    ),
    ("bad-attribute", "send_message", {"contents": "x", "attributes": {"a b": 1}}, THREAD, "a b"),
    (
        "unknown-active-behavior",
        "send_message",
        "x",
        {**THREAD, "if_active": {"behavior": "wake"}},
        "if_active.behavior",
    ),
    (
        "unknown-idle-behavior",
        "queue_message",
        "x",
        {**THREAD, "if_idle": {"behavior": "deliver"}},
        "if_idle.behavior",
    ),
    (
        "unknown-stream-option",
        "send_message",
        "x",
        {**THREAD, "if_idle": {"stream_options": {"max_stepz": 2}}},
        "max_stepz",
    ),
]


@pytest.mark.parametrize(
    ("method", "message", "kwargs", "expected"),
    [case[1:] for case in BAD_CALLS],
    ids=[case[0] for case in BAD_CALLS],
)
async def test_bad_input_raises_from_the_call_and_stores_nothing(
    store: SqliteStore, method: str, message: Any, kwargs: dict[str, Any], expected: str,
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(replies=[])
    agent = make_agent(store, model)
    with pytest.raises(ValueError, match=expected):
        getattr(agent, method)(message, **kwargs)
    await agent.close()
    await store.fetchone("SELECT 1")  # the schema exists, so the counts below are real
    for table in ("signals", "messages", "events", "threads", "runs"):
        assert count_rows(store, table) == 0, table
    assert model.calls == 0


@pytest.mark.parametrize("method", ["send_message", "queue_message", "send_signal"])
async def test_a_misspelt_target_keyword_names_the_method_and_the_keyword(
    store: SqliteStore, method: str, make_agent: AgentFactory,
) -> None:
    """The reference's camelCase spelling (``threadId``) is refused by the call itself, naming
    both: not from deep inside the router, and nothing is routed."""
    agent = make_agent(store, ScriptedModel(replies=[]))
    signal = {"type": "user", "contents": "x"} if method == "send_signal" else "x"
    with pytest.raises(TypeError, match=rf"Agent\.{method}\(\).*'threadId'"):
        getattr(agent, method)(signal, resource_id=R, threadId=T)
    await agent.close()
    await store.fetchone("SELECT 1")
    assert count_rows(store, "signals") == 0


async def test_unknown_run_id_without_a_thread_fails_accepted_and_stores_nothing(
    store: SqliteStore,
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(store, ScriptedModel(replies=[]))
    receipt = agent.send_message("lost", run_id="no-such-run")
    with pytest.raises(SignalError, match="unknown run_id 'no-such-run'"):
        await receipt.accepted
    for table in ("signals", "messages", "events", "threads", "runs"):
        assert count_rows(store, table) == 0, table
