"""The event types module says what the core really emits: every chunk a run streams or writes
to its thread's log has a listed type, a listed source and a payload with exactly the keys of
its TypedDict, and every run ends with one of ``END_TYPES``."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Mapping
from typing import Any, get_args, get_type_hints

from helpers.common import AgentFactory, Held
from pydantic import BaseModel

from tui_agent import Memory, SqliteStore, create_tool
from tui_agent.events import CHUNK_TYPES, END_TYPES, Chunk, Source, UsagePayload, is_end
from tui_agent.store.codec import new_id
from tui_agent.testing import ScriptedModel

R = "res-1"
GUARD_S = 10.0  # failure guard only

# chunk type → the TypedDict of its payload, read from the Chunk union itself
PAYLOAD_OF: dict[str, Any] = {
    kind: get_type_hints(chunk)["payload"]
    for chunk in get_args(Chunk)
    for kind in get_args(get_type_hints(chunk)["type"])
}


def shape_errors(chunk: Mapping[str, Any]) -> list[str]:
    """What in ``chunk`` does not fit the declared types (empty when it fits)."""
    errors = []
    if not {"type", "run_id", "from", "payload"} <= set(chunk) <= {
        "type", "run_id", "from", "payload", "seq"
    }:
        errors.append(f"keys {sorted(chunk)}")
    if chunk.get("from") not in get_args(Source):
        errors.append(f"from {chunk.get('from')!r}")
    payload_type = PAYLOAD_OF.get(chunk["type"])
    if payload_type is None:
        return [*errors, f"type {chunk['type']!r} is not declared"]
    keys = set(chunk["payload"])
    required = payload_type.__required_keys__
    allowed = required | payload_type.__optional_keys__
    if not required <= keys <= allowed:
        errors.append(f"{chunk['type']} payload keys {sorted(keys)}, declared {sorted(allowed)}")
    usage = chunk["payload"].get("usage")
    if usage is not None and set(usage) != UsagePayload.__required_keys__:
        errors.append(f"{chunk['type']} usage keys {sorted(usage)}")
    return errors


class AddInput(BaseModel):
    a: int
    b: int


def add_tool() -> Any:
    return create_tool(id="add", description="Add two integers", input_schema=AddInput,
                       execute=lambda tool_input, context: tool_input.a + tool_input.b)


async def read_until_ends(stream: Any, ends: int) -> list[dict[str, Any]]:
    """The chunks of ``stream`` up to and including its ``ends``-th end chunk."""
    seen: list[dict[str, Any]] = []

    async def read() -> None:
        async for chunk in stream:
            seen.append(chunk)
            if is_end(chunk) and sum(map(is_end, seen)) == ends:
                return

    await asyncio.wait_for(read(), GUARD_S)
    return seen


def test_the_declared_types_are_the_api_s() -> None:
    """API.md's list of chunk types, and every declared type has a payload type."""
    api = {"start", "step-start", "text-delta", "tool-call", "tool-result", "step-finish",
           "finish", "error", "abort", "data-user-message", "data-signal"}
    assert api <= set(CHUNK_TYPES)
    assert set(PAYLOAD_OF) == set(CHUNK_TYPES)
    assert {"finish", "abort", "error", "interrupted"} == END_TYPES


async def test_a_run_s_chunks_fit_their_types_live_and_in_the_log(
    store: SqliteStore, agents: AgentFactory
) -> None:
    """A run with a tool call and a persisted signal's echo (no run took it: no run id), as the
    caller's stream and as a subscriber reads them from the log."""
    model = ScriptedModel([{"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]}, "5"])
    agent = agents(model=model, tools={"add": add_tool()}, memory=Memory(store=store))
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id="t1")
    output = await agent.stream("2+3?", memory={"resource": R, "thread": "t1"})
    live = [chunk async for chunk in output]
    receipt = agent.send_signal({"type": "reactive", "contents": "ping"}, resource_id=R,
                                thread_id="t1", if_idle={"behavior": "persist"})
    assert (await receipt.accepted)["action"] == "persist"
    logged = await read_until_ends(sub.stream, 1)
    logged.append(await asyncio.wait_for(anext(sub.stream), GUARD_S))
    sub.unsubscribe()

    for chunk in live + logged:
        assert shape_errors(chunk) == [], chunk
    kinds = [c["type"] for c in live]
    assert {"start", "step-start", "tool-call", "tool-result", "text-delta", "step-finish",
            "data-user-message"} <= set(kinds)
    assert kinds[-1] == "finish" and not any(map(is_end, live[:-1]))
    assert logged[-1]["type"] == "data-signal" and logged[-1]["run_id"] is None


async def test_abort_and_error_chunks_fit_their_types(
    store: SqliteStore, agents: AgentFactory
) -> None:
    memory = Memory(store=store)
    held = Held("never")
    aborted = await agents(model=ScriptedModel(handler=held), memory=memory).stream(
        "wait", memory={"resource": R, "thread": "t-abort"})
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    aborted.abort()
    failing = agents(model=ScriptedModel([RuntimeError("boom")]), memory=memory)
    failed = await failing.stream("fail", memory={"resource": R, "thread": "t-error"})

    for output, end in ((aborted, "abort"), (failed, "error")):
        chunks = await read_until_ends(output, 1)
        assert chunks[-1]["type"] == end
        for chunk in chunks:
            assert shape_errors(chunk) == [], chunk


async def test_chunks_the_store_writes_itself_fit_their_types(store: SqliteStore) -> None:
    """A run's ``start`` written when a lease is taken, and the ``interrupted`` of a run whose
    owner died (its lease expired and was reaped)."""
    dead = new_id()
    assert await store.start_run("t-dead", R, dead, owner="dead-process", ttl_s=30)
    with sqlite3.connect(store.path) as plain:
        plain.execute("UPDATE leases SET expires_at = expires_at - 3600")
    assert await store.reap_expired_lease("t-dead")
    logged = await store.read_events("t-dead", 0)
    assert [e["type"] for e in logged] == ["start", "interrupted"]
    for chunk in logged:
        assert shape_errors(chunk) == [], chunk


def test_shape_errors_finds_a_drifted_payload() -> None:
    """The check above can fail: a payload key the types do not declare, or a new type."""
    chunk = {"type": "text-delta", "run_id": "r", "from": "AGENT", "payload": {"txt": "x"}}
    assert shape_errors(chunk) == ["text-delta payload keys ['txt'], declared ['text']"]
    chunk = {"type": "thinking", "run_id": "r", "from": "AGENT", "payload": {}}
    assert shape_errors(chunk) == ["type 'thinking' is not declared"]
