"""Issue 12: the reference's Agent options that used to be accepted and ignored (or wrong),
the request-context forms of every constructor option, ``hooks.transform``, and the options
that are refused with a clear error (``voice``, ``mastra``, the legacy variants).

Runs are held open with gates (a model call that waits for an asyncio.Event), never sleeps."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.common import AgentFactory, until

from tui_agent import Agent, Memory, SqliteStore, create_tool
from tui_agent.errors import ConfigError, ProcessorError, SignalError
from tui_agent.store.changes import ChangeFeed
from tui_agent.testing import ScriptedModel

R, T = "res-1", "thread-1"
GUARD_S = 10.0  # failure guard only: every wait below ends on an event


def echo_tool(tool_id: str = "echo") -> Any:
    return create_tool(
        id=tool_id,
        description=f"Tool {tool_id}",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        execute=lambda tool_input: f"{tool_id}:{tool_input['text']}",
    )


def system_texts(model: ScriptedModel, call: int = 0) -> list[str]:
    return [m["content"] for m in model.requests[call].messages if m["role"] == "system"]


def tool_names(model: ScriptedModel, call: int = 0) -> list[str]:
    return [spec["function"]["name"] for spec in model.requests[call].tools]


class Gate:
    """A scripted model whose first call waits at a gate (the run stays live meanwhile)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.calls = 0
        self.model = ScriptedModel(handler=self._reply)

    async def _reply(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            await self.gate.wait()
        return f"answer {self.calls}"

    async def wait_entered(self) -> None:
        await asyncio.wait_for(self.entered.wait(), GUARD_S)


# -- generate()/stream() options: instructions= and tools_override= --------------------------


async def test_instructions_option_replaces_the_agents_for_that_call(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(["one", "two"])
    agent = agents(instructions="Agent's own.", model=model)
    await agent.generate("hi", instructions=["Call's own.", {"role": "system", "content": "B"}])
    await agent.generate("hi")
    assert system_texts(model, 0) == ["Call's own.", "B"]
    assert system_texts(model, 1) == ["Agent's own."]


async def test_instructions_option_may_be_a_function_of_the_request_context(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(["one"])
    agent = agents(model=model)
    await agent.generate(
        "hi", instructions=lambda ctx: f"Tier {ctx.get('tier')}.", request_context={"tier": "pro"}
    )
    assert system_texts(model) == ["Tier pro."]


async def test_bad_instructions_option_raises_before_the_model_is_called(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(["one"])
    with pytest.raises(ConfigError, match="instructions"):
        await agents(model=model).generate("hi", instructions=42)
    assert model.requests == []


async def test_tools_override_replaces_the_agents_tools_for_that_call(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(
        [{"tool_calls": [{"name": "other", "args": {"text": "x"}}]}, "done", "plain"]
    )
    agent = agents(model=model, tools={"echo": echo_tool()})
    result = await agent.generate("hi", tools_override={"other": echo_tool("other")})
    assert tool_names(model, 0) == ["other"]
    assert result.tool_results[0].result == "other:x"
    await agent.generate("hi")
    assert tool_names(model, 2) == ["echo"]


async def test_bad_tools_override_is_refused(agents: AgentFactory) -> None:
    with pytest.raises(ConfigError, match="tools_override"):
        await agents(model=ScriptedModel(["x"])).generate("hi", tools_override=["not", "a dict"])


# -- signals ---------------------------------------------------------------------------------


def memory_agent(agents: AgentFactory, store: SqliteStore, model: Any, **kw: Any) -> Agent:
    return agents(name="conform", model=model, memory=Memory(store=store), **kw)


async def live_run(agent: Agent, gate: Gate) -> Any:
    """Start a run on (R, T) that stays live until ``gate.gate`` is set."""
    output = await agent.stream("start", memory={"resource": R, "thread": T})
    await gate.wait_entered()
    return output


@pytest.mark.parametrize("behavior", ["persist", "discard"])
async def test_queue_message_honours_if_active_behavior(
    agents: AgentFactory, store: SqliteStore, behavior: str
) -> None:
    gate = Gate()
    agent = memory_agent(agents, store, gate.model)
    output = await live_run(agent, gate)
    receipt = agent.queue_message(
        "later", resource_id=R, thread_id=T, if_active={"behavior": behavior}
    )
    assert (await asyncio.wait_for(receipt.accepted, GUARD_S)) == {"action": behavior}
    gate.gate.set()
    await output.consume_stream()
    await agent.wait_for_local_runs()
    assert gate.calls == 1  # no run was queued behind the live one
    stored = [m.content for m in await agent.memory.recall(T, last_messages=20)]
    assert ("later" in str(stored)) is (behavior == "persist")


async def test_receipt_persisted_exists_only_for_a_persist_action(
    agents: AgentFactory, store: SqliteStore
) -> None:
    gate = Gate()
    agent = memory_agent(agents, store, gate.model)
    output = await live_run(agent, gate)
    delivered = agent.send_message("x", resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    assert (await asyncio.wait_for(delivered.accepted, GUARD_S))["action"] == "deliver"
    assert delivered.persisted is None
    persisted = agent.send_message(
        "y", resource_id=R, thread_id=T, if_active={"behavior": "persist"}
    )
    assert persisted.persisted is not None
    await asyncio.wait_for(persisted.persisted, GUARD_S)
    gate.gate.set()
    await output.consume_stream()


async def test_active_run_id_is_the_live_run_before_the_stream_is_read(
    agents: AgentFactory, store: SqliteStore
) -> None:
    gate = Gate()
    agent = memory_agent(agents, store, gate.model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert sub.active_run_id() is None
    output = await live_run(agent, gate)
    assert sub.active_run_id() == output.run_id  # nobody has read sub.stream yet
    late = await agent.subscribe_to_thread(resource_id=R, thread_id=T)  # joins mid-run
    assert late.active_run_id() == output.run_id
    gate.gate.set()
    await output.consume_stream()
    assert sub.active_run_id() is None and late.active_run_id() is None  # still unread
    sub.unsubscribe()
    late.unsubscribe()


async def test_active_run_id_knows_another_processes_run_before_the_stream_is_read(
    agents: AgentFactory, store: SqliteStore, stores: Any
) -> None:
    """A run of another process (here: another agent on its own connection to the file) is the
    subscriber's live run as soon as the store has it, though nobody reads ``sub.stream``."""
    watcher = memory_agent(agents, store, ScriptedModel(["-"]))
    sub = await watcher.subscribe_to_thread(resource_id=R, thread_id=T)
    gate = Gate()
    elsewhere = agents(name="conform", model=gate.model, memory=Memory(store=stores(store.path)))
    output = await live_run(elsewhere, gate)
    await until(lambda: sub.active_run_id() == output.run_id, "the other process's run")
    gate.gate.set()
    await output.consume_stream()
    await until(lambda: sub.active_run_id() is None, "its end")
    sub.unsubscribe()



def live_run_reads(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[int, str | None]]:
    """Spy on the store's reads of a thread's live run (the subscription's tracker makes them):
    for each, the store's change-feed wakes when it began and the run it named."""
    feed, active_run = ChangeFeed.of(store), store.active_run
    reads: list[tuple[int, str | None]] = []

    async def spied(thread_id: str) -> Any:
        wakes = feed.wakes
        active = await active_run(thread_id)
        reads.append((wakes, active.run_id if active is not None else None))
        return active

    monkeypatch.setattr(store, "active_run", spied)
    return reads


async def test_a_subscriber_that_read_its_agents_own_run_from_the_store_sees_it_end(
    agents: AgentFactory, store: SqliteStore, stores: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live-run tracker reads the store when another process commits; read while this
    agent's own run is live, the store names that run. Its end is known here (no commit of
    another process follows it to correct the tracker): the subscriber's live run is None as
    soon as it ended."""
    gate = Gate()
    agent = memory_agent(agents, store, gate.model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    output = await live_run(agent, gate)
    reads = live_run_reads(store, monkeypatch)
    elsewhere = stores(store.path)  # another process's commit wakes the tracker
    await elsewhere.ensure_thread("another-thread", R)
    await until(lambda: any(run == output.run_id for _, run in reads),
                "the tracker's read of the store while the run was live")
    gate.gate.set()
    await output.consume_stream()
    assert sub.active_run_id() is None  # at once: the runtime knows, the store need not say
    sub.unsubscribe()


async def test_a_subscriber_sees_the_end_of_another_agent_s_run_in_this_process(
    agents: AgentFactory, store: SqliteStore, stores: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agents of one process on one store: the watcher's subscriber reads the other's
    live run from the store (it is not the watcher's own), and sees it end though that end
    is a commit of this process (which the tracker otherwise leaves to the store's listeners):
    no other process commits after the tracker read the run."""
    elsewhere = stores(store.path)  # another process: opened, and done with its first commits
    await elsewhere.ensure_thread("another-thread", R)
    watcher = memory_agent(agents, store, ScriptedModel(["-"]))
    sub = await watcher.subscribe_to_thread(resource_id=R, thread_id=T)
    gate = Gate()
    neighbour = agents(name="neighbour", model=gate.model, memory=Memory(store=store))
    output = await live_run(neighbour, gate)
    feed = ChangeFeed.of(store)
    reads = live_run_reads(store, monkeypatch)

    def read_live_after(woken: int) -> bool:
        return any(wakes > woken and run == output.run_id for wakes, run in reads)

    woken = feed.wakes
    await elsewhere.ensure_thread("third-thread", R)  # one commit: wakes the tracker to read
    await until(lambda: read_live_after(woken), "a read of the run after that commit's wake")
    assert sub.active_run_id() == output.run_id
    # One commit of this process while the run is live: the feed's first look after another
    # process's commit may still take ours for news (it had not read the store's own version
    # since), and a stray wake once the run ended would hide what this test is about.
    woken = feed.wakes
    await store.ensure_thread("local-thread", R)
    await until(lambda: read_live_after(woken), "a read after this process's commit")
    gate.gate.set()
    await output.consume_stream()
    await until(lambda: sub.active_run_id() is None, "its end")
    sub.unsubscribe()


async def test_subscribe_to_thread_without_resource_id(
    agents: AgentFactory, store: SqliteStore
) -> None:
    agent = memory_agent(agents, store, ScriptedModel(["hello"]))
    sub = await agent.subscribe_to_thread(thread_id=T)
    output = await agent.stream("hi", memory={"resource": R, "thread": T})
    await output.consume_stream()
    seen = []
    async for chunk in sub.stream:
        seen.append(chunk["type"])
        if chunk["type"] == "finish":
            break
    sub.unsubscribe()
    assert seen[0] == "start" and "text-delta" in seen


# -- notifications ---------------------------------------------------------------------------

NOTE = {"source": "github", "kind": "ci", "summary": "CI failed", "priority": "medium"}


@pytest.mark.parametrize("if_idle", [{"behavior": "persist"}, {"attributes": {"a": "b"}}])
async def test_notification_if_idle_takes_only_stream_options(
    agents: AgentFactory, store: SqliteStore, if_idle: dict[str, Any]
) -> None:
    """The reference's notification ifIdle has streamOptions only: the rest is refused, not
    dropped in silence (the delivery policy decides what happens)."""
    agent = memory_agent(agents, store, ScriptedModel(["x"]))
    with pytest.raises(SignalError, match="stream_options"):
        await agent.send_notification_signal(NOTE, resource_id=R, thread_id=T, if_idle=if_idle)
    assert await agent.memory.list_notifications(thread_id=T) == []


async def test_notification_if_idle_stream_options_reach_the_woken_run(
    agents: AgentFactory, store: SqliteStore
) -> None:
    model = ScriptedModel(["x"])
    agent = memory_agent(agents, store, model)
    result = await agent.send_notification_signal(
        NOTE, resource_id=R, thread_id=T,
        if_idle={"stream_options": {"instructions": "Woken by a notification."}},
    )
    await result["accepted"]["output"].consume_stream()
    assert system_texts(model) == ["Woken by a notification."]


async def test_send_notification_signal_starts_the_dispatcher(
    agents: AgentFactory, store: SqliteStore
) -> None:
    """A process that only takes in notifications still sends a deferred delivery when due."""
    from datetime import UTC, datetime, timedelta

    called = asyncio.Event()

    def reply(messages: list[dict[str, Any]], tools: Any) -> str:
        called.set()
        return "seen"

    defer = {"action": "defer", "deliver_at": datetime.now(UTC) + timedelta(milliseconds=50)}
    agent = memory_agent(
        agents, store, ScriptedModel(handler=reply),
        notifications={"dispatch_interval_s": 0.05, "delivery_policy": {"default": defer}},
    )
    result = await agent.send_notification_signal(NOTE, resource_id=R, thread_id=T)
    assert result["decision"].action == "defer"
    await asyncio.wait_for(called.wait(), GUARD_S)
    await agent.wait_for_local_runs()


@pytest.mark.parametrize("style", ["ctx-key", "ctx-attribute"])
async def test_decide_takes_the_references_one_argument_form(
    agents: AgentFactory, store: SqliteStore, style: str
) -> None:
    seen: list[Any] = []

    def decide(ctx: Any) -> Any:
        record = ctx["record"] if style == "ctx-key" else ctx.record
        seen.append((record.priority, ctx["thread_state"]))
        return {"action": "persist"} if record.priority == "medium" else None

    agent = memory_agent(
        agents, store, ScriptedModel(["x"]), notifications={"delivery_policy": {"decide": decide}}
    )
    result = await agent.send_notification_signal(NOTE, resource_id=R, thread_id=T)
    assert result["decision"].action == "persist"
    assert seen == [("medium", "idle")]


async def test_decide_keeps_api_mds_two_argument_form(
    agents: AgentFactory, store: SqliteStore
) -> None:
    def decide(record: Any, thread_state: str) -> Any:
        return {"action": "discard"} if thread_state == "idle" else None

    agent = memory_agent(
        agents, store, ScriptedModel(["x"]), notifications={"delivery_policy": {"decide": decide}}
    )
    result = await agent.send_notification_signal(NOTE, resource_id=R, thread_id=T)
    assert result["decision"].action == "discard"


# -- a finished run's run_id -----------------------------------------------------------------


async def test_send_to_a_finished_runs_id_routes_by_its_thread(
    agents: AgentFactory, store: SqliteStore
) -> None:
    """As the reference: the run id names the thread; that thread is idle now, so the send
    wakes a new run there (or persists/discards, as if_idle says)."""
    model = ScriptedModel(["first", "second"])
    agent = memory_agent(agents, store, model)
    first = await agent.generate("one", memory={"resource": R, "thread": T})
    receipt = agent.send_message("two", run_id=first.run_id)
    accepted = await asyncio.wait_for(receipt.accepted, GUARD_S)
    assert accepted["action"] == "wake" and accepted["run_id"] != first.run_id
    result = await accepted["output"].result()
    assert result.text == "second" and result.thread_id == T
    assert [m["content"] for m in model.requests[1].messages if m["role"] == "user"] == [
        "one", "two"
    ]
    persisted = agent.send_message("three", run_id=first.run_id, if_idle={"behavior": "persist"})
    assert (await asyncio.wait_for(persisted.accepted, GUARD_S)) == {"action": "persist"}


async def test_send_to_a_finished_memoryless_run_is_an_error(agents: AgentFactory) -> None:
    agent = agents(model=ScriptedModel(["x"]))
    result = await agent.generate("hi")
    with pytest.raises(SignalError, match="no live run"):
        agent.send_message("late", run_id=result.run_id)


# -- tool hooks ------------------------------------------------------------------------------


async def test_a_before_tool_call_hook_that_raises_is_a_tool_error_for_the_model(
    agents: AgentFactory,
) -> None:
    """Like a tool that raises: the tool does not run, the model gets the error as the call's
    result, after_tool_call sees it, and the run goes on."""
    ran: list[Any] = []
    after: list[Any] = []
    tool = create_tool(
        id="echo", description="e", input_schema={"type": "object"},
        execute=lambda tool_input: ran.append(tool_input),
    )

    def before(ctx: dict[str, Any]) -> None:
        raise PermissionError("not today")

    model = ScriptedModel([{"tool_calls": [{"name": "echo", "args": {}}]}, "recovered"])
    agent = agents(
        model=model, tools={"echo": tool},
        hooks={"before_tool_call": before, "after_tool_call": lambda ctx: after.append(ctx)},
    )
    result = await agent.generate("go")
    assert result.text == "recovered" and ran == []
    assert result.tool_results[0].is_error
    assert "PermissionError: not today" in result.tool_results[0].result["error"]
    assert isinstance(after[0]["error"], PermissionError) and after[0]["output"] is None


# -- request-context forms of the constructor options ----------------------------------------


class Upper:
    """An output processor that upper-cases a step's final text."""

    id = "upper"

    def process_output_result(self, text: str, ctx: Any) -> str:
        return text.upper()


class CountCalls:
    """A function of the request context, sync or async, that counts its calls."""

    def __init__(self, value: Any, *, is_async: bool = False) -> None:
        self.value = value
        self.calls: list[Any] = []
        self.is_async = is_async

    def __call__(self, ctx: Any) -> Any:
        self.calls.append(dict(ctx))
        if not self.is_async:
            return self.value(ctx) if callable(self.value) else self.value

        async def later() -> Any:
            return self.value(ctx) if callable(self.value) else self.value

        return later()


TWO_STEPS = [{"tool_calls": [{"name": "echo", "args": {"text": "x"}}]}, "done"]


@pytest.mark.parametrize("is_async", [False, True])
async def test_processors_from_the_request_context_resolve_once_per_run(
    agents: AgentFactory, is_async: bool
) -> None:
    seen_inputs: list[int] = []

    class Count:
        id = "count"

        def process_input(self, messages: list[Any], ctx: Any) -> None:
            seen_inputs.append(len(messages))

    inputs = CountCalls(lambda ctx: [Count()] if ctx.get("on") else [], is_async=is_async)
    outputs = CountCalls(lambda ctx: [Upper()] if ctx.get("on") else [], is_async=is_async)
    agent = agents(
        model=ScriptedModel([*TWO_STEPS, *TWO_STEPS]), tools={"echo": echo_tool()},
        input_processors=inputs, output_processors=outputs,
    )
    result = await agent.generate("hi", request_context={"on": True})
    assert result.text == "DONE" and len(seen_inputs) == 2  # two steps, one resolution
    assert len(inputs.calls) == 1 and len(outputs.calls) == 1
    assert (await agent.generate("hi", request_context={"on": False})).text == "done"


@pytest.mark.parametrize(
    ("option", "bad"),
    [
        ("metadata", ["not", "a dict"]),
        ("agents", ["not", "a dict"]),
        ("workflows", "nope"),
        ("default_options", {"max_steps": 0}),
        ("memory", "not a memory"),
        ("scorers", 42),
        ("input_processors", "nope"),
        ("output_processors", [object()]),
    ],
)
async def test_a_function_returning_the_wrong_type_is_a_clear_error(
    agents: AgentFactory, option: str, bad: Any
) -> None:
    model = ScriptedModel(["x"])
    agent = agents(model=model, **{option: CountCalls(bad)})
    with pytest.raises((ConfigError, ProcessorError), match=option) as info:
        await agent.generate("hi")
    assert "function of the request context" in str(info.value)
    assert model.requests == []


async def test_metadata_agents_workflows_from_the_request_context(agents: AgentFactory) -> None:
    sub = agents(name="sub", model=ScriptedModel(["from sub"]))
    model = ScriptedModel(["x"])
    agent = agents(
        model=model,
        metadata=CountCalls(lambda ctx: {"tier": ctx["tier"]}, is_async=True),
        agents=CountCalls(lambda ctx: {"helper": sub}),
        workflows=CountCalls(lambda ctx: {"flow": lambda data: data}, is_async=True),
    )
    await agent.generate("hi", request_context={"tier": "pro"})
    assert set(tool_names(model)) == {"agent-helper", "workflow-flow"}
    assert await agent.resolve_metadata({"tier": "pro"}) == {"tier": "pro"}
    assert len(agent.metadata.calls) == 2  # once for the run, once asked


async def test_default_options_from_the_request_context(agents: AgentFactory) -> None:
    model = ScriptedModel(["x", "y"])
    defaults = CountCalls(lambda ctx: {"model_settings": {"temperature": ctx.get("t", 1.0)}})
    agent = agents(model=model, default_options=defaults)
    await agent.generate("hi", request_context={"t": 0.2})
    await agent.generate("hi", request_context={"t": 0.2}, model_settings={"temperature": 0.9})
    assert model.requests[0].settings == {"temperature": 0.2}
    assert model.requests[1].settings == {"temperature": 0.9}  # the call's own option wins


async def test_scorers_from_the_request_context(agents: AgentFactory) -> None:
    scorers = CountCalls(lambda ctx: {"length": lambda run: len(run["output"]) * ctx["k"]})
    agent = agents(model=ScriptedModel(["four"]), scorers=scorers)
    result = await agent.generate("hi", request_context={"k": 10})
    assert result.scores == {"length": 40}


async def test_memory_from_the_request_context(
    agents: AgentFactory, stores: Any, tmp_path: Any
) -> None:
    by_tenant = {"a": Memory(store=stores(tmp_path / "a.db")),
                 "b": Memory(store=stores(tmp_path / "b.db"))}
    agent = agents(model=ScriptedModel(["one", "two"]),
                   memory=CountCalls(lambda ctx: by_tenant[ctx["tenant"]], is_async=True))
    await agent.generate("for a", memory={"resource": R, "thread": T},
                         request_context={"tenant": "a"})
    await agent.generate("for b", memory={"resource": R, "thread": T},
                         request_context={"tenant": "b"})
    a = [m.content for m in await by_tenant["a"].recall(T)]
    b = [m.content for m in await by_tenant["b"].recall(T)]
    assert a == ["for a", "one"] and b == ["for b", "two"]
    with pytest.raises(ConfigError, match="request context"):
        agent.send_message("x", resource_id=R, thread_id=T)


# -- hooks["transform"]: the tool payload transform policy ------------------------------------


def secret_tool(transform: Any = None) -> Any:
    return create_tool(
        id="lookup", description="Look a customer up",
        input_schema={"type": "object", "properties": {"id": {"type": "string"},
                                                        "secret": {"type": "string"}}},
        execute=lambda tool_input: {"name": "Acme", "api_key": "sk-live-123"},
        transform=transform,
    )


def redact(ctx: dict[str, Any]) -> Any:
    if ctx["phase"] == "input-available":
        return {"id": ctx["input"]["id"]}
    return {"name": ctx["output"]["name"], "target": ctx["target"]}


LOOKUP = [{"tool_calls": [{"name": "lookup", "args": {"id": "c1", "secret": "raw"}}]}, "done"]


async def test_transform_changes_what_the_stream_and_the_transcript_get_not_the_model(
    agents: AgentFactory, store: SqliteStore
) -> None:
    model = ScriptedModel(LOOKUP)
    agent = memory_agent(agents, store, model, tools={"lookup": secret_tool()},
                         hooks={"transform": redact})
    output = await agent.stream("who?", memory={"resource": R, "thread": T})
    chunks = [chunk async for chunk in output]
    result = await output.result()
    call = next(c for c in chunks if c["type"] == "tool-call")["payload"]
    shown = next(c for c in chunks if c["type"] == "tool-result")["payload"]
    assert call["args"] == {"id": "c1"}
    assert shown["result"] == {"name": "Acme", "target": "display"}
    # The model (and the caller's result) got the real payload.
    tool_message = next(m for m in model.requests[1].messages if m["role"] == "tool")
    assert "sk-live-123" in tool_message["content"]
    assert "raw" in str(model.requests[1].messages)
    assert result.tool_results[0].result["api_key"] == "sk-live-123"
    # The store keeps the transcript form only.
    stored = await agent.memory.recall(T, last_messages=10)
    assert "sk-live-123" not in str([(m.content, m.metadata) for m in stored])
    assert "raw" not in str([m.metadata for m in stored])
    events = await store.read_events(T, 0)
    assert "sk-live-123" not in str(events) and '"raw"' not in str(events)


async def test_transform_targets_and_the_tools_own_policy_wins(agents: AgentFactory) -> None:
    def agent_level(ctx: dict[str, Any]) -> Any:
        return "agent-level"

    only_display = {"targets": ["display"], "transform_tool_payload": redact}
    model = ScriptedModel(LOOKUP)
    agent = agents(model=model, tools={"lookup": secret_tool(only_display)},
                   hooks={"transform": agent_level})
    output = await agent.stream("who?")
    chunks = [chunk async for chunk in output]
    shown = next(c for c in chunks if c["type"] == "tool-result")["payload"]
    assert shown["result"] == {"name": "Acme", "target": "display"}


async def test_a_calls_transform_replaces_the_agents(agents: AgentFactory) -> None:
    model = ScriptedModel(LOOKUP)
    agent = agents(model=model, tools={"lookup": secret_tool()},
                   hooks={"transform": lambda ctx: "from the agent"})
    output = await agent.stream("who?", hooks={"transform": lambda ctx: "from the call"})
    chunks = [chunk async for chunk in output]
    assert next(c for c in chunks if c["type"] == "tool-call")["payload"]["args"] == (
        "from the call"
    )


@pytest.mark.parametrize(
    "bad",
    [42, {"targets": ["screen"], "transform_tool_payload": redact}, {"targets": ["display"]}],
)
def test_a_bad_transform_policy_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigError, match="transform"):
        Agent(name="a", instructions="x", model=ScriptedModel(["x"]), hooks={"transform": bad})
    with pytest.raises(ConfigError, match="transform"):
        secret_tool(bad)


# -- refused: voice, mastra, the legacy variants ---------------------------------------------


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("voice", "voice is not supported"),
        ("mastra", "not applicable"),
        ("default_generate_options_legacy", "legacy"),
        ("default_stream_options_legacy", "legacy"),
    ],
)
def test_options_the_code_does_not_implement_are_refused(option: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Agent(name="a", instructions="x", model=ScriptedModel(["x"]), **{option: object()})


@pytest.mark.parametrize("method", ["generate_legacy", "stream_legacy"])
async def test_the_legacy_methods_are_refused(agents: AgentFactory, method: str) -> None:
    with pytest.raises(ConfigError, match="legacy"):
        await getattr(agents(model=ScriptedModel(["x"])), method)("hi")


# -- the editor: overrides stored per agent ---------------------------------------------------


async def test_stored_editor_overrides_apply_to_every_later_run(
    agents: AgentFactory, store: SqliteStore
) -> None:
    model = ScriptedModel(["a", "b", "c"])
    agent = memory_agent(agents, store, model, tools={"echo": echo_tool(), "other": echo_tool("o")})
    stored = await agent.save_editor_overrides({
        "id": "hijack", "name": "x", "model": "openai/other",  # code-owned: dropped
        "instructions": ["Edited.", {"role": "system", "content": "Also this."}],
        "tools": {"echo": {"description": "Edited description"}, "other": None},
    })
    assert set(stored) == {"instructions", "tools"}
    await agent.generate("hi")
    assert system_texts(model, 0) == ["Edited.", "Also this."]
    specs = {t["function"]["name"]: t["function"]["description"] for t in model.requests[0].tools}
    assert specs == {"echo": "Edited description"}
    assert agent.id == "conform" and agent.tools["echo"].description == "Tool echo"
    # Another Agent object with the same id on the same store sees them too (e.g. the app).
    again = memory_agent(agents, store, ScriptedModel(["z"]))
    assert await again.editor_overrides() == stored
    await agent.clear_editor_overrides()
    await agent.generate("hi")
    assert system_texts(model, 1) == ["Be brief."]


async def test_stored_overrides_follow_the_editor_permission(
    agents: AgentFactory, store: SqliteStore
) -> None:
    model = ScriptedModel(["a"])
    locked = memory_agent(agents, store, model, editor=False)
    with pytest.raises(ConfigError, match="locked"):
        await locked.save_editor_overrides({"instructions": "x"})
    only_descriptions = memory_agent(
        agents, store, model, editor={"tools": {"description": True}}, tools={"echo": echo_tool()}
    )
    with pytest.raises(ConfigError, match="does not allow editing instructions"):
        await only_descriptions.save_editor_overrides({"instructions": "x"})
    with pytest.raises(ConfigError, match="cannot be stored"):
        await memory_agent(agents, store, model).save_editor_overrides(
            {"tools": {"new": echo_tool("new")}}
        )
