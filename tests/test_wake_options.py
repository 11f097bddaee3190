"""Issue 21, point 2: ``if_idle={"stream_options": …}`` takes what ``stream()`` takes — function
instructions, ``Tool`` objects in ``tools_override``, hooks (a transform policy too) — and the
run the sending process wakes gets them as ``stream()`` would: the live objects, never JSON.
Refused at the call, naming the option, only what a woken run can never honour (a ``run_id``, a
``memory`` naming a thread) or what ``stream()`` itself refuses; nothing is stored then.
Runs on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.common import AgentFactory

from tui_agent import Agent, Memory, create_tool
from tui_agent.errors import ConfigError, SignalError
from tui_agent.signals.data import IfIdle, parse_if_idle
from tui_agent.store import Store
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "res-w", "thread-w"
NOTE = {"source": "ci", "kind": "build", "summary": "the build broke", "priority": "medium"}


def shout_tool(seen: list[Any]) -> Any:
    def shout(tool_input: dict[str, Any]) -> str:
        seen.append(tool_input)
        return tool_input["text"].upper()

    return create_tool(
        id="shout",
        description="Shout the text",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        execute=shout,
    )


def woken_agent(agents: AgentFactory, store: Store, model: ScriptedModel) -> Agent:
    return agents(name="waker", model=model, memory=Memory(store=store))


async def test_a_wake_gets_functions_tools_and_hooks_as_stream_would(
    agents: AgentFactory, store: Store
) -> None:
    ran: list[Any] = []
    before: list[str] = []
    tool = shout_tool(ran)
    model = ScriptedModel([{"tool_calls": [{"name": "shout", "args": {"text": "hi"}}]}, "done"])
    agent = woken_agent(agents, store, model)
    options = {
        "instructions": lambda ctx: f"Answer for {ctx.get('user')}.",
        "request_context": {"user": "ann"},
        "tools_override": {"shout": tool},
        "hooks": {
            "before_tool_call": lambda call: before.append(call["tool_name"]),
            "transform": lambda ctx: "(hidden)",
        },
    }
    receipt = agent.send_message(
        "go", resource_id=R, thread_id=T, if_idle={"stream_options": options}
    )
    decision = await receipt.accepted
    assert decision["action"] == "wake"
    chunks = [chunk async for chunk in decision["output"]]
    result = await decision["output"].result()
    assert result.text == "done"
    first = model.requests[0]
    assert [m["content"] for m in first.messages if m["role"] == "system"] == ["Answer for ann."]
    assert [spec["function"]["name"] for spec in first.tools] == ["shout"]
    assert ran == [{"text": "hi"}] and before == ["shout"]
    shown = [c["payload"] for c in chunks if c["type"] in ("tool-call", "tool-result")]
    assert [p["args"] for p in shown] == ["(hidden)", "(hidden)"]
    assert shown[1]["result"] == "(hidden)"
    assert "HI" in str(model.requests[1].messages)  # the model got the real result


async def test_an_if_idle_object_keeps_its_tool_objects() -> None:
    tool = shout_tool([])
    given = IfIdle(stream_options={"tools_override": {"shout": tool}})
    assert parse_if_idle(given).stream_options["tools_override"]["shout"] is tool


async def test_memory_options_in_stream_options_are_honoured(
    agents: AgentFactory, store: Store
) -> None:
    model = ScriptedModel(["one", "two", "three"])
    agent = woken_agent(agents, store, model)
    for text in ("first", "second"):
        await (await agent.send_message(text, resource_id=R, thread_id=T).accepted)[
            "output"
        ].consume_stream()
    options = {"memory": {"options": {"last_messages": 1}}}
    decision = await agent.send_message(
        "third", resource_id=R, thread_id=T, if_idle={"stream_options": options}
    ).accepted
    await decision["output"].consume_stream()
    history = [m["content"] for m in model.requests[2].messages if m["role"] != "system"]
    assert history == ["two", "third"]


async def test_a_notification_wake_gets_a_tool_object(agents: AgentFactory, store: Store) -> None:
    ran: list[Any] = []
    model = ScriptedModel([{"tool_calls": [{"name": "shout", "args": {"text": "ci"}}]}, "ok"])
    agent = woken_agent(agents, store, model)
    sent = await agent.send_notification_signal(
        NOTE,
        resource_id=R,
        thread_id=T,
        if_idle={
            "stream_options": {
                "tools_override": {"shout": shout_tool(ran)},
                "instructions": lambda ctx: "Triage.",
            }
        },
    )
    await sent["accepted"]["output"].consume_stream()
    assert ran == [{"text": "ci"}]
    assert [m["content"] for m in model.requests[0].messages if m["role"] == "system"] == [
        "Triage."
    ]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"run_id": "mine"}, SignalError, r"if_idle.stream_options\['run_id'\] cannot be honoured"),
        (
            {"memory": {"resource": R, "thread": "other"}},
            SignalError,
            r"if_idle.stream_options\['memory'\] cannot be honoured",
        ),
        ({"max_stepz": 2}, ConfigError, r"if_idle.stream_options: unknown option.*max_stepz"),
        ({"max_steps": 0}, ConfigError, r"if_idle.stream_options: max_steps"),
        ({"tools_override": {"x": 42}}, ConfigError, r"tools_override\['x'\] is not a tool"),
        ({"hooks": {"transform": 42}}, ConfigError, r"hooks\['transform'\]"),
    ],
)
async def test_what_a_wake_cannot_honour_fails_at_the_call(
    agents: AgentFactory,
    store: Store,
    options: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    model = ScriptedModel(["never"])
    agent = woken_agent(agents, store, model)
    with pytest.raises(error, match=message):
        agent.send_message("x", resource_id=R, thread_id=T, if_idle={"stream_options": options})
    assert await agent.memory.get_thread(T) is None  # type: ignore[union-attr]
    assert model.calls == 0
