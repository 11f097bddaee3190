"""When a write cannot be made: a tool result with no JSON form becomes that call's tool error
(the run goes on), and a full disk ends the run as failed with one clear line naming the store,
its lease released at once (issue 11)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.common import AgentFactory
from pydantic import BaseModel

from tui_agent import Memory, SqliteStore, create_tool
from tui_agent.errors import RunFailedError, StoreFullError
from tui_agent.testing import ScriptedModel

THREAD = {"resource": "r", "thread": "t"}


class Empty(BaseModel):
    pass


def circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


class Opaque:
    pass


UNSTORABLE = {
    "circular": circular,
    "5000-digit integer": lambda: 10**4999,
    "object without a JSON form": Opaque,
    "nested too deep": lambda: __import__("functools").reduce(lambda a, _: [a], range(5000), []),
}


@pytest.mark.parametrize("kind", list(UNSTORABLE))
async def test_an_unstorable_tool_result_is_a_tool_error_and_the_run_goes_on(
    kind: str, store: SqliteStore, agents: AgentFactory
) -> None:
    make = UNSTORABLE[kind]
    tool = create_tool(id="odd", input_schema=Empty, execute=lambda _input: make())
    model = ScriptedModel([{"tool_calls": [{"name": "odd", "args": {}}]}, "moved on"])
    agent = agents(model=model, tools={"odd": tool}, memory=Memory(store=store))
    result = await agent.generate("go", memory=THREAD)
    assert result.text == "moved on"
    (tool_result,) = result.tool_results
    assert tool_result.is_error and "cannot be stored" in tool_result.result["error"]
    assert await store.active_run("t") is None
    run = await store.get_run(result.run_id)
    assert run is not None and run.status == "finished"
    roles = [m.role for m in await store.list_messages("t")]
    assert roles == ["user", "assistant", "tool", "assistant"]


async def test_a_full_disk_fails_the_run_at_once_with_one_clear_line(
    store: SqliteStore, agents: AgentFactory
) -> None:
    model = ScriptedModel(["small", "x" * 2_000_000], chunk_size=200_000)
    agent = agents(model=model, memory=Memory(store=store))
    await agent.generate("warm up", memory=THREAD)  # the file exists, its tables have pages
    (pages,) = await store.fetchone("PRAGMA page_count")
    await store.fetchone(f"PRAGMA max_page_count={pages + 8}")  # room for small writes only
    with pytest.raises((RunFailedError, StoreFullError)) as raised:
        await agent.generate("again", memory=THREAD)
    error = raised.value
    if isinstance(error, RunFailedError):
        error = error.__cause__
    message = str(error)
    assert isinstance(error, StoreFullError), repr(error)
    assert store.path in message and "full" in message and "\n" not in message
    assert await store.active_run("t") is None  # released at once, not after the TTL
    (last,) = await store.list_runs("t", limit=1)
    assert (last.status, last.error) == ("failed", f"StoreFullError: {message}")
