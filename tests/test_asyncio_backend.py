"""The direct path's connections (``tui_agent.models.asyncio_backend``): reads coalesce while a
stream is fast and sustained and not otherwise, a close or a timeout ends a waiting read, the
end of a stream and a server's close are seen, a large body passes the buffer's high-water mark
intact; through the shared client a fast answer comes in batches, it streams over TLS (a
self-signed certificate made with ``openssl``), and an abort closes a TLS stream at once. The
HTTP/1.1 above them is tests/test_http11.py's."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from helpers.common import until
from openai_server import FakeOpenAIServer

from tui_agent import Agent
from tui_agent.models import asyncio_backend
from tui_agent.models.asyncio_backend import AsyncioBackend, AsyncioStream
from tui_agent.models.base import ModelRequest, TextDelta
from tui_agent.models.http_client import close_shared_client
from tui_agent.models.openai_http import OpenAIHTTPModel


async def read_all(stream: AsyncioStream) -> list[bytes]:
    reads = []
    while data := await stream.read(65536):
        reads.append(data)
    return reads


@pytest.fixture
def coalesce_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads coalesce from an answer's second arrival on (not after SUSTAINED_S of it)."""
    monkeypatch.setattr(asyncio_backend, "SUSTAINED_S", 0.0)


async def test_a_fast_stream_is_read_in_fewer_pieces_than_it_was_sent(
    serve: Callable, coalesce_at_once: None
) -> None:
    pieces = [b"data: %03d\n\n" % i for i in range(40)]

    async def paced(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for piece in pieces:  # 2 ms apart: a provider at 500 chunks per second
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.002)
        writer.close()

    port = await serve(paced)
    stream = await AsyncioBackend(coalesce_s=0.02).connect_tcp("127.0.0.1", port)
    reads = await read_all(stream)
    await stream.aclose()
    assert b"".join(reads) == b"".join(pieces)
    assert len(reads) <= len(pieces) // 3, f"{len(reads)} reads for {len(pieces)} pieces"


async def test_a_short_answer_is_not_slowed(serve: Callable) -> None:
    pieces = [b"data: %03d\n\n" % i for i in range(5)]

    async def quick(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(1)
        for piece in pieces:  # a whole answer well within SUSTAINED_S
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.001)
        writer.close()

    port = await serve(quick)
    # A rest of a minute: only reads that never rest can pass the bound below.
    stream = await AsyncioBackend(coalesce_s=60.0).connect_tcp("127.0.0.1", port)
    await stream.write(b"!")
    reads = await asyncio.wait_for(read_all(stream), 5.0)
    await stream.aclose()
    assert b"".join(reads) == b"".join(pieces)


async def test_bytes_after_a_quiet_spell_are_read_at_once(
    serve: Callable, coalesce_at_once: None
) -> None:
    async def on_cue(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(1)  # the cue
        writer.write(b"first")
        await writer.drain()
        await reader.read()

    port = await serve(on_cue)
    stream = await AsyncioBackend(coalesce_s=60.0).connect_tcp("127.0.0.1", port)
    await stream.write(b"!")
    assert await asyncio.wait_for(stream.read(1024), 5.0) == b"first"
    await stream.aclose()


async def test_a_new_request_is_answered_without_waiting_for_the_rest(
    serve: Callable, coalesce_at_once: None
) -> None:
    async def two_then_echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(2)
        writer.write(b"1")
        await writer.drain()
        await asyncio.sleep(0.01)
        writer.write(b"2")  # a second arrival: the socket rests after it
        await writer.drain()
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()

    port = await serve(two_then_echo)
    stream = await AsyncioBackend(coalesce_s=60.0).connect_tcp("127.0.0.1", port)
    await stream.write(b"go")
    assert await asyncio.wait_for(stream.read(1024), 5.0) == b"1"
    assert await asyncio.wait_for(stream.read(1024), 5.0) == b"2"  # the socket rests now
    await stream.write(b"three")  # a new request ends the rest
    assert await asyncio.wait_for(stream.read(1024), 5.0) == b"three"
    await stream.aclose()


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A server that reads until the client closes and never answers."""
    await reader.read()


async def test_closing_the_stream_ends_a_waiting_read(serve: Callable) -> None:
    port = await serve(silent)
    stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
    reading = asyncio.ensure_future(stream.read(1024))
    await asyncio.sleep(0)  # the read is waiting
    await stream.aclose()
    with pytest.raises(httpx.ReadError):
        await asyncio.wait_for(reading, 5.0)


async def test_a_read_times_out(serve: Callable) -> None:
    port = await serve(silent)
    stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
    with pytest.raises(httpx.ReadTimeout):
        await stream.read(1024, timeout=0.05)
    await stream.aclose()


async def test_the_end_of_the_stream_and_a_server_close_are_seen(serve: Callable) -> None:
    async def bye(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    port = await serve(bye)
    stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
    # An idle kept-alive connection the server closed must not be reused: the pool asks this.
    await until(stream.is_readable, "the close to be seen")
    assert await stream.read(1024) == b""
    await stream.aclose()


async def test_an_open_idle_connection_is_not_readable(serve: Callable) -> None:
    port = await serve(silent)
    stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
    assert stream.is_readable() is False
    assert stream.get_extra_info("peername")[1] == port
    await stream.aclose()


async def test_a_large_body_passes_the_high_water_mark_intact(serve: Callable) -> None:
    body = bytes(range(256)) * 8192  # 2 MiB, far past the buffer's high-water mark

    async def bulk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(1)
        writer.write(body)
        await writer.drain()
        writer.close()

    port = await serve(bulk)
    stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
    await stream.write(b"!")
    reads = await read_all(stream)
    await stream.aclose()
    assert b"".join(reads) == body
    assert max(len(r) for r in reads) <= 65536  # a read never exceeds what was asked


async def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as bound:  # bound, never listening: a connection to it is refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        with pytest.raises(httpx.ConnectError):
            await AsyncioBackend().connect_tcp("127.0.0.1", port)


def other_tasks() -> list[asyncio.Task[object]]:
    here = asyncio.current_task()
    return [task for task in asyncio.all_tasks() if task is not here and not task.done()]


async def test_a_connect_that_times_out_leaves_no_attempt_running(unanswered_port: int) -> None:
    """An address is one attempt, not asyncio's happy-eyeballs race (on Python 3.11 it cancels
    its attempts without waiting for them: the suite's task guard caught one under load)."""
    with pytest.raises(httpx.ConnectTimeout, match="timed out connecting"):
        await AsyncioBackend().connect_tcp("127.0.0.1", unanswered_port, timeout=0.2)
    assert other_tasks() == []


async def test_a_fast_answer_through_the_shared_client_comes_in_a_few_deltas(
    openai_server: FakeOpenAIServer, coalesce_at_once: None
) -> None:
    # 100 deltas at 500 a second, 2 ms apart, over 0.2 s: read one by one they would be 100
    # deltas; coalesced, each read (one per COALESCE_S at most) hands its text on as one.
    openai_server.script({"text": "abcd" * 100, "rate": 500})
    model = OpenAIHTTPModel("openai/fake", api_base=openai_server.base_url, api_key="sk-test")
    texts: list[str] = []
    async for event in model.stream(ModelRequest([{"role": "user", "content": "hi"}])):
        if isinstance(event, TextDelta):
            texts.append(event.text)
    await close_shared_client()
    assert "".join(texts) == "abcd" * 100
    assert 1 < len(texts) <= 100 // 4, f"{len(texts)} deltas for 100 events: no batches"


# -- TLS ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A self-signed certificate for 127.0.0.1 (its own authority), and its key, in one file."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    pem = folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
         "subjectAltName=IP:127.0.0.1", "-keyout", str(folder / "key.pem"), "-out", str(pem)],
        check=True, capture_output=True, timeout=30)
    (folder / "both.pem").write_bytes((folder / "key.pem").read_bytes() + pem.read_bytes())
    yield folder


async def test_the_shared_client_streams_over_tls(
    certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate / "both.pem")
    with FakeOpenAIServer(tls=context) as server:
        server.script("Hello over TLS, in several chunks.", "And again, on the same connection.")
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate / "cert.pem"))  # httpx trusts it
        await close_shared_client(force=True)  # a client made after the variable is set
        agent = Agent(name="tls", instructions="Be brief.",
                      model={"id": "openai/fake", "api_base": server.base_url,
                             "api_key": "sk-tls-test"})
        try:
            first = await agent.generate("hi")
            second = await agent.generate("again")
        finally:
            await agent.close()
        assert server.base_url.startswith("https://")
    assert first.text == "Hello over TLS, in several chunks."
    assert second.text == "And again, on the same connection."
    assert len(set(server.peers)) == 1, "the TLS connection was not kept alive"


async def test_an_abort_closes_a_tls_stream_at_once(
    certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate / "both.pem")
    with FakeOpenAIServer(tls=context) as server:
        server.script({"text": "first then much more text", "hold": True})
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate / "cert.pem"))
        await close_shared_client(force=True)
        agent = Agent(name="tls", instructions="Be brief.",
                      model={"id": "openai/fake", "api_base": server.base_url,
                             "api_key": "sk-tls-test"})
        try:
            output = await agent.stream("hi")
            async for _ in output.text_stream:
                output.abort()  # after the first delta: the socket is resting now
            result = await asyncio.wait_for(output.result(), 5)
        finally:
            await agent.close()
        # The server holds the rest back: only the closed connection ends its wait.
        assert await asyncio.to_thread(server.hung_up.wait, 5), "the server saw no close"
    assert result.finish_reason == "abort"
