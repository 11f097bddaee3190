"""Construction-time model checks and resolution (no network, no litellm import needed)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tui_agent.errors import ConfigError, MissingCredentialError, ModelCallError
from tui_agent.models import litellm_model
from tui_agent.models.base import ModelEvent, ModelRequest, StepEnd, TextDelta
from tui_agent.models.litellm_model import LiteLLMModel
from tui_agent.models.openai_http import OpenAIHTTPModel
from tui_agent.models.resolve import (
    FallbackModel,
    ModelCache,
    ModelConfig,
    resolve_model,
    validate_model_spec,
)
from tui_agent.models.routed import RoutedModel


class Fake:
    """A minimal LanguageModel: fails before its first event, or answers ``text``."""

    def __init__(self, name: str, *, text: str = "", error: Exception | None = None) -> None:
        self.model_id = name
        self.text = text
        self.error = error
        self.calls = 0

    def check_ready(self) -> None:
        pass

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        yield TextDelta(self.text)
        yield StepEnd("stop")


@pytest.mark.parametrize("spec", [None, "", [], 42, b"openai/gpt-4o"])
def test_no_usable_model_is_a_config_error(spec: Any) -> None:
    with pytest.raises(ConfigError, match="Agent needs a model"):
        validate_model_spec(spec)


@pytest.mark.parametrize("spec", ["gpt-4o", "openai/", "/gpt-4o", ["openai/gpt-4o", "gpt-4o"],
                                  {"id": "gpt-4o"}])
def test_a_model_name_without_provider_explains_router_strings(spec: Any) -> None:
    with pytest.raises(ConfigError, match="provider/model"):
        validate_model_spec(spec)


def test_bad_config_dict_names_the_field() -> None:
    with pytest.raises(ConfigError, match="api_kee"):
        validate_model_spec({"id": "openai/gpt-4o", "api_kee": "sk-x"})


@pytest.mark.parametrize("spec", [
    "openai/gpt-4o-mini", "local/smollm2", ["openai/a", "anthropic/b"],
    {"id": "openai/gpt-4o", "api_key": "sk-x"}, ModelConfig(id="groq/llama"),
    lambda ctx: "openai/gpt-4o", Fake("fake/x"),
])
def test_valid_specs_pass_without_importing_litellm(
    spec: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # litellm made unimportable, and the adapter's copy (loaded by earlier tests) dropped:
    monkeypatch.setitem(sys.modules, "litellm", None)
    monkeypatch.setattr(litellm_model, "_litellm", None)
    with pytest.raises(ImportError):
        litellm_model.load_litellm()  # what any use of litellm would now run into
    validate_model_spec(spec)  # and yet the spec is checked and accepted
    assert not litellm_model.litellm_loaded()


def test_model_config_never_shows_its_key() -> None:
    config = ModelConfig(id="openai/gpt-4o", api_key="sk-very-secret-123")
    assert "sk-very-secret-123" not in repr(config)
    assert "sk-very-secret-123" not in str(config)
    model = resolve_model(config)
    assert "sk-very-secret-123" not in repr(model)


def test_resolve_picks_the_path_by_provider() -> None:
    model = resolve_model("openai/gpt-4o-mini")
    assert isinstance(model, OpenAIHTTPModel) and model.model_id == "openai/gpt-4o-mini"
    configured = resolve_model({"id": "anthropic/claude", "api_key": "sk-ant-x"})
    assert isinstance(configured, LiteLLMModel)
    configured.check_ready()  # the config's key stands in for ANTHROPIC_API_KEY
    assert isinstance(resolve_model("google/gemini-2.0-flash"), LiteLLMModel)
    routed = resolve_model("groq/llama-3.1-8b-instant")  # litellm decides at the first call
    assert isinstance(routed, RoutedModel) and routed.route == "undecided"


@pytest.mark.parametrize("spec", ["openai/gpt-4o", "groq/llama-3.1-8b-instant"])
def test_route_litellm_forces_the_litellm_path(spec: str) -> None:
    assert isinstance(resolve_model({"id": spec, "route": "litellm"}), LiteLLMModel)
    assert isinstance(resolve_model(ModelConfig(id=spec, route="litellm")), LiteLLMModel)


def test_an_unknown_route_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="route"):
        validate_model_spec({"id": "openai/gpt-4o", "route": "fast"})


def test_resolve_passes_model_objects_through() -> None:
    fake = Fake("fake/x")
    assert resolve_model(fake) is fake


def test_resolve_rejects_an_uncalled_callable() -> None:
    with pytest.raises(ConfigError, match="request context"):
        resolve_model(lambda ctx: "openai/gpt-4o")


def test_local_model_without_its_module_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tui_agent.models.local", None)  # import fails
    with pytest.raises(ConfigError, match="local/smollm2"):
        resolve_model("local/smollm2")


def test_resolve_list_is_a_fallback_model() -> None:
    model = resolve_model(["openai/a", Fake("fake/b")])
    assert isinstance(model, FallbackModel)
    assert [m.model_id for m in model.models] == ["openai/a", "fake/b"]


def test_fallback_ready_if_any_model_is() -> None:
    model = FallbackModel([LiteLLMModel("openai/a"), Fake("fake/b")])
    model.check_ready()
    lonely = FallbackModel([LiteLLMModel("openai/a"), LiteLLMModel("anthropic/b")])
    with pytest.raises(MissingCredentialError) as info:
        lonely.check_ready()
    assert "OPENAI_API_KEY" in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)


async def test_fallback_falls_through_errors_before_the_first_event() -> None:
    first = Fake("fake/a", error=ModelCallError("down", status_code=503))
    second = Fake("fake/b", error=ConnectionRefusedError("refused"))
    third = Fake("fake/c", text="hello")
    model = FallbackModel([first, second, third])
    events = [e async for e in model.stream(ModelRequest([]))]
    assert events == [TextDelta("hello"), StepEnd("stop")]
    assert (first.calls, second.calls, third.calls) == (1, 1, 1)
    assert model.model_id == "fake/c"


async def test_fallback_does_not_hide_programming_errors() -> None:
    model = FallbackModel([Fake("fake/a", error=TypeError("bug")), Fake("fake/b", text="x")])
    with pytest.raises(TypeError):
        _ = [e async for e in model.stream(ModelRequest([]))]


# -- built once per spec (ModelCache: what an agent resolves each run) --------------------------


def test_an_agents_model_is_built_once_per_spec_and_anew_when_its_config_changes() -> None:
    cache = ModelCache()
    named = cache.resolve("openai/gpt-4o-mini")
    assert cache.resolve("openai/gpt-4o-mini") is named  # the next run's, and a thread's choice
    assert cache.resolve("openai/gpt-4o") is not named
    config = {"id": "openai/gpt-test", "api_base": "http://127.0.0.1:9/v1", "api_key": "sk-a",
              "headers": {"X-Team": "a"}}
    built = cache.resolve(config)
    assert isinstance(built, OpenAIHTTPModel) and cache.resolve(dict(config)) is built
    config["headers"]["X-Team"] = "b"  # changed in place since: a new model, with the new value
    rebuilt = cache.resolve(config)
    assert rebuilt is not built and cache.resolve(config) is rebuilt
    typed = ModelConfig(id="openai/gpt-test", api_key="sk-a")
    assert cache.resolve(typed) is cache.resolve(ModelConfig(id="openai/gpt-test", api_key="sk-a"))


def test_a_fallback_list_and_a_model_object_are_not_kept() -> None:
    cache = ModelCache()
    fake = Fake("a", text="hi")
    assert cache.resolve(fake) is fake
    spec = ["openai/gpt-4o-mini", "openai/gpt-4o"]
    first = cache.resolve(spec)
    assert isinstance(first, FallbackModel) and cache.resolve(spec) is not first  # per run
