"""The litellm adapter: any ``provider/model`` router string that litellm knows.

Rules this adapter follows (also in docs/choices.md):

- ``google/<model>`` goes to litellm's ``gemini/<model>``. The key is taken from ``api_key``, else
  ``GOOGLE_API_KEY``, ``GOOGLE_GENERATIVE_AI_API_KEY`` or ``GEMINI_API_KEY`` (first set wins) and
  passed to litellm explicitly as ``api_key``, because litellm itself does not read
  ``GOOGLE_GENERATIVE_AI_API_KEY``.
- Message ``provider_options`` are ``{provider: {field: value}}``; only the entry of this model's
  provider is used: its message-level fields are set on the message (``cacheControl`` →
  ``cache_control``, which is how litellm takes Anthropic's ``cache_control``), its request-level
  ones (``reasoning_effort``) go to the request (``request_options``). A flat dict with no
  provider key (``{"cache_control": ...}``) counts as Anthropic's. Every other entry, and the
  ``provider_options`` key itself, is dropped so strict providers (OpenAI) do not reject it.
- ``request.provider_options`` follow the same ``{provider: {kwarg: value}}`` rule: the entry of
  this model's provider is passed to ``litellm.acompletion`` as extra keyword arguments (e.g.
  ``{"openai": {"reasoning_effort": "low"}}``). Precedence: ``extra`` < ``request.settings`` <
  ``request.provider_options``.
- Providers whose credentials usually come from the machine (AWS, Google Cloud, Ollama) are
  not checked for keys up front; litellm reports what is missing at the first call.
- Timeouts as on the direct path (``openai_http.Timeouts``, the same defaults and the same
  ``model_settings={"timeout": s | {"connect", "first_byte", "between_chunks"}}``): no answer
  within ``first_byte`` seconds (connecting included), or no chunk for ``between_chunks``,
  fails the step with "provider timed out after N s" (tests/test_model_timeouts.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

from tui_agent.errors import (
    MissingCredentialError,
    ModelCallError,
    TuiAgentError,
    UnknownProviderError,
)
from tui_agent.models.base import ModelEvent, ModelRequest, StepEnd, TextDelta, ToolCallDelta, Usage
from tui_agent.models.openai_http import DEFAULT_TIMEOUTS, Timeouts
from tui_agent.models.redaction import CREDENTIAL_WORDS, call_secrets, redact
from tui_agent.models.request_options import (
    lifted_options,
    option_keys,
    pick_options,
    shaped_message,
)

ROUTER_HELP = (
    "write the model as 'provider/model', e.g. 'openai/gpt-4o-mini', "
    "'anthropic/claude-3-5-haiku-latest', 'google/gemini-2.0-flash', 'groq/llama-3.1-8b-instant' "
    "or 'local/smollm2' (any provider litellm knows: https://docs.litellm.ai/docs/providers)"
)

# Router prefix → litellm provider, where they differ.
_PROVIDER_ALIASES = {"google": "gemini"}
# Credentials named by the API contract, checked without importing litellm.
_KNOWN_KEYS = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"),
}
_GOOGLE_KEYS = ("GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY")
# Providers that authenticate from the machine (profiles, ADC) or need no key at all.
_AMBIENT_AUTH = {"bedrock", "sagemaker", "vertex_ai", "vertex_ai_beta", "ollama", "ollama_chat"}
# Providers whose litellm stream records the finish reason actually received (checked), so a
# stream cut mid-answer can be told from a finished one.
_REPORTS_FINISH = {"openai", "azure"}
_FINISH = {"length": "length", "max_tokens": "length", "tool_calls": "tool-calls",
           "function_call": "tool-calls"}
_PROVIDER_MODULES = {"litellm", "openai", "httpx", "httpcore", "aiohttp", "anthropic"}

_litellm: ModuleType | None = None
_import_lock = threading.Lock()


def load_litellm() -> ModuleType:
    """Import and configure litellm once (seconds; call it off the event loop the first time)."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is None:
            # The bundled cost map: no network fetch when litellm is imported.
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            import litellm

            litellm.suppress_debug_info = True  # no "Provider List: ..." prints on errors
            litellm.turn_off_message_logging = True  # callbacks never see message contents
            litellm.disable_streaming_logging = True  # no per-chunk logging thread (sync path)
            litellm.telemetry = False
            # httpx, not litellm's aiohttp transport: when a provider's connection drops with
            # the last bytes and the close arriving together, the aiohttp transport drops the
            # text already received and ends the stream as if it had finished; httpx hands the
            # text on, then raises (tests/test_agent_litellm.py, the connection-drop test).
            litellm.disable_aiohttp_transport = True
            _litellm = litellm
    return _litellm


_clients_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None


def _clients_for_this_loop() -> None:
    """litellm caches its HTTP clients by ``id()`` of the event loop (and keeps one module-level
    client for all loops); a new loop can get the id of a closed one, and an httpx client used
    in a closed loop fails ("Event loop is closed"). In a new loop, start with no cached
    clients (a program runs one loop: this happens once)."""
    global _clients_loop
    loop = asyncio.get_running_loop()
    if _clients_loop is not None and _clients_loop() is loop:
        return
    if _clients_loop is not None and _litellm is not None:
        cache = getattr(_litellm, "in_memory_llm_clients_cache", None)
        if cache is not None:
            cache.flush_cache()
        # and its one module-level client (some providers' path): made again on next use
        vars(_litellm).pop("module_level_aclient", None)
    _clients_loop = weakref.ref(loop)


def litellm_loaded() -> bool:
    return _litellm is not None


class LiteLLMModel:
    """A :class:`~tui_agent.models.base.LanguageModel` over ``litellm.acompletion``."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
    ) -> None:
        self._model_id = model
        self._timeouts = timeouts
        self._api_key = api_key
        self._api_base = api_base
        self._headers = dict(headers) if headers else None
        self._extra = dict(extra) if extra else {}
        prefix, _, name = model.partition("/")
        self._prefix = prefix
        self._provider = _PROVIDER_ALIASES.get(prefix, prefix)
        self._litellm_model = f"{self._provider}/{name}" if name else model
        self._option_keys = option_keys(prefix, self._provider, name)
        self._ready = False
        self._supports_usage_option: bool | None = None  # known after litellm is loaded

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def provider(self) -> str:
        """The provider as litellm names it (``google`` → ``gemini``)."""
        return self._provider

    def __repr__(self) -> str:
        return f"LiteLLMModel({self._model_id!r})"  # never the key

    # -- readiness ---------------------------------------------------------------------------
    async def ensure_ready(self) -> None:
        """Import litellm off the event loop (first time only), then :meth:`check_ready`."""
        if _litellm is None:
            await asyncio.to_thread(load_litellm)
        self.check_ready()

    def check_ready(self) -> None:
        """Raise UnknownProviderError / MissingCredentialError before any network call."""
        if self._ready:
            return
        if "/" not in self._model_id or not self._prefix or self._model_id.endswith("/"):
            raise UnknownProviderError(f"model {self._model_id!r} is not a router string: "
                                       f"{ROUTER_HELP}")
        if self._prefix in _KNOWN_KEYS:
            self._check_known_keys()
        else:
            self._check_with_litellm()
        self._ready = True

    def _check_known_keys(self) -> None:
        if self._api_key:
            return
        names = _GOOGLE_KEYS if self._prefix == "google" else _KNOWN_KEYS[self._prefix]
        if not any(os.environ.get(n) for n in names):
            raise MissingCredentialError(self._prefix, list(_KNOWN_KEYS[self._prefix]),
                                         self._model_id)

    def _check_with_litellm(self) -> None:
        litellm = load_litellm()
        if self._provider not in litellm.provider_list:
            raise UnknownProviderError(
                f"model {self._model_id!r}: unknown provider {self._prefix!r}; {ROUTER_HELP}"
            )
        if self._api_key or self._provider in _AMBIENT_AUTH:
            return
        try:
            missing = litellm.validate_environment(self._litellm_model)["missing_keys"]
        except Exception:  # litellm could not tell; the call will report it
            return
        credentials = [k for k in missing if any(w in k for w in CREDENTIAL_WORDS)]
        if credentials:
            raise MissingCredentialError(self._prefix, credentials, self._model_id)

    # -- streaming ---------------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one model step: text and tool-call deltas, then one StepEnd.

        If ``request.abort`` is set, the HTTP stream is closed and the generator ends without a
        StepEnd. Provider failures raise ModelCallError (the key is never in the message)."""
        if _litellm is None:
            await asyncio.to_thread(load_litellm)
        self.check_ready()
        abort = request.abort
        if abort is not None and abort.is_set():
            return
        _clients_for_this_loop()
        if self._supports_usage_option is None:
            self._supports_usage_option = _supports_stream_options(self._litellm_model)
        kwargs = self._call_kwargs(request)
        timeouts = self._timeouts.updated(request.settings.get("timeout"))
        if isinstance(kwargs.get("timeout"), dict):
            del kwargs["timeout"]  # ours alone: litellm takes only seconds
        try:
            response = await _open_stream(kwargs, abort, timeouts.first_byte)
        except _ProviderSilent as silent:
            raise self._timed_out(silent.seconds, "no answer: first-byte timeout") from None
        except Exception as exc:
            raise self._call_error(exc, kwargs) from exc
        if response is None:
            return  # aborted before the provider answered
        watcher = _close_on_abort(abort, response) if abort is not None else None
        step = _Step()
        said = 0  # characters of text streamed: a drop after some is a drop mid-answer
        chunks = response.__aiter__()
        limit, which = timeouts.first_byte, "no answer: first-byte timeout"
        try:
            while True:
                try:
                    async with asyncio.timeout(limit):  # around the read only, never a yield
                        chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    if abort is not None and abort.is_set():
                        return
                    raise self._timed_out(limit, which) from None
                limit, which = timeouts.between_chunks, "no chunk: between-chunks timeout"
                if abort is not None and abort.is_set():
                    return
                for event in step.events(chunk):
                    if type(event) is TextDelta:
                        said += len(event.text)
                    yield event
            if self._provider in _REPORTS_FINISH and _finish_was_synthesized(response):
                raise self._dropped(said, "the stream ended before the provider finished")
        except Exception as exc:
            if abort is not None and abort.is_set():
                return  # the stream was closed under us on purpose
            if said and not isinstance(exc, TuiAgentError) and _connection_lost(exc):
                # mid-answer: what was said stays said, and the error says so
                raise self._dropped(said, _root_cause(exc, call_secrets(kwargs))) from exc
            raise self._call_error(exc, kwargs) from exc
        finally:
            if watcher is not None:
                watcher.cancel()
            with contextlib.suppress(Exception):
                await response.aclose()
        yield step.end()

    def _call_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        lifted = lifted_options(request.messages, self._option_keys)
        kwargs: dict[str, Any] = {**self._extra, **lifted, **request.settings}
        own = pick_options(request.provider_options, self._option_keys, flat_owner=None)
        if own:
            kwargs.update(own)
        kwargs["model"] = self._litellm_model
        kwargs["messages"] = [shaped_message(m, self._option_keys) for m in request.messages]
        kwargs["stream"] = True
        if self._supports_usage_option:
            kwargs["stream_options"] = {"include_usage": True}
        if request.tools:
            kwargs["tools"] = request.tools
            if request.tool_choice is not None:
                kwargs["tool_choice"] = request.tool_choice
        api_key = self._resolved_api_key()
        if api_key:
            kwargs["api_key"] = api_key
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if self._headers:
            kwargs["extra_headers"] = {**kwargs.get("extra_headers", {}), **self._headers}
        return kwargs

    def _resolved_api_key(self) -> str | None:
        if self._api_key:
            return self._api_key
        if self._prefix == "google":
            return next((os.environ[n] for n in _GOOGLE_KEYS if os.environ.get(n)), None)
        return None

    # -- errors ------------------------------------------------------------------------------
    def _timed_out(self, seconds: float, which: str) -> ModelCallError:
        return ModelCallError(
            f"model {self._model_id!r} failed (Timeout, no response): provider timed out after "
            f"{seconds:g} s ({which})",
            model=self._model_id,
        )

    def _dropped(self, said: int, failure: str) -> ModelCallError:
        """The provider's connection dropped after ``said`` characters of the answer: the
        run keeps them (streamed, and stored as the failed answer); this names the provider
        and what failed."""
        return ModelCallError(
            f"model {self._model_id!r} (provider {self._provider}): the connection dropped "
            f"mid-answer, after {said} characters ({failure}); the partial answer is kept",
            model=self._model_id,
        )

    def _call_error(self, exc: Exception, kwargs: dict[str, Any]) -> Exception:
        if isinstance(exc, TuiAgentError) or not _is_provider_error(exc):
            return exc
        status = _status_of(exc)
        kind = type(exc).__name__
        detail = redact(_provider_message(exc), call_secrets(kwargs))
        where = f"HTTP {status}" if status is not None else "no response"
        return ModelCallError(f"model {self._model_id!r} failed ({kind}, {where}): {detail}",
                              status_code=status, model=self._model_id)


_NO_EVENTS: tuple[ModelEvent, ...] = ()


class _Step:
    """Turns litellm chunks into our events (sync, a few attribute reads per chunk)."""

    __slots__ = ("finish", "saw_tool_call", "usage")

    def __init__(self) -> None:
        self.finish: str | None = None
        self.usage: Usage | None = None
        self.saw_tool_call = False

    def events(self, chunk: Any) -> tuple[ModelEvent, ...] | list[ModelEvent]:
        raw_usage = _attr(chunk, "usage")
        if raw_usage is not None:
            self.usage = Usage(_attr(raw_usage, "prompt_tokens") or 0,
                               _attr(raw_usage, "completion_tokens") or 0)
        choices = _attr(chunk, "choices")
        if not choices:
            return _NO_EVENTS
        choice = choices[0]
        finish = _attr(choice, "finish_reason")
        if finish:
            self.finish = finish
        delta = _attr(choice, "delta")
        if delta is None:
            return _NO_EVENTS
        content = _attr(delta, "content")
        calls = _attr(delta, "tool_calls")
        if not calls:
            return (TextDelta(content),) if content else _NO_EVENTS
        self.saw_tool_call = True
        events: list[ModelEvent] = [TextDelta(content)] if content else []
        events.extend(_tool_call_delta(call) for call in calls)
        return events

    def end(self) -> StepEnd:
        reason = "tool-calls" if self.saw_tool_call else _FINISH.get(self.finish or "", "stop")
        return StepEnd(reason, self.usage)


def _tool_call_delta(call: Any) -> ToolCallDelta:
    fn = _attr(call, "function")
    name = _attr(fn, "name") if fn is not None else None
    arguments = (_attr(fn, "arguments") or "") if fn is not None else ""
    return ToolCallDelta(_attr(call, "index") or 0, _attr(call, "id"), name, arguments)


def _attr(obj: Any, name: str) -> Any:
    """Read a field of a litellm chunk object fast. litellm keeps most chunk fields in pydantic's
    ``__pydantic_extra__``, where a plain getattr costs ~1-2 µs through ``__getattr__``."""
    extra = getattr(obj, "__pydantic_extra__", None)
    if extra and name in extra:
        return extra[name]
    fields = getattr(obj, "__dict__", None)
    if fields is not None and name in fields:
        return fields[name]
    if extra is not None:  # a pydantic model that does not have this field: absent
        return None
    return getattr(obj, name, None)


def _finish_was_synthesized(response: Any) -> bool:
    """litellm fills in finish_reason "stop" when a stream just stops; its wrapper keeps what the
    provider really sent, which tells a cut connection from a finished answer."""
    received = getattr(response, "received_finish_reason", "unknown")
    intermittent = getattr(response, "intermittent_finish_reason", "unknown")
    return received is None and intermittent is None


def _supports_stream_options(model: str) -> bool:
    """Whether litellm accepts ``stream_options`` for this provider (it rejects it for some)."""
    litellm = load_litellm()
    provider, _, name = model.partition("/")
    try:
        params = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    except Exception:
        return False
    return "stream_options" in (params or [])


class _ProviderSilent(Exception):
    """The provider did not answer within ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"no answer within {seconds:g} s")


async def _open_stream(kwargs: dict[str, Any], abort: asyncio.Event | None, limit: float) -> Any:
    """``litellm.acompletion``; None if ``abort`` is set before the provider answers (the time
    to the first byte can be seconds, and an abort must not wait for it); ``_ProviderSilent``
    if it has not answered after ``limit`` seconds (the call is cancelled)."""
    call = _litellm.acompletion(**kwargs)  # type: ignore[union-attr]
    if abort is None:  # in this task: the stream it opens is read from this task
        timer = asyncio.timeout(limit)
        try:
            async with timer:
                return await call
        except TimeoutError:
            if timer.expired():
                raise _ProviderSilent(limit) from None
            raise
    opening = asyncio.ensure_future(call)
    waits: list[asyncio.Future[Any]] = [opening]
    if abort is not None:
        waits.append(asyncio.ensure_future(abort.wait()))
    try:
        await asyncio.wait(waits, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # our caller was cancelled: so is the call
        opening.cancel()
        raise
    finally:
        for waiting in waits[1:]:
            waiting.cancel()
    if not opening.done():
        opening.cancel()
        with contextlib.suppress(BaseException):
            await opening
        if abort is not None and abort.is_set():
            return None
        raise _ProviderSilent(limit)
    return opening.result()


def _close_on_abort(abort: asyncio.Event, response: Any) -> asyncio.Task[None]:
    async def watch() -> None:
        await abort.wait()
        with contextlib.suppress(Exception):
            await response.aclose()

    return asyncio.ensure_future(watch())


def _is_provider_error(exc: BaseException) -> bool:
    if isinstance(exc, (OSError, TimeoutError)):
        return True
    return type(exc).__module__.split(".")[0] in _PROVIDER_MODULES


_NO_ANSWER = {"APIConnectionError", "APITimeoutError", "Timeout", "ConnectError", "ConnectTimeout",
              "ReadTimeout", "ClientConnectorError", "ServerDisconnectedError",
              "RemoteProtocolError", "ClientPayloadError", "ReadError"}


def _status_of(exc: BaseException) -> int | None:
    """The HTTP status the provider answered with; None when there was no (complete) answer,
    although litellm reports connection failures as 500."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, OSError) or type(seen).__name__ in _NO_ANSWER:
            return None
        seen = seen.__cause__ or seen.__context__
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is the connection failing, not the provider
    answering with an error."""
    return any(isinstance(seen, OSError) or type(seen).__name__ in _NO_ANSWER
               for seen in _chain(exc))


def _root_cause(exc: BaseException, secrets: Any) -> str:
    """The innermost error of the chain, as ``Type: message`` (the transport's own words:
    ``RemoteProtocolError: peer closed connection ...``), secrets redacted."""
    root = list(_chain(exc))[-1]
    return f"{type(root).__name__}: {redact(_provider_message(root), secrets)}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it, outermost first (litellm keeps the cause in
    ``original_exception`` as well as ``__cause__``); at most 8 deep."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return
        yield seen
        inner = getattr(seen, "original_exception", None)
        seen = inner if isinstance(inner, BaseException) and inner is not seen else (
            seen.__cause__ or seen.__context__)


def _provider_message(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc) or type(exc).__name__
    return text.strip()[:500]


def openai_compatible_endpoint(
    model: str, api_base: str | None, api_key: str | None
) -> tuple[str, str, str | None] | None:
    """``(wire model, base URL, key)`` if litellm sends this ``provider/model`` to an
    OpenAI-compatible chat-completions endpoint (its ``openai_compatible_providers``) whose base
    URL it knows or was given; else None (litellm carries it itself)."""
    litellm = load_litellm()
    provider = _PROVIDER_ALIASES.get(model.partition("/")[0], model.partition("/")[0])
    if provider not in litellm.openai_compatible_providers:
        return None
    try:
        name, _, key, base = litellm.get_llm_provider(model, api_base=api_base, api_key=api_key)
    except Exception:  # litellm cannot route it: let its own path report why
        return None
    base = api_base or base
    return (name, base, api_key or key) if base else None
