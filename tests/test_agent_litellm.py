"""The Agent over real HTTP against a fake OpenAI server on 127.0.0.1: each test that talks to
the server runs on both model paths (``route``: "direct", the httpx path, and "litellm")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.common import AgentFactory
from openai_server import FakeOpenAIServer
from pydantic import BaseModel

from tui_agent import Agent, Memory, create_tool
from tui_agent.errors import MissingCredentialError, ModelCallError, UnknownProviderError
from tui_agent.models.resolve import ModelConfig

pytestmark = pytest.mark.integration

NO_RETRY = {"max_retries": 0}  # litellm retries 429/5xx by default; these tests want one try
# A key without a well-known prefix: only knowing it (not its shape) can keep it out of errors.
SECRET = "c0nfigSecret0123456789abcdefXyZ"


class AddInput(BaseModel):
    a: int
    b: int


ADD = create_tool(
    id="add", description="Add two integers", input_schema=AddInput, execute=lambda i: i.a + i.b
)


@pytest.fixture(params=["direct", "litellm"])
def route(request: pytest.FixtureRequest) -> str:
    """The path ``openai/…`` models take: each test using it runs on both."""
    return str(request.param)


def on(route: str, spec: Any) -> Any:
    """``spec`` (a router string, config dict or a list of them) on ``route``."""
    if isinstance(spec, list):
        return [on(route, item) for item in spec]
    spec = {"id": spec} if isinstance(spec, str) else dict(spec)
    return {**spec, "route": "litellm" if route == "litellm" else "auto"}


def make_agent(model: Any = "openai/gpt-test", **kwargs: Any) -> Agent:
    return Agent(**{"name": "wire", "instructions": "Be brief.", "model": model, **kwargs})


async def test_streams_text_over_http(openai_server: FakeOpenAIServer, route: str) -> None:
    openai_server.script(
        # Paced, 25 ms apart: the deltas of one read are handed on as one, so a burst would be one.
        {"text": "Hello from the wire!", "rate": 40,
         "usage": {"prompt_tokens": 9, "completion_tokens": 4}}
    )
    output = await make_agent(on(route, "openai/gpt-test")).stream("hi")
    chunks = [chunk async for chunk in output]
    result = await output.result()

    deltas = [c["payload"]["text"] for c in chunks if c["type"] == "text-delta"]
    assert len(deltas) > 1 and "".join(deltas) == "Hello from the wire!"
    assert [c["type"] for c in chunks][:2] == ["start", "step-start"]
    assert chunks[-1]["type"] == "finish"
    assert result.text == "Hello from the wire!" and result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (9, 4)
    (body,) = openai_server.requests
    assert body["model"] == "gpt-test" and body["stream"] is True
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]


async def test_a_tool_round_trip_over_http(openai_server: FakeOpenAIServer, route: str) -> None:
    openai_server.script(
        {"tool_calls": [{"id": "call_add_1", "name": "add", "arguments": {"a": 19, "b": 23}}]},
        "The sum is 42.",
    )
    result = await make_agent(on(route, "openai/gpt-test"), tools={"add": ADD}).generate(
        "19+23?", tool_choice="auto")

    assert result.text == "The sum is 42."
    assert [(c.tool_call_id, c.args) for c in result.tool_calls] == [
        ("call_add_1", {"a": 19, "b": 23})
    ]
    assert result.tool_results[0].result == 42
    first, second = openai_server.requests
    assert first["tools"][0]["function"]["name"] == "add"
    assert first["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assert first["tool_choice"] == "auto"
    assistant, tool = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["id"] == "call_add_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 19, "b": 23}
    assert tool == {"role": "tool", "tool_call_id": "call_add_1", "content": "42"}


async def test_system_messages_reach_openai_in_order_without_provider_options(
    openai_server: FakeOpenAIServer, route: str,
) -> None:
    instructions = [
        "Rule one.",
        {
            "role": "system",
            "content": "Rule two.",
            "provider_options": {"anthropic": {"cache_control": {"type": "ephemeral"}}},
        },
        {"role": "system", "content": "Rule three."},
    ]
    await make_agent(on(route, "openai/gpt-test"), instructions=instructions).generate("hi")
    (body,) = openai_server.requests
    assert body["messages"] == [
        {"role": "system", "content": "Rule one."},
        {"role": "system", "content": "Rule two."},
        {"role": "system", "content": "Rule three."},
        {"role": "user", "content": "hi"},
    ]


async def test_anthropic_cache_control_from_instructions_reaches_the_wire(
    openai_server: FakeOpenAIServer,
) -> None:
    # The fake server records Anthropic's /v1/messages call and answers 404.
    model = {
        "id": "anthropic/claude-3-5-haiku-latest",
        "api_key": "sk-ant-test-123456789",
        "api_base": f"http://127.0.0.1:{openai_server.port}",
        "settings": NO_RETRY,
    }
    instructions = [
        {
            "role": "system",
            "content": "Long stable prompt.",
            "provider_options": {"anthropic": {"cache_control": {"type": "ephemeral"}}},
        },
        "Not cached.",
    ]
    with pytest.raises(ModelCallError):
        await make_agent(model, instructions=instructions).generate("hi")
    sent = openai_server.other_requests[0]
    assert sent["path"] == "/v1/messages"
    assert sent["body"]["system"] == [
        {"type": "text", "text": "Long stable prompt.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Not cached."},
    ]


@pytest.mark.parametrize("status", [500, 429])
async def test_a_provider_error_fails_the_run_with_its_status(
    openai_server: FakeOpenAIServer, memory: Memory, agents: AgentFactory, status: int,
    route: str,
) -> None:
    openai_server.script({"error": status, "message": f"scripted {status}"})
    agent = agents(name="wire", model=on(route, "openai/gpt-test"), memory=memory)
    with pytest.raises(ModelCallError) as info:
        await agent.generate("hi", memory={"resource": "r", "thread": "t"}, model_settings=NO_RETRY)
    assert info.value.status_code == status
    assert f"scripted {status}" in str(info.value)
    assert len(openai_server.requests) == 1
    (run,) = await memory.store.list_runs("t")
    assert (run.status, run.finish_reason) == ("failed", "error")
    events = await memory.store.read_events("t", 0)
    assert events[-1]["type"] == "error" and events[-1]["run_id"] == run.id
    assert f"scripted {status}" in events[-1]["payload"]["error"]
    assert await memory.store.active_run("t") is None
    assert [(m.role, m.content) for m in await memory.list_messages("t")] == [("user", "hi")]


async def test_a_connection_dropped_mid_answer_keeps_the_partial_answer(
    openai_server: FakeOpenAIServer, memory: Memory, agents: AgentFactory, route: str,
) -> None:
    """The server hangs up mid-stream (the body unfinished): what was streamed stays in the
    stream and in memory, and the run ends with one error chunk naming the provider and the
    failure. On the litellm path too (its aiohttp transport used to drop the text)."""
    openai_server.script({"text": "partial answer", "cut": True})
    agent = agents(name="wire", model=on(route, "openai/gpt-test"), memory=memory)
    output = await agent.stream("hi", memory={"resource": "r", "thread": "t"},
                                model_settings=NO_RETRY)
    chunks = [chunk async for chunk in output]
    with pytest.raises(ModelCallError):
        await output.result()

    streamed = "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta")
    assert streamed == "part"  # the first of the answer's chunks, all the server sent
    assert chunks[-1]["type"] == "error"
    error = chunks[-1]["payload"]["error"]
    assert "openai" in error and "peer closed connection" in error, error
    assert [(m.role, m.content, m.metadata) for m in await memory.list_messages("t")] == [
        ("user", "hi", {}), ("assistant", "part", {"failed": True}),
    ]
    events = await memory.store.read_events("t", 0)
    assert events[-1]["type"] == "error" and events[-1]["payload"]["error"] == error


async def test_a_missing_key_names_the_variable_before_any_request(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, memory: Memory,
    agents: AgentFactory, route: str,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    agent = agents(name="wire", model=on(route, "openai/gpt-test"), memory=memory)  # no key yet
    with pytest.raises(MissingCredentialError, match="OPENAI_API_KEY") as info:
        await agent.generate("hi", memory={"resource": "r", "thread": "t"})
    assert info.value.variables == ["OPENAI_API_KEY"]
    assert openai_server.requests == []
    assert await memory.get_thread("t") is None, "nothing stored"


async def test_an_unknown_provider_is_a_clear_error(openai_server: FakeOpenAIServer) -> None:
    agent = make_agent("nosuchprovider/some-model")
    with pytest.raises(UnknownProviderError, match="unknown provider 'nosuchprovider'"):
        await agent.generate("hi")
    assert openai_server.requests == []


async def test_a_fallback_list_goes_on_to_the_next_model(
    openai_server: FakeOpenAIServer, route: str,
) -> None:
    openai_server.script({"error": 500, "message": "primary down"}, "from the backup")
    agent = make_agent(on(route, [{"id": "openai/primary", "settings": NO_RETRY}, "openai/backup"]))
    result = await agent.generate("hi")
    assert result.text == "from the backup"
    assert [r["model"] for r in openai_server.requests] == ["primary", "backup"]


async def test_a_config_object_brings_its_own_key_and_base_and_the_key_is_never_stored(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    memory: Memory, agents: AgentFactory, route: str,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    openai_server.script(
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
        "Three.",
        {"error": 401, "message": f"Incorrect API key provided: {SECRET}"},  # quoted back
    )
    config = ModelConfig(
        id="openai/gpt-config",
        api_key=SECRET,
        api_base=openai_server.base_url,
        headers={"X-Team": "core"},
        settings=NO_RETRY,
        route="litellm" if route == "litellm" else "auto",
    )
    assert SECRET not in repr(config)
    agent = agents(name="wire", model=config, memory=memory, tools={"add": ADD})
    target = {"memory": {"resource": "r", "thread": "t"}}
    result = await agent.generate("1+2?", **target)
    assert result.text == "Three."
    with pytest.raises(ModelCallError) as info:
        await agent.generate("again", **target)
    assert "Incorrect API key provided: ***" in str(info.value)
    assert SECRET not in str(info.value)
    (failed, *_) = await memory.store.list_runs("t")
    assert failed.status == "failed" and "Incorrect API key provided: ***" in failed.error

    assert [r["model"] for r in openai_server.requests] == ["gpt-config"] * 3
    assert openai_server.request_headers[0]["authorization"] == f"Bearer {SECRET}"
    assert openai_server.request_headers[0]["x-team"] == "core"
    await agent.close()
    await memory.store.close()  # the file, its -wal and -shm hold all that was written
    name = Path(memory.store.path).name
    files = [p for p in tmp_path.iterdir() if p.name.startswith(name)]
    assert files, "the store file exists"
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), f"key leaked into {path.name}"


async def test_model_settings_and_provider_options_reach_the_request(
    openai_server: FakeOpenAIServer, route: str,
) -> None:
    await make_agent(on(route, "openai/gpt-test")).generate(
        "hi",
        model_settings={"temperature": 0.25, "max_tokens": 64},
        provider_options={"openai": {"seed": 7}, "anthropic": {"top_k": 3}},
    )
    (body,) = openai_server.requests
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.25, 64, 7)
    assert "top_k" not in body, "another provider's options stay out"


async def test_a_callable_model_picks_a_router_string_per_request(
    openai_server: FakeOpenAIServer, route: str,
) -> None:
    agent = make_agent(lambda ctx: on(route, f"openai/{ctx['tier']}-model"))
    await agent.generate("hi", request_context={"tier": "pro"})
    await agent.generate("hi", request_context={"tier": "free"})
    assert [r["model"] for r in openai_server.requests] == ["pro-model", "free-model"]


async def test_real_provider_hosts_are_unreachable_from_tests(
    monkeypatch: pytest.MonkeyPatch, route: str,
) -> None:
    # Without OPENAI_BASE_URL the call would go to api.openai.com: the suite blocks it.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    with pytest.raises(ModelCallError, match=r"offline|blocked|onnect"):
        await make_agent(on(route, "openai/gpt-test")).generate("hi", model_settings=NO_RETRY)
