"""The direct path's HTTP/1.1 (``tui_agent.models.http11``), against raw servers that answer
each way the RFC allows and misbehave on purpose: a chunked body decodes the same wherever the
reads end, one piece per read; bodies framed by length, by chunks and by the close; interim
answers skipped; kept-alive connections reused, and not when either side says close, when the
server closed an idle one or when a body was not read to its end; every malformed answer a
``RemoteProtocolError`` naming what is wrong; the pool's limit and timeout; closing the
transport ends a read waiting on it and a request waiting for room."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable

import httpx
import pytest

from tui_agent.errors import ModelCallError
from tui_agent.models.base import ModelRequest
from tui_agent.models.http11 import ChunkedDecoder, Http11Transport, transport
from tui_agent.models.openai_http import OpenAIHTTPModel

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
Start = Callable[[Serve], Awaitable[int]]


def chunked(pieces: list[bytes], *, extension: bytes = b"", trailer: bytes = b"") -> bytes:
    return (b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in pieces)
            + b"0\r\n" + trailer + b"\r\n")


CHUNKED_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")


async def answering(*answers: bytes, connections: list[int] | None = None) -> Serve:
    """A server answering each request of a connection (read to its blank line and its
    Content-Length) with the next of ``answers``; it counts its connections."""
    queue = list(answers)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if connections is not None:
            connections.append(1)
        while queue:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            writer.write(queue.pop(0))
            await writer.drain()
        await reader.read()  # until the client closes
        writer.close()

    return handler


async def get(client: httpx.AsyncClient, port: int, method: str = "POST") -> tuple[int, bytes]:
    async with client.stream(method, f"http://127.0.0.1:{port}/v1/chat/completions",
                             content=b'{"x": 1}') as response:
        return response.status_code, b"".join([piece async for piece in response.aiter_raw()])


def client(max_connections: int | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=transport(httpx.Limits(max_connections=max_connections)))


# -- the chunked decoder -------------------------------------------------------------------------
def test_a_chunked_body_is_the_same_wherever_the_reads_end_one_piece_a_read() -> None:
    pieces = [b'data: {"n": %d}\n\n' % i for i in range(12)] + [b"x" * 300]
    for extension, trailer in ((b"", b""), (b";name=value", b"X-Trailer: 1\r\n")):
        wire = chunked(pieces, extension=extension, trailer=trailer) + b"NEXT"
        for size in (1, 2, 3, 5, 8, 13, 64, len(wire)):
            decoder = ChunkedDecoder()
            reads, start = [], 0
            while not decoder.done:
                reads.append(decoder.feed(wire[start:start + size]))
                start += size
            assert b"".join(reads) == b"".join(pieces), (extension, size)
            assert decoder.extra + wire[start:] == b"NEXT", (extension, size)
    decoder = ChunkedDecoder()
    assert decoder.feed(chunked(pieces)) == b"".join(pieces)  # thirteen chunks, one piece


@pytest.mark.parametrize("wire", [b"zz\r\nhello\r\n", b"5\r\nhello!!\r\n", b"5\nhello\r\n",
                                  b"f" * 5000])
def test_a_malformed_chunked_body_is_a_protocol_error(wire: bytes) -> None:
    with pytest.raises(httpx.RemoteProtocolError, match="bad chunked body"):
        ChunkedDecoder().feed(wire)


# -- framing -----------------------------------------------------------------------------------
async def test_each_framing_reads_its_body_and_keeps_the_connection_when_it_may(
    serve: Start,
) -> None:
    connections: list[int] = []
    sized = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + sized
    answers = [sized, CHUNKED_HEAD + chunked([b"a", b"bc"]), interim,
               b"HTTP/1.1 204 No Content\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"]
    port = await serve(await answering(*answers, connections=connections))
    async with client() as http:
        got = [await get(http, port) for _ in answers]
    assert got == [(200, b"hello"), (200, b"abc"), (200, b"hello"), (204, b""), (200, b"")]
    assert connections == [1], "the connection was not kept alive"


async def test_a_body_until_the_close_is_read_whole_and_its_connection_not_reused(
    serve: Start,
) -> None:
    connections: list[int] = []

    async def until_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\n\r\nall of ")
        await writer.drain()
        writer.write(b"it")
        writer.close()

    port = await serve(until_close)
    async with client() as http:
        assert await get(http, port) == (200, b"all of it")
        assert await get(http, port) == (200, b"all of it")
    assert connections == [1, 1]


@pytest.mark.parametrize("close_from", ["server", "client"])
async def test_connection_close_from_either_side_is_a_new_connection(
    serve: Start, close_from: str,
) -> None:
    connections: list[int] = []
    says = b"Connection: close\r\n" if close_from == "server" else b""
    answer = b"HTTP/1.1 200 OK\r\n" + says + b"Content-Length: 2\r\n\r\nok"
    port = await serve(await answering(answer, answer, connections=connections))
    headers = {"Connection": "close"} if close_from == "client" else {}
    async with client() as http:
        for _ in range(2):
            response = await http.post(f"http://127.0.0.1:{port}/", content=b"", headers=headers)
            assert response.text == "ok"
    assert connections == [1, 1]


async def test_a_body_closed_before_its_end_does_not_leave_its_connection_to_reuse(
    serve: Start,
) -> None:
    connections: list[int] = []
    long_answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"  # five more to come
    short = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    port = await serve(await answering(long_answer, short, short, connections=connections))
    async with client() as http:
        async with http.stream("GET", f"http://127.0.0.1:{port}/") as response:
            async for piece in response.aiter_raw():
                assert piece == b"hello"
                break  # the reader stops: the rest never comes on this connection
        assert (await http.get(f"http://127.0.0.1:{port}/")).text == "ok"
    assert connections == [1, 1]


# -- what a server gets wrong ------------------------------------------------------------------
@pytest.mark.parametrize(("answer", "named"), [
    (b"ICY 200 OK\r\n\r\n", "not an HTTP/1.x status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "a malformed header line"),
    (b"HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n", "a malformed header line"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "unsupported Transfer"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
     "a bad Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "a bad Content-Length"),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "switched protocols"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70_000, "over 64 KiB"),
])
async def test_a_malformed_answer_is_a_protocol_error_naming_what_is_wrong(
    serve: Start, answer: bytes, named: str,
) -> None:
    port = await serve(await answering(answer))
    async with client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match=named):
            await get(http, port)


@pytest.mark.parametrize(("answer", "named"), [
    (b"", "Server disconnected without sending a response"),
    (CHUNKED_HEAD + b"5\r\nhel", "incomplete chunked read"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhel", "received 3 bytes, expected 9"),
])
async def test_a_server_gone_mid_answer_is_a_protocol_error(
    serve: Start, answer: bytes, named: str,
) -> None:
    async def then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    port = await serve(then_close)
    async with client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match=named):
            await get(http, port, method="GET")


async def test_a_model_call_answered_with_a_malformed_answer_fails_naming_it(
    serve: Start,
) -> None:
    port = await serve(await answering(b"ICY 200 OK\r\n\r\n"))
    model = OpenAIHTTPModel("openai/gpt-test", api_base=f"http://127.0.0.1:{port}/v1",
                            api_key="sk-secret-in-no-message")
    with pytest.raises(ModelCallError) as info:
        async for _ in model.stream(ModelRequest([{"role": "user", "content": "hi"}],
                                                 settings={"max_retries": 0})):
            pass
    message = str(info.value)
    assert "not an HTTP/1.x status line: b'ICY 200 OK'" in message
    assert "gpt-test" in message and "sk-secret" not in message


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent(
    serve: Start,
) -> None:
    seen: list[bytes] = []
    done = asyncio.Event()

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.read())  # until the client closes
        done.set()

    port = await serve(record)
    async with client() as http:
        request = http.build_request("GET", f"http://127.0.0.1:{port}/")
        request.headers["X-Injected"] = "a\r\nEvil: yes"
        with pytest.raises(httpx.LocalProtocolError, match="X-Injected"):
            await http.send(request)
    await asyncio.wait_for(done.wait(), 5)
    assert seen == [b""]


async def test_only_http_and_https_are_spoken() -> None:
    async with client() as http:
        with pytest.raises(httpx.UnsupportedProtocol, match="ftp"):
            await http.get("ftp://127.0.0.1/x")


# -- the pool ----------------------------------------------------------------------------------
async def test_an_idle_connection_the_server_closed_is_not_reused(serve: Start) -> None:
    connections: list[int] = []
    closed = asyncio.Event()

    async def once_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # kept alive as far as the client knows, then closed while idle
        closed.set()

    port = await serve(once_then_close)
    async with client() as http:
        assert (await http.get(f"http://127.0.0.1:{port}/")).text == "ok"
        await closed.wait()
        assert (await http.get(f"http://127.0.0.1:{port}/")).text == "ok"
    assert connections == [1, 1]


async def test_the_pool_holds_its_limit_and_a_request_waits_for_room_then_times_out(
    serve: Start,
) -> None:
    release, asked = asyncio.Event(), asyncio.Event()
    connections: list[int] = []

    async def held(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            asked.set()
            await release.wait()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

    port = await serve(held)
    url = f"http://127.0.0.1:{port}/"
    async with client(max_connections=1) as http:
        first = asyncio.ensure_future(http.get(url))
        second = asyncio.ensure_future(http.get(url))  # waits for the one connection
        await asyncio.wait_for(asked.wait(), 5)
        release.set()
        assert [(await first).text, (await second).text] == ["ok", "ok"]
        release.clear()
        asked.clear()
        holding = asyncio.ensure_future(http.get(url))
        await asyncio.wait_for(asked.wait(), 5)  # it holds the one connection
        with pytest.raises(httpx.PoolTimeout, match="1 open"):
            await http.get(url, timeout=httpx.Timeout(5, pool=0.05))
        release.set()
        assert (await holding).text == "ok"
    assert connections == [1]


async def test_a_request_waiting_for_room_when_the_transport_closes_opens_nothing(
    serve: Start,
) -> None:
    asked = asyncio.Event()
    connections: list[int] = []

    async def never_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        asked.set()
        await reader.read()

    port = await serve(never_answers)
    pool = transport(httpx.Limits(max_connections=1))
    url = f"http://127.0.0.1:{port}/"
    first = asyncio.ensure_future(pool.handle_async_request(httpx.Request("GET", url)))
    await asyncio.wait_for(asked.wait(), 5)
    second = asyncio.ensure_future(pool.handle_async_request(httpx.Request("GET", url)))
    await asyncio.sleep(0)  # it waits for the one connection
    await pool.aclose()
    with pytest.raises(httpx.ReadError):
        await asyncio.wait_for(first, 5)
    with pytest.raises(RuntimeError, match="closed"):
        await asyncio.wait_for(second, 5)
    assert connections == [1]


async def test_closing_the_transport_ends_a_read_waiting_on_it(serve: Start) -> None:
    async def silent_after_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                                ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(CHUNKED_HEAD + b"2\r\nhi\r\n")  # then nothing, never the end
        await writer.drain()
        await reader.read()

    port = await serve(silent_after_head)
    pool: Http11Transport = transport(httpx.Limits())
    request = httpx.Request("GET", f"http://127.0.0.1:{port}/")
    response = await pool.handle_async_request(request)
    assert isinstance(response.stream, httpx.AsyncByteStream)
    pieces = aiter(response.stream)
    assert await anext(pieces) == b"hi"
    waiting = asyncio.ensure_future(anext(pieces))
    await asyncio.sleep(0)  # the read starts to wait (closed before, it fails the same way)
    await pool.aclose()
    with pytest.raises(httpx.ReadError):
        await asyncio.wait_for(waiting, 5)


async def test_a_chunked_answer_cut_anywhere_reads_whole_and_a_read_s_chunks_come_as_one(
    serve: Start,
) -> None:
    pieces = [b'data: {"n": %d}\n\n' % i for i in range(30)]
    connections: list[int] = []
    wire = CHUNKED_HEAD + chunked(pieces)
    cuts = [0, 40, 95, 97, 98, 160, 161, 300, len(wire) - 3, len(wire)]  # inside lines and CRLFs

    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readuntil(b"\r\n\r\n")
        for start, end in itertools.pairwise(cuts):
            writer.write(wire[start:end])
            await writer.drain()
            await asyncio.sleep(0.005)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(wire)  # a second answer on the same connection, in one write
        await writer.drain()
        await reader.read()
        writer.close()

    port = await serve(cut)
    async with client() as http:
        bodies = []
        for _ in range(2):
            async with http.stream("GET", f"http://127.0.0.1:{port}/") as response:
                bodies.append([piece async for piece in response.aiter_raw()])
    assert [b"".join(body) for body in bodies] == [b"".join(pieces)] * 2
    assert len(bodies[1]) == 1, "the second answer's thirty chunks did not come as one piece"
    assert connections == [1], "the connection was not kept alive for the second answer"
