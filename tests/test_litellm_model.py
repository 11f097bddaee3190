"""The model adapters over real HTTP against a fake OpenAI server: every test that talks to the
server runs on both paths (``route``: "direct", the httpx path of ``openai_http``, and
"litellm", litellm's own), so the two give the same events, bodies and errors."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai_server import FakeOpenAIServer

from tui_agent.errors import MissingCredentialError, ModelCallError, UnknownProviderError
from tui_agent.models.base import ModelEvent, ModelRequest, StepEnd, TextDelta, ToolCallDelta
from tui_agent.models.litellm_model import LiteLLMModel
from tui_agent.models.openai_http import OpenAIHTTPModel
from tui_agent.models.redaction import redact
from tui_agent.models.resolve import FallbackModel, ModelConfig, resolve_model

pytestmark = pytest.mark.integration

NO_RETRY = {"max_retries": 0}  # litellm's client retries 429/5xx by default; tests want one try
ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"},
                                                        "b": {"type": "number"}}},
    },
}


@pytest.fixture(params=["direct", "litellm"])
def route(request: pytest.FixtureRequest) -> str:
    """The path an ``openai/…`` model takes: each test using it runs on both."""
    return str(request.param)


def config_route(route: str) -> str:
    return "litellm" if route == "litellm" else "auto"


def model_for(route: str, model_id: str, **config: Any) -> Any:
    """``model_id`` as resolve_model builds it on ``route`` (``api_key``, ``api_base``, ...)."""
    model = resolve_model(ModelConfig(id=model_id, route=config_route(route), **config))
    expected = LiteLLMModel if route == "litellm" else OpenAIHTTPModel
    assert isinstance(model, expected), f"{model!r} is not on the {route} path"
    return model


def specs_on(route: str, *specs: Any) -> list[dict[str, Any]]:
    """A fallback list with every entry on ``route``."""
    as_dicts = [{"id": s} if isinstance(s, str) else dict(s) for s in specs]
    return [{**spec, "route": config_route(route)} for spec in as_dicts]


def no_retry_request() -> ModelRequest:
    return ModelRequest([user("hi")], settings=NO_RETRY)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def collect(model: Any, request: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def assemble_calls(events: list[ModelEvent]) -> dict[int, dict[str, Any]]:
    calls: dict[int, dict[str, Any]] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            call = calls.setdefault(e.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = e.id or call["id"]
            call["name"] = e.name or call["name"]
            call["arguments"] += e.arguments
    return calls


async def test_streams_text_then_one_step_end_with_usage(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    # Paced, 25 ms apart: the direct path hands on one read's deltas as one.
    openai_server.script({"text": "Hello, streaming world!", "rate": 40,
                          "usage": {"prompt_tokens": 12, "completion_tokens": 5}})
    events = await collect(model_for(route, "openai/gpt-test"), ModelRequest([user("hi")]))

    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1, "text should arrive in several deltas"
    assert text_of(events) == "Hello, streaming world!"
    assert isinstance(events[-1], StepEnd)
    assert [e for e in events if isinstance(e, StepEnd)] == [events[-1]]
    assert events[-1].finish_reason == "stop"
    assert events[-1].usage is not None
    assert (events[-1].usage.input_tokens, events[-1].usage.output_tokens) == (12, 5)
    body = openai_server.requests[0]
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "tools" not in body, "no tools key when the request has no tools"


async def test_tool_calls_are_assembled_from_fragments(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"tool_calls": [
        {"id": "call_a", "name": "add", "arguments": {"a": 1, "b": 2}},
        {"id": "call_b", "name": "add", "arguments": {"a": 30, "b": 12}},
    ]})
    request = ModelRequest([user("add things")], tools=[ADD_TOOL], tool_choice="auto")
    events = await collect(model_for(route, "openai/gpt-test"), request)

    fragments = [e for e in events if isinstance(e, ToolCallDelta) and e.arguments]
    assert len(fragments) > 2, "arguments should arrive split over several deltas"
    calls = assemble_calls(events)
    assert calls[0]["id"] == "call_a" and calls[0]["name"] == "add"
    assert json.loads(calls[0]["arguments"]) == {"a": 1, "b": 2}
    assert calls[1]["id"] == "call_b"
    assert json.loads(calls[1]["arguments"]) == {"a": 30, "b": 12}
    assert isinstance(events[-1], StepEnd) and events[-1].finish_reason == "tool-calls"
    body = openai_server.requests[0]
    assert body["tools"] == [ADD_TOOL]
    assert body["tool_choice"] == "auto"


async def test_length_finish_reason_is_normalized(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"text": "cut sho", "finish_reason": "length"})
    events = await collect(model_for(route, "openai/gpt-test"), ModelRequest([user("hi")]))
    assert isinstance(events[-1], StepEnd) and events[-1].finish_reason == "length"


async def test_settings_reach_the_provider(openai_server: FakeOpenAIServer, route: str
) -> None:
    request = ModelRequest([user("hi")], settings={"temperature": 0.25, "max_tokens": 7})
    await collect(model_for(route, "openai/gpt-test"), request)
    body = openai_server.requests[0]
    assert body["temperature"] == 0.25
    assert body["max_tokens"] == 7


@pytest.mark.parametrize(("status", "message"), [(500, "upstream exploded"), (429, "slow down")])
async def test_http_errors_become_model_call_errors(
    openai_server: FakeOpenAIServer, status: int, message: str, route: str
) -> None:
    openai_server.script({"error": status, "message": message})
    with pytest.raises(ModelCallError) as info:
        await collect(model_for(route, "openai/gpt-test"), no_retry_request())
    assert info.value.status_code == status
    assert info.value.model == "openai/gpt-test"
    assert message in str(info.value)
    assert f"HTTP {status}" in str(info.value)


async def test_error_message_never_contains_the_api_key(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    key = "sk-live-0123456789abcdefghij"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    # A provider that echoes the credential back in its error body.
    openai_server.handler = lambda body: {
        "error": 401, "message": f"bad key {openai_server.request_headers[-1]['authorization']}"}
    with pytest.raises(ModelCallError) as info:
        await collect(model_for(route, "openai/gpt-test"), no_retry_request())
    assert openai_server.request_headers[0]["authorization"] == f"Bearer {key}"
    assert info.value.status_code == 401
    assert key not in str(info.value)
    assert "***" in str(info.value)


# Keys of other shapes than ``sk-…``: none matches the generic pattern, so only knowing the key,
# wherever it was given, keeps it out of an error message (each layer of the redaction is tested
# on its own: these for the known keys, the next test for the pattern).
KEY_SHAPES = {
    "32-hex": "9f86d081884c7d659a2feaa0c55ad015",
    "jwt-like": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0dWkifQ.Qm9ndXNTaWduYXR1cmVGb3JUZXN0cw",
    "no-prefix": "Zt9pQ2rX8vLm4KcW7yHs3NbFq6Dj",
}
# Where a key can come from, and the request header the provider sees it in.
KEY_SOURCES = ["env", "model-config", "model-settings", "config-headers", "settings-headers"]


def echo_credentials(server: FakeOpenAIServer) -> None:
    """The provider rejects the call and quotes back the credentials it received, as real ones
    do ("Incorrect API key provided: …")."""
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        headers = server.request_headers[-1]
        quoted = [f"{name}: {headers[name]}" for name in ("authorization", "x-api-key")
                  if name in headers]
        return {"error": 401, "message": f"invalid credentials ({'; '.join(quoted)})"}

    server.handler = reply


def test_the_key_shapes_are_ones_the_generic_pattern_misses() -> None:
    # Otherwise the next test could not tell a known key redacted from a pattern match.
    for key in KEY_SHAPES.values():
        assert redact(f"key: {key}", []) == f"key: {key}"


@pytest.mark.parametrize("source", KEY_SOURCES)
@pytest.mark.parametrize("shape", list(KEY_SHAPES))
async def test_a_key_of_any_shape_from_any_source_never_shows_in_an_error(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, source: str, shape: str,
    route: str,
) -> None:
    key = KEY_SHAPES[shape]
    echo_credentials(openai_server)
    settings: dict[str, Any] = dict(NO_RETRY)
    config: dict[str, Any] = {"id": "openai/gpt-test", "route": config_route(route)}
    if source == "env":
        monkeypatch.setenv("OPENAI_API_KEY", key)
    elif source == "model-config":
        monkeypatch.delenv("OPENAI_API_KEY")
        config["api_key"] = key
    elif source == "model-settings":
        settings["api_key"] = key
    elif source == "config-headers":
        config["headers"] = {"X-Api-Key": key}
    else:
        settings["extra_headers"] = {"Authorization": f"Bearer {key}"}
    model = resolve_model(ModelConfig(**config))
    with pytest.raises(ModelCallError) as info:
        await collect(model, ModelRequest([user("hi")], settings=settings))

    sent = openai_server.request_headers[0]
    assert key in (sent.get("authorization", "") + sent.get("x-api-key", "")), "the key was sent"
    assert info.value.status_code == 401
    assert key not in str(info.value)
    assert "invalid credentials" in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize("stranger", [
    "sk-proj-Xq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1",  # OpenAI
    "sk-ant-api03-Xq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1",  # Anthropic
    "AIzaSyXq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1Fb5",  # Google
    "gsk_Xq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1",  # Groq
])
async def test_a_key_the_call_never_held_is_masked_by_its_shape(
    openai_server: FakeOpenAIServer, stranger: str, route: str
) -> None:
    # A proxy or provider that names some other key (another org's, an upstream one): the call
    # cannot know it, only its well-known shape gives it away.
    openai_server.script({"error": 401, "message": f"upstream rejected {stranger} for this org"})
    with pytest.raises(ModelCallError) as info:
        await collect(model_for(route, "openai/gpt-test"), no_retry_request())
    assert stranger not in str(info.value)
    assert "upstream rejected *** for this org" in str(info.value)


async def test_connection_refused_is_a_model_call_error_without_status(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    dead = FakeOpenAIServer().start()
    url = dead.base_url
    dead.stop()
    model = model_for(route, "openai/gpt-test", api_base=url)
    with pytest.raises(ModelCallError) as info:
        await collect(model, ModelRequest([user("hi")], settings=NO_RETRY))
    assert info.value.status_code is None


async def test_missing_openai_key_is_named_before_any_request(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    model = model_for(route, "openai/gpt-test")
    with pytest.raises(MissingCredentialError) as info:
        model.check_ready()
    assert info.value.variables == ["OPENAI_API_KEY"]
    assert "OPENAI_API_KEY" in str(info.value)
    with pytest.raises(MissingCredentialError):
        await collect(model, ModelRequest([user("hi")]))
    assert openai_server.requests == []


async def test_an_explicit_api_key_needs_no_env_and_is_sent(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    model = model_for(route, "openai/gpt-test", api_key="sk-from-config",
                      headers={"X-Team": "blue"})
    await model.ensure_ready()
    events = await collect(model, ModelRequest([user("hi")]))
    assert text_of(events) == "ok"
    headers = openai_server.request_headers[0]
    assert headers["authorization"] == "Bearer sk-from-config"
    assert headers["x-team"] == "blue"


async def test_other_providers_are_checked_through_litellm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(MissingCredentialError) as info:
        await LiteLLMModel("groq/llama-3.1-8b-instant").ensure_ready()
    assert info.value.variables == ["GROQ_API_KEY"]
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    await LiteLLMModel("groq/llama-3.1-8b-instant").ensure_ready()


async def test_unknown_provider_is_a_clear_error() -> None:
    model = LiteLLMModel("nosuchprovider/some-model")
    with pytest.raises(UnknownProviderError) as info:
        await model.ensure_ready()
    assert "nosuchprovider" in str(info.value)
    assert "provider/model" in str(info.value)


async def test_google_maps_to_gemini_with_either_key(monkeypatch: pytest.MonkeyPatch) -> None:
    model = LiteLLMModel("google/gemini-2.0-flash")
    assert model.provider == "gemini"
    with pytest.raises(MissingCredentialError) as info:
        model.check_ready()
    assert info.value.variables == ["GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"]
    monkeypatch.setenv("GOOGLE_GENERATIVE_AI_API_KEY", "AIza-test-key")
    model.check_ready()


async def test_openai_api_base_env_is_honoured(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_BASE", openai_server.base_url)
    events = await collect(model_for(route, "openai/gpt-test"), ModelRequest([user("hi")]))
    assert text_of(events) == "ok"
    assert len(openai_server.requests) == 1


async def test_system_message_provider_options_follow_the_provider(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    messages = [
        {"role": "system", "content": "Rule one.",
         "provider_options": {"anthropic": {"cache_control": {"type": "ephemeral"}}}},
        {"role": "system", "content": "Rule two.", "provider_options": {"openai": {"name": "ops"}}},
        {"role": "system", "content": "Rule three."},
        user("hi"),
    ]
    request = ModelRequest(messages, provider_options={"openai": {"seed": 42},
                                                       "anthropic": {"top_k": 3}})
    await collect(model_for(route, "openai/gpt-test"), request)

    body = openai_server.requests[0]
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", "Rule one."), ("system", "Rule two."), ("system", "Rule three."),
        ("user", "hi"),
    ]
    assert body["messages"][0] == {"role": "system", "content": "Rule one."}
    assert body["messages"][1] == {"role": "system", "content": "Rule two.", "name": "ops"}
    assert body["seed"] == 42
    assert "top_k" not in body
    assert "provider_options" in messages[0], "the caller's messages are not mutated"


async def test_anthropic_cache_control_reaches_the_wire(openai_server: FakeOpenAIServer) -> None:
    # The fake server only records Anthropic's /v1/messages call (and answers 404).
    model = LiteLLMModel("anthropic/claude-3-5-haiku-latest", api_key="sk-ant-test-123456789",
                         api_base=f"http://127.0.0.1:{openai_server.port}")
    messages = [
        {"role": "system", "content": "Long stable prompt.",
         "provider_options": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}},
        {"role": "system", "content": "Flat form.",
         "provider_options": {"cache_control": {"type": "ephemeral"}}},
        {"role": "system", "content": "Not cached."},
        user("hi"),
    ]
    with pytest.raises(ModelCallError):
        await collect(model, ModelRequest(messages, settings=NO_RETRY))
    sent = openai_server.other_requests[0]
    assert sent["path"] == "/v1/messages"
    assert sent["body"]["system"] == [
        {"type": "text", "text": "Long stable prompt.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Flat form.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Not cached."},
    ]


async def test_abort_closes_a_stalled_stream(openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"text": "first then much more text", "hold": True})
    abort = asyncio.Event()
    events: list[ModelEvent] = []
    try:
        async for event in model_for(route, "openai/gpt-test").stream(
            ModelRequest([user("hi")], abort=abort)
        ):
            events.append(event)
            # Set it only once the generator waits on the stalled server.
            asyncio.get_running_loop().call_soon(abort.set)
    finally:
        openai_server.release()
    assert events == [TextDelta("firs")]


async def test_abort_before_the_provider_answers(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"text": "never sent", "hold": "start"})
    abort = asyncio.Event()
    model = model_for(route, "openai/gpt-test")

    async def consume() -> list[ModelEvent]:
        return [e async for e in model.stream(ModelRequest([user("hi")], abort=abort))]

    task = asyncio.ensure_future(consume())
    try:
        async def request_arrived() -> None:
            while not openai_server.requests:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(request_arrived(), timeout=10)
        abort.set()  # the provider has the request but has not answered
        events = await asyncio.wait_for(task, timeout=10)
    finally:
        openai_server.release()
    assert events == []


async def test_fallback_moves_on_when_the_first_model_fails(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"error": 500, "message": "primary down"}, "from the backup")
    model = resolve_model([
        ModelConfig(id="openai/primary", settings=NO_RETRY, route=config_route(route)),
        {"id": "openai/backup", "route": config_route(route)},
    ])
    assert isinstance(model, FallbackModel)
    events = await collect(model, ModelRequest([user("hi")]))
    assert text_of(events) == "from the backup"
    assert [r["model"] for r in openai_server.requests] == ["primary", "backup"]
    assert model.last_model_id == "openai/backup"


async def test_fallback_skips_a_model_without_credentials(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    model = resolve_model(specs_on(route, "anthropic/claude-3-5-haiku-latest", "openai/backup"))
    model.check_ready()  # one ready model is enough
    events = await collect(model, ModelRequest([user("hi")]))
    assert text_of(events) == "ok"
    assert [r["model"] for r in openai_server.requests] == ["backup"]


async def test_fallback_reports_every_failure_when_all_fail(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"error": 503, "message": "one down"}, {"error": 429, "message": "two"})
    model = resolve_model(specs_on(route, {"id": "openai/one", "settings": NO_RETRY},
                                   {"id": "openai/two", "settings": NO_RETRY}))
    with pytest.raises(ModelCallError) as info:
        await collect(model, ModelRequest([user("hi")]))
    assert info.value.status_code == 429
    assert "openai/one" in str(info.value) and "one down" in str(info.value)
    assert "openai/two" in str(info.value) and "two" in str(info.value)


async def test_a_stream_cut_midway_is_a_model_call_error(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"text": "partial answer", "cut": True})
    events: list[ModelEvent] = []
    with pytest.raises(ModelCallError):
        async for event in model_for(route, "openai/gpt-test").stream(ModelRequest([user("hi")])):
            events.append(event)
    assert events == [TextDelta("part")]


async def test_fallback_does_not_switch_models_after_events_flowed(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    openai_server.script({"text": "partial answer", "cut": True}, "backup answer")
    model = resolve_model(specs_on(route, "openai/one", "openai/two"))
    events: list[ModelEvent] = []
    with pytest.raises(ModelCallError):
        async for event in model.stream(ModelRequest([user("hi")])):
            events.append(event)
    assert text_of(events) == "part"
    assert [r["model"] for r in openai_server.requests] == ["one"]
