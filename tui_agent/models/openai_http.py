"""The direct path: OpenAI chat-completions over one shared httpx client, SSE parsed here.

For providers that speak the OpenAI protocol this replaces litellm's per-chunk model objects
with ``json.loads`` on each SSE event (a tenth of the CPU per chunk; see
``benchmarks/bench_direct_stream.py``). It gives what the litellm path gives: the same events,
the same request body (settings, ``provider_options``, message options: shared code in
``request_options``), the same ``ModelCallError`` with the HTTP status and the key redacted
(shared code in ``redaction``). The model-suite tests run on both paths
(``tests/test_litellm_model.py``, ``tests/test_agent_litellm.py``, parametrised by ``route``).

What only this path has, each tested in ``tests/test_openai_http.py``:

- timeouts: connect, first byte (until the first SSE event) and between chunks
  (:data:`DEFAULT_TIMEOUTS`; ``model_settings={"timeout": s}`` or a dict of the three);
- retries on connection errors (a stale kept-alive connection too), 429 and 5xx before the
  answer starts, at most ``max_retries``
  (default 2), waiting what ``Retry-After`` says (capped at :data:`MAX_RETRY_WAIT_S`) or an
  exponential backoff;
- an abort closes the HTTP stream at once (the server sees the connection close).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import inspect
import json
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol, TypeVar, cast

from tui_agent.abort import CancelOnAbort, on_abort
from tui_agent.errors import ConfigError, MissingCredentialError, ModelCallError, TuiAgentError
from tui_agent.models.base import ModelEvent, ModelRequest, StepEnd, TextDelta, ToolCallDelta, Usage
from tui_agent.models.http_client import send_streaming, stream_closed, stream_opened
from tui_agent.models.redaction import call_secrets, header_secrets, redact
from tui_agent.models.request_options import (
    lifted_options,
    option_keys,
    pick_options,
    shaped_message,
)


class _Closable(Protocol):
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=_Closable)  # what a call opens: an abort closes it if it came anyway

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_RETRIES = 2  # as the OpenAI SDK (and so litellm's OpenAI path)
MAX_RETRY_WAIT_S = 30.0  # a Retry-After beyond this is cut to it
_BACKOFF_S = (0.5, 8.0)  # first wait, longest wait without Retry-After
_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
# Call options litellm takes that are not request-body fields: this path handles them itself.
_CALL_OPTIONS = frozenset({"max_retries", "num_retries", "timeout", "stream_timeout", "api_key",
                           "api_base", "base_url", "extra_headers", "headers", "extra_body"})
_LITELLM_ONLY = frozenset({"drop_params", "mock_response", "caching", "litellm_logging_obj"})
_FINISH = {"length": "length", "max_tokens": "length", "tool_calls": "tool-calls",
           "function_call": "tool-calls"}
# Error kinds named as litellm names them, so messages read the same on both paths.
_STATUS_KINDS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                 404: "NotFoundError", 408: "Timeout", 422: "UnprocessableEntityError",
                 429: "RateLimitError", 503: "ServiceUnavailableError"}


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds to wait: for the connection, for the first SSE event after the request was sent
    (a long prompt can take a while), and for each later chunk (a stalled stream)."""

    connect: float = 10.0
    first_byte: float = 120.0
    between_chunks: float = 60.0

    def updated(self, value: Any) -> Timeouts:
        """These timeouts with a ``timeout`` setting applied: a number sets the first-byte and
        between-chunks waits (and caps connect), a dict sets the named ones."""
        if value is None:
            return self
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            seconds = float(value)
            return Timeouts(min(self.connect, seconds), seconds, seconds)
        if isinstance(value, dict) and set(value) <= {f.name for f in fields(self)}:
            return replace(self, **{k: float(v) for k, v in value.items()})
        raise ConfigError(f"timeout must be seconds > 0 or a dict of connect, first_byte, "
                          f"between_chunks; got {value!r}")


DEFAULT_TIMEOUTS = Timeouts()


@dataclass(slots=True)
class _Call:
    """One request, ready to send; :meth:`secrets` are what an error message must not show."""

    url: str
    body: bytes
    headers: dict[str, str]
    timeouts: Timeouts
    max_retries: int
    #: The call's options and key, from which :meth:`secrets` are found (only for an error:
    #: finding them reads the whole environment).
    credentials: dict[str, Any] = field(default_factory=dict[str, Any])

    def secrets(self) -> list[str]:
        found = call_secrets(self.credentials)
        return sorted({*found, *(s for s in header_secrets(self.headers) if len(s) >= 8)},
                      key=len, reverse=True)


class OpenAIHTTPModel:
    """A :class:`~tui_agent.models.base.LanguageModel` that posts to ``{api_base}/chat/
    completions`` itself. ``openai/<model>`` takes its key and base URL from the arguments, else
    ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE`` (as litellm does); other
    providers get theirs resolved by litellm (``RoutedModel``)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
        wire_model: str | None = None,
        provider: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        max_retries: int = DEFAULT_MAX_RETRIES,
    ) -> None:
        prefix, _, name = model.partition("/")
        self._model_id = model
        self._prefix = prefix
        self._provider = provider or prefix
        self._wire_model = wire_model or name
        self._api_key = api_key
        self._api_base = api_base
        self._headers = dict(headers) if headers else {}
        self._extra = dict(extra) if extra else {}
        self._option_keys = option_keys(prefix, self._provider, name)
        self._timeouts = timeouts
        self._max_retries = max_retries
        self._parsed_url: tuple[str, Any] | None = None  # see _url

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def provider(self) -> str:
        return self._provider

    def __repr__(self) -> str:
        return f"OpenAIHTTPModel({self._model_id!r})"  # never the key

    def check_ready(self) -> None:
        """MissingCredentialError for ``openai/…`` without a key (before any network call)."""
        if self._prefix == "openai" and not self._api_key and not os.environ.get(
            "OPENAI_API_KEY"
        ):
            raise MissingCredentialError("openai", ["OPENAI_API_KEY"], self._model_id)

    async def ensure_ready(self) -> None:
        self.check_ready()

    # -- streaming ---------------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one model step: text and tool-call deltas, then one StepEnd.

        If ``request.abort`` is set, the HTTP stream is closed at once and the generator ends
        without a StepEnd. Failures raise ModelCallError (the key is never in the message)."""
        self.check_ready()
        abort = request.abort
        if abort is not None and abort.is_set():
            return
        call = self._call(request)
        stream_opened()  # the shared client stays open while this call uses it
        response: Any = None
        watcher: Callable[[], object] | None = None  # stops the abort's watch
        watchdog: _Watchdog | None = None
        step = _Step()
        try:
            response = await self._open(call, abort)
            if response is None:
                return  # aborted before the provider answered
            watcher = _close_on_abort(abort, response) if abort is not None else None
            watchdog = _Watchdog(response, call.timeouts)
            async for event in self._events(response, step, watchdog):
                yield event
        except Exception as exc:
            if abort is not None and abort.is_set():
                return  # the stream was closed under us on purpose
            failure = _Stalled(watchdog.expired) if watchdog and watchdog.expired else exc
            raise self._error(failure, call, started=step.started) from exc
        finally:
            stream_closed()
            if watchdog is not None:
                watchdog.cancel()
            if watcher is not None:
                watcher()
            if response is not None:
                await response.aclose()
        yield step.end()

    async def _events(
        self, response: Any, step: _Step, watchdog: _Watchdog
    ) -> AsyncIterator[ModelEvent]:
        async for batch in sse_batches(response):
            watchdog.chunk()
            if b"[DONE]" in batch or b"" in batch:
                if b"[DONE]" in batch:
                    step.done = True  # read on to the body's end: the connection stays reusable
                batch = [data for data in batch if data and data != b"[DONE]"]
                if not batch:
                    continue
            step.started = True
            text: list[str] = []  # the read's consecutive text, handed on as one delta
            try:
                for chunk in _decoded(batch):
                    for event in step.feed(chunk):
                        if type(event) is TextDelta:
                            text.append(event.text)
                            continue
                        if text:
                            yield TextDelta("".join(text))
                            text = []
                        yield event
            except Exception:
                if text:  # the text before a bad event or an error event is kept
                    yield TextDelta("".join(text))
                raise
            if text:
                yield TextDelta(text[0] if len(text) == 1 else "".join(text))
        if not step.done and step.finish is None:
            raise ModelCallError(
                f"model {self._model_id!r}: the stream ended before the provider finished "
                "(connection lost mid-answer)", model=self._model_id)

    # -- the request -------------------------------------------------------------------------
    def _call(self, request: ModelRequest) -> _Call:
        lifted = lifted_options(request.messages, self._option_keys)
        options: dict[str, Any] = {**self._extra, **lifted, **request.settings}
        options.update(pick_options(request.provider_options, self._option_keys, None))
        call_options = {k: options.pop(k) for k in list(options) if k in _CALL_OPTIONS}
        for name in _LITELLM_ONLY:
            options.pop(name, None)
        body = self._body(options, request, call_options.get("extra_body"))
        api_key = self._api_key or call_options.get("api_key") or self._env_key()
        headers = self._request_headers(api_key, call_options)
        retries = call_options.get("max_retries", call_options.get("num_retries"))
        return _Call(
            url=self._base_url(call_options) + "/chat/completions",
            body=json.dumps(body).encode(),
            headers=headers,
            timeouts=self._timeouts.updated(call_options.get("timeout")),
            max_retries=self._max_retries if retries is None else max(0, int(retries)),
            credentials={**call_options, "api_key": api_key or ""},
        )

    def _body(self, options: dict[str, Any], request: ModelRequest, extra: Any) -> dict[str, Any]:
        body = dict(options)
        body["model"] = self._wire_model
        body["messages"] = [shaped_message(m, self._option_keys) for m in request.messages]
        body["stream"] = True
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        if request.tools:
            body["tools"] = request.tools
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
        if isinstance(extra, dict):
            body.update(extra)
        return body

    def _request_headers(self, api_key: str | None, call_options: dict[str, Any]) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        for name in ("headers", "extra_headers"):
            given = call_options.get(name)
            if isinstance(given, dict):
                headers.update({str(k): str(v) for k, v in given.items()})
        headers.update(self._headers)  # the model config's headers win, as on the litellm path
        return headers

    def _env_key(self) -> str | None:
        return os.environ.get("OPENAI_API_KEY") if self._prefix == "openai" else None

    def _base_url(self, call_options: dict[str, Any]) -> str:
        base = (self._api_base or call_options.get("api_base") or call_options.get("base_url"))
        if not base and self._prefix == "openai":
            base = (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
                    or OPENAI_BASE_URL)
        if not base:
            raise ConfigError(f"model {self._model_id!r} has no base URL: pass api_base")
        return str(base).rstrip("/")

    async def _open(self, call: _Call, abort: asyncio.Event | None) -> Any:
        """The response once its status is a success, retrying what may pass on a second try;
        None if ``abort`` is set first."""
        import httpx

        timeout = _httpx_timeout(call.timeouts)
        url = self._url(call.url)
        for attempt in range(call.max_retries + 1):
            last = attempt == call.max_retries
            sent = send_streaming("POST", url, content=call.body, headers=call.headers,
                                  timeout=timeout)
            try:
                response = await _until_abort(sent, abort)
            except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ConnectTimeout) as exc:
                # No answer: the connection failed, or a kept-alive one the server had closed
                # meanwhile (that one is retried at once: a new connection will do).
                stale = attempt == 0 and not isinstance(exc, (httpx.ConnectError,
                                                              httpx.ConnectTimeout))
                wait = 0.0 if stale else _backoff(attempt)
                if last or not await _wait_unless_aborted(wait, abort):
                    raise
                continue
            if response is None or response.status_code < 400:
                return response
            if response.status_code in _RETRY_STATUSES and not last:
                await response.aread()  # the (small) error body: the connection stays reusable
                await response.aclose()
                if not await _wait_unless_aborted(_retry_wait(response, attempt), abort):
                    return None
                continue
            await response.aread()
            await response.aclose()
            raise _HTTPStatusFailure(response.status_code, _error_detail(response))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _url(self, url: str) -> Any:
        """``url`` parsed once (an ``httpx.URL``): a model posts to one URL, call after call."""
        parsed = self._parsed_url
        if parsed is None or parsed[0] != url:
            import httpx

            parsed = self._parsed_url = (url, httpx.URL(url))
        return parsed[1]

    # -- errors ------------------------------------------------------------------------------
    def _error(self, exc: Exception, call: _Call, *, started: bool = False) -> Exception:
        if isinstance(exc, _HTTPStatusFailure):
            status: int | None = exc.status
            kind = _STATUS_KINDS.get(exc.status, "InternalServerError" if exc.status >= 500
                                     else "APIError")
            detail = exc.detail
        elif isinstance(exc, TuiAgentError):
            return exc
        elif _is_transport_error(exc):
            status, kind = None, _transport_kind(exc)
            detail = _transport_detail(exc, call.timeouts, started)
        else:
            return exc
        detail = redact(detail, call.secrets())
        where = f"HTTP {status}" if status is not None else "no response"
        return ModelCallError(f"model {self._model_id!r} failed ({kind}, {where}): {detail}",
                              status_code=status, model=self._model_id)


@functools.lru_cache(maxsize=64)
def _httpx_timeout(timeouts: Timeouts) -> Any:
    """The httpx timeout of a call's :class:`Timeouts` (reads: the first byte; the watchdog
    takes the body's over), made once per distinct value."""
    import httpx

    return httpx.Timeout(timeouts.first_byte, connect=timeouts.connect)


class _Watchdog:
    """Closes the response when the stream stalls: ``first_byte`` seconds without a first SSE
    event, then ``between_chunks`` seconds without the next one. One timer, re-armed only when
    it fires; a chunk just records the time (the per-chunk cost is one clock read)."""

    __slots__ = ("_close", "_first", "_handle", "_limit", "_loop", "_response", "_timeouts",
                 "expired", "last")

    def __init__(self, response: Any, timeouts: Timeouts) -> None:
        self._loop = asyncio.get_running_loop()
        self._response = response
        self._timeouts = timeouts
        self._limit = timeouts.first_byte
        self._first = True
        self.expired: str | None = None  # which timeout closed the stream
        self.last = self._loop.time()
        self._handle = self._loop.call_at(self.last + self._limit, self._check)
        # This timer replaces httpx's read timeout for the body: that one arms a cancel scope
        # on every read, a quarter of the CPU of a stream whose chunks arrive one by one.
        response.request.extensions["timeout"]["read"] = None

    def chunk(self) -> None:
        self.last = self._loop.time()
        if self._first:  # the limit changes once: re-arm for it
            self._first = False
            self._limit = self._timeouts.between_chunks
            self._handle.cancel()
            self._handle = self._loop.call_at(self.last + self._limit, self._check)

    def _check(self) -> None:
        due = self.last + self._limit
        if self._loop.time() < due:
            self._handle = self._loop.call_at(due, self._check)
            return
        self.expired = "first_byte" if self._first else "between_chunks"
        self._close = asyncio.ensure_future(self._response.aclose())

    def cancel(self) -> None:
        self._handle.cancel()


class _Stalled(Exception):
    """The watchdog closed a stalled stream (``which`` timeout)."""

    def __init__(self, which: str) -> None:
        self.which = which
        super().__init__(which)


class _HTTPStatusFailure(Exception):
    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(f"HTTP {status}: {detail}")


class _StreamError(Exception):
    """An error object sent inside the stream (some providers do, after a 200)."""


_NO_EVENTS: tuple[ModelEvent, ...] = ()


class _Step:
    """Turns decoded chunk dicts into our events: a few dict reads per chunk."""

    __slots__ = ("done", "finish", "saw_tool_call", "started", "usage")

    def __init__(self) -> None:
        self.started = False  # an SSE event arrived
        self.finish: str | None = None
        self.usage: Usage | None = None
        self.saw_tool_call = False
        self.done = False

    def feed(self, chunk: dict[str, Any]) -> tuple[ModelEvent, ...] | list[ModelEvent]:
        usage = chunk.get("usage")
        if usage:
            self.usage = Usage(usage.get("prompt_tokens") or 0,
                               usage.get("completion_tokens") or 0)
        choices = chunk.get("choices")
        if not choices:
            if chunk.get("error"):
                raise _StreamError(_message_of(chunk["error"]))
            return _NO_EVENTS
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish:
            self.finish = finish
        delta = choice.get("delta")
        if not delta:
            return _NO_EVENTS
        content = delta.get("content")
        calls = delta.get("tool_calls")
        if not calls:
            return (TextDelta(content),) if content else _NO_EVENTS
        self.saw_tool_call = True
        events: list[ModelEvent] = [TextDelta(content)] if content else []
        events.extend(_tool_call_delta(call) for call in calls)
        return events

    def end(self) -> StepEnd:
        reason = "tool-calls" if self.saw_tool_call else _FINISH.get(self.finish or "", "stop")
        return StepEnd(reason, self.usage)


def _tool_call_delta(call: dict[str, Any]) -> ToolCallDelta:
    fn = call.get("function") or {}
    return ToolCallDelta(call.get("index") or 0, call.get("id"), fn.get("name"),
                         fn.get("arguments") or "")


# -- server-sent events ------------------------------------------------------------------------
_JSON = json.JSONDecoder()


def _decoded(payloads: list[bytes]) -> Iterator[Any]:
    """The JSON value of each payload, in order. The payloads of one read are decoded as one
    text (one UTF-8 decode, one C call per value, no ``json.loads`` wrapper per event), joined by
    NUL, which valid JSON never holds: a payload is taken only if its value ends exactly at the
    next NUL. Anything else (a bad event, whitespace around a value, another encoding) is decoded
    event by event with ``json.loads``, so the good events before a bad one are handed on and the
    bad one raises its own ``JSONDecodeError``. Tested in tests/test_openai_http.py."""
    if len(payloads) == 1:
        yield json.loads(payloads[0])
        return
    values: list[Any] = []
    try:
        text = b"\0".join(payloads).decode()
        decode, end, index = _JSON.raw_decode, len(text), 0
        for _ in payloads:
            value, index = decode(text, index)
            if index < end and text[index] != "\0":
                raise ValueError("not one value")
            values.append(value)
            index += 1
        if index != end + 1:
            raise ValueError("not one value")
    except ValueError:  # JSONDecodeError and UnicodeDecodeError too
        for payload in payloads:
            yield json.loads(payload)
        return
    yield from values


def _body_of(response: Any) -> AsyncIterator[bytes]:
    """The decoded body's pieces: without a content encoding, straight from the response's
    stream (``httpx.Response.stream``: the transport's, ``http11``), not through
    ``aiter_bytes``/``aiter_raw``, two layers (an identity decoder, two byte chunkers) that
    each piece climbed for nothing."""
    stream = getattr(response, "stream", None)
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("identity", "") and stream is not None and hasattr(stream, "__aiter__"):
        return stream.__aiter__()
    return response.aiter_bytes()


async def sse_batches(response: Any) -> AsyncIterator[list[bytes]]:
    """The ``data`` of each server-sent event of ``response`` (its data lines joined by
    ``\n``, as bytes: ``json.loads`` takes them as they are), a list per piece of the decoded
    body that completed any: as few passes as the bytes came in. What httpx-sse's
    ``EventSource.aiter_sse`` gives for the events that carry data, without its layers (text
    decoding, a line decoder, an event object per line): on a fast stream those are most of the
    client's work per chunk, and a woken run's first delta waits for all of them (issue 22).
    Comments and the ``event``, ``id`` and ``retry`` fields are skipped; lines end with LF, CRLF
    or CR (a CR that ends a read waits for the next, which may start with its LF). ``SSEError``
    (httpx-sse's) unless the answer is an event stream. Tested in tests/test_openai_http.py."""
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type:
        from httpx_sse import SSEError

        raise SSEError("Expected response header Content-Type to contain 'text/event-stream', "
                       f"got {content_type!r}")
    pending = b""
    data: list[bytes] = []
    async for chunk in _body_of(response):
        text = pending + chunk if pending else chunk
        if b"\r" in text:
            held = text.endswith(b"\r")  # its \n may come in the next chunk
            text = text[:-1] if held else text
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
        *lines, pending = text.split(b"\n")
        events: list[bytes] = []
        for line in lines:
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
            elif line == b"data":
                data.append(b"")
        if events:
            yield events
    # An event the body ends before its blank line is incomplete: dropped, as the spec says.


# -- waiting, retrying, aborting ---------------------------------------------------------------
async def _until_abort(awaitable: Awaitable[C], abort: asyncio.Event | None) -> C | None:
    """``await awaitable`` (in this task), or None as soon as ``abort`` is set: it is
    cancelled where it waits, which closes the connection it was opening. The caller's own
    cancellation is never swallowed (``CancelOnAbort``; tests/test_openai_http.py)."""
    if abort is None:
        return await awaitable
    if abort.is_set():
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        return None
    opened: C | None = None
    with CancelOnAbort(abort):
        opened = await awaitable
    if opened is not None and abort.is_set():  # it answered just as the abort came
        with contextlib.suppress(Exception):  # the abort is the answer: a failed close is not
            await cast(Any, opened).aclose()
        return None
    return opened


async def _wait_unless_aborted(seconds: float, abort: asyncio.Event | None) -> bool:
    """Sleep ``seconds``; False (at once) if ``abort`` is set meanwhile."""
    if abort is None:
        await asyncio.sleep(seconds)
        return True
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):  # not wait_for: see agent/rescuer.py's _wait
            await abort.wait()
    return not abort.is_set()


def _backoff(attempt: int) -> float:
    first, longest = _BACKOFF_S
    return min(longest, first * 2**attempt) * random.uniform(0.75, 1.0)


def _retry_wait(response: Any, attempt: int) -> float:
    """What the provider asked for (``retry-after-ms``, ``Retry-After`` in seconds or as a
    date), capped at MAX_RETRY_WAIT_S; else the backoff."""
    headers = response.headers
    asked = _seconds(headers.get("retry-after-ms"), scale=0.001)
    if asked is None:
        asked = _seconds(headers.get("retry-after"))
    if asked is None:
        return _backoff(attempt)
    return min(MAX_RETRY_WAIT_S, max(0.0, asked))


def _seconds(value: str | None, scale: float = 1.0) -> float | None:
    if not value:
        return None
    try:
        return float(value) * scale
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError, IndexError):
        when = email.utils.parsedate_to_datetime(value)
        return when.timestamp() - time.time()
    return None


def _close_on_abort(abort: asyncio.Event, response: Any) -> Callable[[], object]:
    """Close the response the moment ``abort`` is set: the connection closes, the server sees
    it, and the read waiting on it ends. Returns what stops watching."""
    return on_abort(abort, lambda: asyncio.ensure_future(_close_quietly(response)))


async def _close_quietly(response: Any) -> None:
    with contextlib.suppress(Exception):
        await response.aclose()


# -- error details -----------------------------------------------------------------------------
def _error_detail(response: Any) -> str:
    try:
        payload = response.json()
    except ValueError:
        return response.text.strip()[:500] or f"HTTP {response.status_code}"
    error = payload.get("error", payload) if isinstance(payload, dict) else payload
    return _message_of(error)


def _message_of(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or json.dumps(error))[:500]
    return str(error)[:500]


def _is_transport_error(exc: BaseException) -> bool:
    import httpx
    from httpx_sse import SSEError

    return isinstance(exc, (httpx.TransportError, OSError, TimeoutError, _StreamError, _Stalled,
                            SSEError, json.JSONDecodeError))


def _transport_kind(exc: BaseException) -> str:
    import httpx

    if isinstance(exc, (httpx.TimeoutException, _Stalled)):
        return "Timeout"
    if isinstance(exc, (_StreamError, json.JSONDecodeError)) or type(exc).__name__ == "SSEError":
        return "APIError"
    return "APIConnectionError"


def _transport_detail(exc: BaseException, timeouts: Timeouts, started: bool) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return f"provider timed out after {timeouts.connect:g} s (no connection: connect timeout)"
    if isinstance(exc, _Stalled):
        started = exc.which == "between_chunks"
    if isinstance(exc, (httpx.ReadTimeout, _Stalled)) and started:
        return (f"provider timed out after {timeouts.between_chunks:g} s"
                " (no chunk: between-chunks timeout)")
    if isinstance(exc, (httpx.ReadTimeout, _Stalled)):
        return (f"provider timed out after {timeouts.first_byte:g} s"
                " (no answer: first-byte timeout)")
    if isinstance(exc, json.JSONDecodeError):
        return f"the provider sent a chunk that is not JSON ({exc.msg})"
    return str(exc).strip()[:500] or type(exc).__name__
