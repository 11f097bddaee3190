"""Issue 12: ``provider_options`` on instructions and signal messages, as the request bodies of
OpenAI, Anthropic and Gemini show them (litellm and the direct path, against the local fake
server). Message-level options the provider takes on a message (Anthropic ``cache_control``,
OpenAI ``name``) stay on the message; request-level ones (OpenAI ``reasoning_effort``) go to the
request; other providers' entries are dropped; nothing else is invented."""

from __future__ import annotations

from typing import Any

import pytest
from openai_server import FakeOpenAIServer

from tui_agent import Agent
from tui_agent.errors import ModelCallError

pytestmark = pytest.mark.integration

NO_RETRY = {"max_retries": 0}
OPTIONS = {
    "openai": {"reasoningEffort": "low"},
    "anthropic": {"cacheControl": {"type": "ephemeral"}},
    "google": {"reasoningEffort": "low"},  # request-level for Gemini too (thinkingConfig)
}
INSTRUCTIONS = [
    {"role": "system", "content": "Stable prompt.", "provider_options": OPTIONS},
    "Plain rule.",
]


def agent(model: Any) -> Agent:
    return Agent(name="wire", instructions=INSTRUCTIONS, model=model)


def keys_anywhere(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_anywhere(v)}
    return set()


@pytest.mark.parametrize("route", ["litellm", "auto"])
async def test_openai_request_level_options_go_to_the_request(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    await agent({"id": "openai/gpt-5-mini", "route": route}).generate("hi")
    (body,) = openai_server.requests
    assert body["reasoning_effort"] == "low"
    assert body["messages"] == [
        {"role": "system", "content": "Stable prompt."},
        {"role": "system", "content": "Plain rule."},
        {"role": "user", "content": "hi"},
    ]
    assert not {"cache_control", "reasoningEffort", "provider_options"} & keys_anywhere(body)


async def test_anthropic_keeps_cache_control_on_the_message_only(
    openai_server: FakeOpenAIServer,
) -> None:
    model = {
        "id": "anthropic/claude-3-5-haiku-latest",
        "api_key": "sk-ant-test-123456789",
        "api_base": f"http://127.0.0.1:{openai_server.port}",
        "settings": NO_RETRY,
    }
    with pytest.raises(ModelCallError):
        await agent(model).generate("hi")
    body = openai_server.other_requests[0]["body"]
    assert body["system"] == [
        {"type": "text", "text": "Stable prompt.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Plain rule."},
    ]
    assert not {"reasoning_effort", "reasoningEffort", "provider_options"} & keys_anywhere(body)


async def test_gemini_gets_its_request_options_and_nothing_of_the_others(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test-key-123456")
    model = {
        "id": "google/gemini-2.5-flash",
        "api_base": f"http://127.0.0.1:{openai_server.port}",
        "settings": NO_RETRY,
    }
    with pytest.raises(ModelCallError):
        await agent(model).generate("hi")
    body = openai_server.other_requests[0]["body"]
    system = [{"text": "Stable prompt."}, {"text": "Plain rule."}]
    assert body["system_instruction"] == {"parts": system}
    assert "thinkingConfig" in body["generationConfig"]  # the google entry went to the request
    assert not {
        "cache_control", "cacheControl", "reasoning_effort", "reasoningEffort", "provider_options",
    } & keys_anywhere(body)


@pytest.mark.parametrize("route", ["litellm", "auto"])
async def test_a_messages_provider_options_are_shaped_the_same_way(
    openai_server: FakeOpenAIServer, route: str
) -> None:
    message = {"role": "user", "content": "hi", "provider_options": OPTIONS}
    plain = Agent(name="wire", instructions="Plain.", model={"id": "openai/gpt-5-mini",
                                                             "route": route})
    await plain.generate([message])
    (body,) = openai_server.requests
    assert body["reasoning_effort"] == "low"
    assert body["messages"][-1] == {"role": "user", "content": "hi"}
