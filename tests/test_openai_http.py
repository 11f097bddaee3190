"""What only the direct HTTP path has: retries and Retry-After, timeouts, cancellation that the
server sees, connection reuse, routing of OpenAI-compatible providers, no litellm import.

The behaviour both paths share (events, bodies, errors, redaction) is tested on both in
``test_litellm_model.py`` and ``test_agent_litellm.py``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.common import until
from openai_server import FakeOpenAIServer

from tui_agent import Agent
from tui_agent.errors import ConfigError, ModelCallError
from tui_agent.models import http_client, openai_http
from tui_agent.models.base import ModelEvent, ModelRequest, StepEnd, TextDelta, ToolCallDelta
from tui_agent.models.openai_http import OpenAIHTTPModel, Timeouts
from tui_agent.models.resolve import resolve_model
from tui_agent.models.routed import RoutedModel

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parent.parent


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def request(**settings: Any) -> ModelRequest:
    return ModelRequest([user("hi")], settings=settings)


async def collect(model: Any, req: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(req)]


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def direct() -> OpenAIHTTPModel:
    model = resolve_model("openai/gpt-test")
    assert isinstance(model, OpenAIHTTPModel)
    return model


# -- retries -----------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [429, 500, 503])
async def test_a_retryable_status_is_retried(openai_server: FakeOpenAIServer, status: int) -> None:
    openai_server.script({"error": status, "message": "busy", "retry_after": "0"}, "second try")
    events = await collect(direct(), request())
    assert text_of(events) == "second try"
    assert len(openai_server.requests) == 2


async def test_retries_are_bounded_by_max_retries(openai_server: FakeOpenAIServer) -> None:
    openai_server.handler = lambda body: {"error": 503, "message": "down", "retry_after": "0"}
    with pytest.raises(ModelCallError) as info:
        await collect(direct(), request(max_retries=2))
    assert info.value.status_code == 503 and "down" in str(info.value)
    assert len(openai_server.requests) == 3, "one try and two retries"


async def test_a_client_error_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.script({"error": 400, "message": "bad request"}, "never")
    with pytest.raises(ModelCallError) as info:
        await collect(direct(), request())
    assert info.value.status_code == 400 and "BadRequestError" in str(info.value)
    assert len(openai_server.requests) == 1


async def test_retry_after_is_waited_for(openai_server: FakeOpenAIServer) -> None:
    openai_server.script({"error": 429, "message": "slow down", "retry_after": "0.4"}, "done")
    started = time.monotonic()
    events = await collect(direct(), request())
    assert text_of(events) == "done"
    assert time.monotonic() - started >= 0.4, "the retry came before Retry-After said"


async def test_a_huge_retry_after_is_capped(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_http, "MAX_RETRY_WAIT_S", 0.2)
    openai_server.script({"error": 429, "message": "come back tomorrow", "retry_after": "86400"},
                         "done")
    started = time.monotonic()
    assert text_of(await collect(direct(), request())) == "done"
    assert time.monotonic() - started < 10


async def test_an_abort_ends_the_wait_for_a_retry(openai_server: FakeOpenAIServer) -> None:
    openai_server.script({"error": 429, "message": "slow down", "retry_after": "20"})
    abort = asyncio.Event()
    consuming = asyncio.ensure_future(collect(direct(), ModelRequest([user("hi")], abort=abort)))
    await until(lambda: len(openai_server.requests) == 1, "the first request")
    abort.set()
    assert await asyncio.wait_for(consuming, 5) == []
    assert len(openai_server.requests) == 1


async def test_a_refused_connection_is_retried(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a free port, nobody listening yet
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    late = FakeOpenAIServer(port=port, default_reply="up now")
    waits: list[int] = []

    def start_server_then_retry(attempt: int) -> float:
        waits.append(attempt)
        late.start()  # the server comes up while the client waits to retry
        return 0.0

    monkeypatch.setattr(openai_http, "_backoff", start_server_then_retry)
    model = OpenAIHTTPModel("openai/gpt-test", api_base=f"http://127.0.0.1:{port}/v1")
    try:
        events = await collect(model, request())
    finally:
        late.stop()
    assert text_of(events) == "up now" and waits == [0]


async def test_a_refused_connection_fails_after_the_retries(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openai_http, "_backoff", lambda attempt: 0.0)
    dead = FakeOpenAIServer().start()
    url = dead.base_url
    dead.stop()
    with pytest.raises(ModelCallError) as info:
        await collect(OpenAIHTTPModel("openai/gpt-test", api_base=url), request())
    assert info.value.status_code is None
    assert "APIConnectionError, no response" in str(info.value)


# -- timeouts ----------------------------------------------------------------------------------
def test_default_timeouts_are_explicit() -> None:
    defaults = Timeouts(connect=10.0, first_byte=120.0, between_chunks=60.0)
    assert defaults == openai_http.DEFAULT_TIMEOUTS
    assert Timeouts().updated(5) == Timeouts(5.0, 5.0, 5.0)
    assert Timeouts().updated({"first_byte": 1}).first_byte == 1.0
    with pytest.raises(ConfigError, match="timeout"):
        Timeouts().updated({"frist_byte": 1})


async def test_connect_timeout(unanswered_port: int) -> None:
    base = f"http://127.0.0.1:{unanswered_port}/v1"
    model = OpenAIHTTPModel("openai/gpt-test", api_key="sk-test", api_base=base)
    started = time.monotonic()
    with pytest.raises(ModelCallError) as info:
        await collect(model, request(timeout={"connect": 0.3}, max_retries=0))
    assert "connect timeout" in str(info.value) and info.value.status_code is None
    assert time.monotonic() - started < 10


async def test_first_byte_timeout(openai_server: FakeOpenAIServer) -> None:
    openai_server.script({"text": "too late", "hold": "start"})
    started = time.monotonic()
    try:
        with pytest.raises(ModelCallError) as info:
            await collect(direct(), request(timeout={"first_byte": 0.3}, max_retries=0))
    finally:
        openai_server.release()
    assert "first-byte timeout" in str(info.value) and info.value.status_code is None
    assert time.monotonic() - started < 10


async def test_between_chunks_timeout(openai_server: FakeOpenAIServer) -> None:
    openai_server.script({"text": "first then a stall", "hold": True})
    events: list[ModelEvent] = []
    try:
        with pytest.raises(ModelCallError) as info:
            async for event in direct().stream(
                request(timeout={"first_byte": 30, "between_chunks": 0.3})
            ):
                events.append(event)
    finally:
        openai_server.release()
    assert "between-chunks timeout" in str(info.value)
    assert events == [TextDelta("firs")]


# -- cancellation ------------------------------------------------------------------------------
async def test_abort_closes_the_http_stream_at_once(openai_server: FakeOpenAIServer) -> None:
    openai_server.script({"text": "first then much more text", "hold": True})
    abort = asyncio.Event()
    events: list[ModelEvent] = []

    async def consume() -> None:
        async for event in direct().stream(ModelRequest([user("hi")], abort=abort)):
            events.append(event)

    task = asyncio.ensure_future(consume())
    await until(lambda: events, "the first event")
    abort.set()
    await asyncio.wait_for(task, 5)
    # The server is still holding the rest back: only a closed connection ends its wait.
    assert await asyncio.to_thread(openai_server.hung_up.wait, 5), "server saw no close"
    assert openai_server.hangups == 1
    assert events == [TextDelta("firs")]


async def test_abort_before_the_answer_closes_the_connection(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.script({"text": "never sent", "hold": "start"})
    abort = asyncio.Event()
    task = asyncio.ensure_future(collect(direct(), ModelRequest([user("hi")], abort=abort)))
    await until(lambda: openai_server.requests, "the request")
    abort.set()
    assert await asyncio.wait_for(task, 5) == []
    assert await asyncio.to_thread(openai_server.hung_up.wait, 5), "server saw no close"


async def test_an_agent_abort_closes_the_stream(openai_server: FakeOpenAIServer) -> None:
    openai_server.script({"text": "first then much more text", "hold": True})
    agent = Agent(name="wire", instructions="Be brief.", model="openai/gpt-test")
    output = await agent.stream("hi")
    async for chunk in output:
        if chunk["type"] == "text-delta":
            output.abort()
    result = await output.result()
    assert result.finish_reason == "abort" and result.text == "firs"
    assert await asyncio.to_thread(openai_server.hung_up.wait, 5), "server saw no close"
    await agent.close()


# -- the shared client -------------------------------------------------------------------------
async def test_requests_share_one_keep_alive_connection(openai_server: FakeOpenAIServer) -> None:
    model = direct()
    for _ in range(3):
        assert text_of(await collect(model, request())) == "ok"
    assert len(openai_server.peers) == 3
    assert len(set(openai_server.peers)) == 1, "each request opened its own connection"


async def test_a_request_goes_straight_to_the_transport_with_the_client_s_headers(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: the direct path skips ``AsyncClient.send`` (its auth, redirect, cookie and hook
    layers cost a third of a request) and sends what the client would have sent."""
    import httpx

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the direct path went through AsyncClient.send")

    monkeypatch.setattr(httpx.AsyncClient, "send", refused)
    assert text_of(await collect(direct(), request())) == "ok"
    sent = openai_server.request_headers[0]
    client_headers = dict(http_client.shared_client().headers)
    assert sent["user-agent"] == client_headers["user-agent"]
    assert sent["accept"] == "text/event-stream"  # the call's own win over the client's
    assert sent["authorization"].startswith("Bearer ")


async def test_agent_close_closes_the_idle_client(openai_server: FakeOpenAIServer) -> None:
    agent = Agent(name="wire", instructions="Be brief.", model="openai/gpt-test")
    await agent.generate("hi")
    client = http_client.shared_client()
    await agent.close()
    assert client.is_closed
    await agent.generate("again")  # a new client is opened on demand
    assert http_client.shared_client() is not client
    await agent.close()


# -- errors inside a stream --------------------------------------------------------------------
async def test_an_error_event_in_the_stream_is_a_model_call_error(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "Zt9pQ2rX8vLm4KcW7yHs3NbFq6Dj"  # a shape only knowing the key can redact
    monkeypatch.setenv("OPENAI_API_KEY", key)
    openai_server.script({"text": "partial answer", "stream_error": f"overloaded (key {key})"})
    events: list[ModelEvent] = []
    with pytest.raises(ModelCallError) as info:
        async for event in direct().stream(request()):
            events.append(event)
    assert events == [TextDelta("part")]
    assert "overloaded (key ***)" in str(info.value) and key not in str(info.value)


def _delta(text: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def _answer_in_one_write(events: list[bytes]) -> tuple[list[ModelEvent], Exception | None]:
    """What the direct model makes of an answer whose events all came in one write (one read:
    a chunk per event, as providers send them), from a bare server on 127.0.0.1."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + body)
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    model = OpenAIHTTPModel("openai/fake", api_base=f"http://127.0.0.1:{port}/v1", api_key="sk-t")
    events: list[ModelEvent] = []
    failure: Exception | None = None
    try:
        async for event in model.stream(request()):
            events.append(event)
    except ModelCallError as exc:
        failure = exc
    await http_client.close_shared_client(force=True)
    server.close()
    await server.wait_closed()
    return events, failure


async def test_the_text_of_one_read_is_handed_on_as_one_delta_in_order() -> None:
    multi_line = b'data: {"choices": [{"index": 0,\ndata: "delta": {"content": "d"}}]}\n\n'
    spaced = b'data:  {"choices": [{"delta": {"content": "e"}}]} \n\n'
    call = (b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", '
            b'"function": {"name": "f", "arguments": "{}"}}]}}]}\n\n')
    finish = b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    events, failure = await _answer_in_one_write(
        [_delta("a"), _delta("b"), _delta("c"), multi_line, spaced, b": ping\n\n", call,
         _delta("f"), finish, b"data: [DONE]\n\n"])
    assert failure is None
    # Consecutive text deltas of one read become one (each delta climbs the run, its
    # subscribers and the app on its own); a tool call between them keeps its place.
    assert events == [TextDelta("abcde"), ToolCallDelta(0, "c1", "f", "{}"), TextDelta("f"),
                      StepEnd("tool-calls", None)]


async def test_a_bad_event_among_good_ones_of_one_read_gets_its_own_error() -> None:
    events, failure = await _answer_in_one_write(
        [_delta("a"), _delta("b"), b"data: {\"choices\": [\n\n", _delta("c"),
         b"data: [DONE]\n\n"])
    assert events == [TextDelta("ab")]  # the good ones before it, then the error
    assert isinstance(failure, ModelCallError)
    assert "a chunk that is not JSON" in str(failure)
    # Two bad halves that would make one good value if their events were decoded as one text:
    events, failure = await _answer_in_one_write(
        [_delta("a"), b'data: {"choices": [{"delta": {"content": "b"}}]},\n\n',
         b"data: 1\n\n", b"data: [DONE]\n\n"])
    assert events == [TextDelta("a")] and "not JSON" in str(failure)


async def test_an_answer_that_is_not_an_event_stream_is_a_model_call_error(
    openai_server: FakeOpenAIServer,
) -> None:
    # The fake server answers a request without stream=True with plain JSON.
    model = OpenAIHTTPModel("openai/gpt-test", extra={"extra_body": {"stream": False}})
    with pytest.raises(ModelCallError) as info:
        await collect(model, request())
    assert "text/event-stream" in str(info.value) and info.value.status_code is None


# -- routing -----------------------------------------------------------------------------------
async def test_an_openai_compatible_provider_goes_direct(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-routed-0123456789")
    model = resolve_model({"id": "groq/llama-3.1-8b-instant", "api_base": openai_server.base_url})
    assert isinstance(model, RoutedModel)
    events = await collect(model, request())
    assert model.route == "direct"
    assert text_of(events) == "ok" and isinstance(events[-1], StepEnd)
    assert openai_server.requests[0]["model"] == "llama-3.1-8b-instant"
    assert openai_server.request_headers[0]["authorization"] == "Bearer gsk-routed-0123456789"


async def test_a_provider_litellm_carries_itself_stays_on_litellm() -> None:
    model = resolve_model({"id": "mistral/mistral-small", "api_key": "k-0123456789"})
    assert isinstance(model, RoutedModel)
    await model.ensure_ready()
    assert model.route == "litellm"


def run_probe(code: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=170)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


FIRST_TOKEN_PROBE = """
import asyncio, json, os, sys
sys.path.insert(0, "tests")
from tui_agent import Agent

async def main():
    agent = Agent(name="p", instructions="Be brief.", model={model})
    output = await agent.stream("Say hi.", model_settings={{"max_tokens": 8}})
    async for chunk in output:
        if chunk["type"] == "text-delta":
            seen = "litellm" in sys.modules
            break
    output.abort()
    await output.result()
    await agent.close()
    print(json.dumps({{"litellm_before_first_token": seen}}))

{setup}
asyncio.run(main())
"""


def test_a_direct_chat_does_not_import_litellm(openai_server: FakeOpenAIServer) -> None:
    setup = (f"os.environ['OPENAI_BASE_URL'] = {openai_server.base_url!r}\n"
             "os.environ['OPENAI_API_KEY'] = 'sk-test-dummy'")
    openai_server.default_reply = "hello there"
    try:
        direct_run = run_probe(FIRST_TOKEN_PROBE.format(model="'openai/gpt-test'", setup=setup))
        forced = run_probe(FIRST_TOKEN_PROBE.format(
            model="{'id': 'openai/gpt-test', 'route': 'litellm'}", setup=setup))
    finally:
        openai_server.default_reply = "ok"
    assert direct_run == {"litellm_before_first_token": False}
    assert forced == {"litellm_before_first_token": True}, "route='litellm' forces litellm"


@pytest.mark.local_model
@pytest.mark.timeout(180)
def test_local_chat_does_not_import_litellm_before_its_first_token() -> None:
    pytest.importorskip("xllamacpp")
    result = run_probe(FIRST_TOKEN_PROBE.format(model="'local/smollm2'", setup=""))
    assert result == {"litellm_before_first_token": False}


# -- an abort while the request is being opened -------------------------------------------------


class _Opened:
    closed = False

    async def aclose(self) -> None:
        self.closed = True


async def test_what_opens_just_as_the_abort_comes_is_closed() -> None:
    abort = asyncio.Event()
    opened = _Opened()

    async def answers_with_the_abort() -> _Opened:
        abort.set()
        return opened

    assert await openai_http._until_abort(answers_with_the_abort(), abort) is None
    assert opened.closed


async def test_a_cancelled_caller_stays_cancelled_while_an_abort_closes_the_request() -> None:
    """The abort waits for the cancelled request to finish closing; cancelling the caller
    meanwhile cancels it (it used to be swallowed there, and the caller went on)."""
    abort, sent, cleaning, release = (asyncio.Event(), asyncio.Event(), asyncio.Event(),
                                      asyncio.Event())

    async def slow_to_close() -> _Opened:
        try:
            sent.set()
            await asyncio.Event().wait()  # the request never answers
        finally:
            cleaning.set()
            await release.wait()  # closing the half-open connection takes a while
        return _Opened()

    caller = asyncio.create_task(openai_http._until_abort(slow_to_close(), abort))
    await sent.wait()
    abort.set()
    await cleaning.wait()
    caller.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller


# -- server-sent events ------------------------------------------------------------------------
class _Body:
    """A response as ``sse_batches`` reads it: headers and the decoded body in given pieces."""

    def __init__(self, pieces: list[bytes], content_type: str = "text/event-stream") -> None:
        self.headers = {"content-type": content_type}
        self.pieces = pieces

    async def aiter_bytes(self) -> Any:
        for piece in self.pieces:
            yield piece


async def sse(pieces: list[bytes], content_type: str = "text/event-stream") -> list[bytes]:
    """The data of each event, in order, however the reads batched them."""
    batches = openai_http.sse_batches(_Body(pieces, content_type))
    return [data async for batch in batches for data in batch]


async def test_server_sent_events_are_split_as_the_spec_says_wherever_the_reads_end() -> None:
    body = (b": a comment\r\nevent: delta\r\nid: 7\r\ndata: {\"a\": 1}\r\n\r\n"
            b"data:first\ndata: second\n\nretry: 10\ndata\n\n"
            b"data: [DONE]\r\rdata: cut off")
    whole = await sse([body])
    assert whole == [b'{"a": 1}', b"first\nsecond", b"", b"[DONE]"]  # the last is incomplete
    for size in (1, 2, 3, 5, 7):
        pieces = [body[i:i + size] for i in range(0, len(body), size)]
        assert await sse(pieces) == whole, size


async def test_an_answer_that_is_not_an_event_stream_is_refused_by_its_content_type() -> None:
    from httpx_sse import SSEError

    with pytest.raises(SSEError, match="text/event-stream"):
        await sse_of_json()


async def sse_of_json() -> list[bytes]:
    return await sse([b"{}"], "application/json")
