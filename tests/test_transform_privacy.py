"""Issue 21, point 1: a tool payload hidden by ``hooks["transform"]`` is hidden everywhere it is
shown or kept — both chunk types and every field of them (``args`` of the ``tool-result`` chunk
too), a subscriber in this process and one in another process, the thread's stored event log,
the stored messages, an export (JSON and Markdown), the app's transcript model (what its
tool-call widget shows) and the CLI's rendering and ``watch --json`` lines — while the model
and the tool get the real payload, and so does the caller's own ``result`` (docs/choices.md).

Three calls cover every field that can hold a payload: one that succeeds (its input and its
output are secret), one whose tool raises with the secret input in its message, and one whose
input fails the schema (the validation message quotes the secret). Runs on SQLite and
PostgreSQL; the other process is a real one (tests/helpers/signal_peer.py)."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest
from helpers.signal_peer import Peer
from rich.console import Console

from tui_agent import Agent, Memory, create_tool
from tui_agent.app.transcript import Transcript
from tui_agent.cli.render import Renderer, chunk_json
from tui_agent.export import export_text
from tui_agent.store import open_store
from tui_agent.testing import ScriptedModel
from tui_agent.tools import TransformPolicy, shown_args, shown_result

R, T = "res-p", "thread-p"
SECRET_IN = "tok-in-4Kq9Zt"  # the model's input to the tools
SECRET_OUT = "sk-out-7Wm2Rv"  # what the lookup tool returns
SECRETS = (SECRET_IN, SECRET_OUT)


def hide(ctx: dict[str, Any]) -> Any:
    """Shows a call's id only, a result's name only, and no error text."""
    if ctx["phase"] == "input-available":
        return {"id": (ctx["input"] or {}).get("id") if isinstance(ctx["input"], dict) else None}
    if ctx["phase"] == "error":
        return "the call failed"
    return {"name": ctx["output"]["name"]}


class Tools:
    """The three tools, recording the input each got."""

    def __init__(self) -> None:
        self.got: list[Any] = []

    def lookup(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        self.got.append(tool_input)
        return {"name": "Acme", "api_key": SECRET_OUT}

    def fail(self, tool_input: dict[str, Any]) -> Any:
        self.got.append(tool_input)
        raise ValueError(f"token {tool_input['token']} was refused")

    def all(self) -> dict[str, Any]:
        token = {
            "type": "object",
            "properties": {"id": {"type": "string"}, "token": {"type": "string"}},
        }
        count = {"type": "object", "properties": {"count": {"type": "integer"}}}
        return {
            "lookup": create_tool(id="lookup", input_schema=token, execute=self.lookup),
            "fail": create_tool(id="fail", input_schema=token, execute=self.fail),
            "count": create_tool(id="count", input_schema=count, execute=lambda i: i["count"]),
        }


CALLS = [
    {
        "tool_calls": [
            {"name": "lookup", "args": {"id": "c1", "token": SECRET_IN}},
            {"name": "fail", "args": {"id": "c2", "token": SECRET_IN}},
            {"name": "count", "args": {"count": SECRET_IN}},
        ]
    },
    "done",
]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The store both processes open: a SQLite file, or a PostgreSQL database of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "shared.db")
        return
    admin = request.getfixturevalue("pg_admin_url")
    name = pg_server.new_database_name()
    pg_server.create_database_sync(admin, name)
    try:
        yield pg_server.database_url(admin, name)
    finally:
        pg_server.drop_database_sync(admin, name)


def leaks(where: str, value: Any) -> list[str]:
    """``where: secret`` for each secret in any field of ``value`` (as JSON, every field)."""
    text = value if isinstance(value, str) else json.dumps(value, default=_fields)
    return [f"{where}: {secret}" for secret in SECRETS if secret in text]


def _fields(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump is not None else str(value)


async def test_a_hidden_payload_is_nowhere_but_with_the_model_and_the_tool(db: str) -> None:
    peer = Peer({"db": db, "name": "watcher"})
    store = open_store(db)
    tools, model = Tools(), ScriptedModel(CALLS)
    agent = Agent(
        name="a",
        id="peer",
        instructions="Be brief.",
        model=model,
        tools=tools.all(),
        hooks={"transform": hide},
        memory=Memory(store=store),
    )
    try:
        peer.expect("ready")
        peer.send("subscribe", sub="s", target={"resource_id": R, "thread_id": T})
        peer.expect("sub-ready")
        here = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
        output = await agent.stream("look them up", memory={"resource": R, "thread": T})
        chunks = [chunk async for chunk in output]
        result = await output.result()
        subscribed = []
        async for chunk in here.stream:
            subscribed.append(chunk)
            if chunk["type"] == "finish":
                break
        here.unsubscribe()
        elsewhere = peer.chunks("s", lambda c: c["type"] == "finish")
        messages = await agent.memory.list_messages(T, limit=50)  # type: ignore[union-attr]
        events = await store.read_events(T, 0)
        exported = [await export_text(store, T, fmt) for fmt in ("json", "md")]
    finally:
        peer.close()
        await agent.close()
        await store.close()

    # Every kind of payload was there to leak: three calls, their chunks and stored messages.
    types = [c["type"] for c in chunks]
    assert types.count("tool-call") == 3 and types.count("tool-result") == 3
    assert [m.role for m in messages].count("tool") == 3
    assert [c["type"] for c in elsewhere].count("tool-result") == 3

    app = Transcript()
    app.load_history(messages)
    for chunk in chunks:
        app.apply(chunk)
    screen = io.StringIO()
    renderer = Renderer(Console(file=screen, width=200, color_system=None), live=False)
    for chunk in chunks:
        renderer.handle(chunk)
    renderer.close()
    found = (
        leaks("stream()", chunks)
        + leaks("subscriber here", subscribed)
        + leaks("subscriber in another process", elsewhere)
        + leaks("event log", events)
        + leaks("stored messages", messages)
        + leaks("export json", exported[0])
        + leaks("export md", exported[1])
        + leaks("app transcript", app.entries)
        + leaks("watch --json", [chunk_json(c) for c in elsewhere])
        + leaks("watch", screen.getvalue())
    )
    assert found == []

    # What is shown: the tool-result chunk's args as the tool-call chunk showed them.
    shown = {
        c["payload"]["tool_call_id"]: c["payload"] for c in chunks if c["type"] == "tool-result"
    }
    for call in (c["payload"] for c in chunks if c["type"] == "tool-call"):
        assert shown[call["tool_call_id"]]["args"] == call["args"]
    assert sorted(json.dumps(p["result"]) for p in shown.values()) == sorted(
        [
            json.dumps({"name": "Acme"}),
            json.dumps({"error": "the call failed"}),
            json.dumps({"error": "the call failed"}),
        ]
    )

    # The tool and the model got the real payload; so does the caller's result.
    assert sorted(json.dumps(got) for got in tools.got) == [
        json.dumps({"id": c, "token": SECRET_IN}) for c in ("c1", "c2")
    ]
    second_call = json.dumps(model.requests[1].messages)
    assert SECRET_OUT in second_call and SECRET_IN in second_call
    assert result.tool_results[0].result["api_key"] == SECRET_OUT
    assert result.tool_calls[0].args["token"] == SECRET_IN


async def test_a_policy_that_raises_hides_the_payload() -> None:
    def broken(ctx: dict[str, Any]) -> Any:
        raise RuntimeError(f"cannot show {ctx['input']}")

    policy = TransformPolicy(broken)
    ids = {"tool_name": "lookup", "tool_call_id": "c1"}
    args = await shown_args(policy, "display", args={"token": SECRET_IN}, **ids)
    out = await shown_result(
        policy, "transcript", args={"token": SECRET_IN}, result={"api_key": SECRET_OUT}, **ids
    )
    error = await shown_result(
        policy, "display", args={}, result={"error": SECRET_IN}, is_error=True, **ids
    )
    assert leaks("shown", [args, out, error]) == []
    assert args == {"message": "tool input-available payload unavailable"}
    assert error == {"error": json.dumps({"message": "tool error payload unavailable"})}


async def test_without_a_policy_or_outside_its_targets_the_payload_is_shown_as_it_is() -> None:
    ids = {"tool_name": "lookup", "tool_call_id": "c1"}
    assert await shown_args(None, "display", args={"a": 1}, **ids) == {"a": 1}
    only_display = TransformPolicy(lambda ctx: "hidden", frozenset({"display"}))
    assert await shown_result(only_display, "transcript", args={}, result=[1], **ids) == [1]
    assert await shown_result(only_display, "display", args={}, result=[1], **ids) == "hidden"
    assert await shown_result(
        only_display, "display", args={}, result={"error": "x"}, is_error=True, **ids
    ) == {"error": "hidden"}
