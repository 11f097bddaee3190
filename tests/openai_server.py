"""A small OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

    with FakeOpenAIServer() as server:
        server.script("Hello there", {"tool_calls": [{"name": "add", "arguments": {"a": 1}}]})
        ...  # point OPENAI_BASE_URL at server.base_url and call the model
        server.requests[0]["messages"]  # what the model was sent

A reply is one of:
- a string: streamed as text chunks of ``chunk_size`` characters;
- ``{"text": str | list[str], "tool_calls": [{"name", "arguments" (dict or JSON str), "id"?}],
  "finish_reason": str, "usage": {"prompt_tokens", "completion_tokens"}, "hold": True|"start"}``;
  tool-call arguments are split over several chunks; ``hold=True`` makes the server send the
  first delta, then wait for :meth:`release`, ``hold="start"`` waits before answering at all
  (tests of aborts use these instead of sleeps); a client that hangs up during a hold is
  counted in ``hangups`` (and sets ``hung_up``) at once; ``cut``
  makes it hang up after the first delta, mid-body; ``stream_error: "..."`` sends an error
  event (``data: {"error": {...}}``) after the first delta and ends the stream; ``rate: n``
  paces the chunks at n per second (benchmarks);
- ``{"error": 500, "message": "...", "retry_after": "2"}``: that HTTP status with an
  OpenAI-style error body (and that ``Retry-After`` header; a 429 says ``0`` unless told).

``tls=ssl_context`` serves HTTPS (``base_url`` says ``https``).

``peers`` holds each chat request's client address (the same one: a reused connection).

Without a script, every request gets ``default_reply``. ``handler(body) -> reply`` overrides both.

``FakeOpenAIServerProcess`` runs one in a child process of its own (benchmarks: its threads do
not share the GIL with the client being measured).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Reply = str | dict[str, Any]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}


class FakeOpenAIServer:
    """Serves ``POST /v1/chat/completions`` on 127.0.0.1 from a background thread."""

    def __init__(self, *, chunk_size: int = 4, default_reply: Reply = "ok", port: int = 0,
                 tls: ssl.SSLContext | None = None) -> None:
        self._port = port
        self._tls = tls
        self.chunk_size = chunk_size
        self.default_reply = default_reply
        self.handler: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.other_requests: list[dict[str, Any]] = []
        self.peers: list[tuple[str, int]] = []
        self.hangups = 0
        self.hung_up = threading.Event()
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._generation = 0  # counts resets: a hold belongs to the test that scripted it
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        self._httpd = _QuietServer(("127.0.0.1", self._port), _make_handler(self))
        self._httpd.daemon_threads = True
        if self._tls is not None:
            self._httpd.socket = self._tls.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        name="fake-openai-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # never leave a held stream hanging
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (what OPENAI_BASE_URL / api_base take)."""
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    # -- scripting -------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        """Queue replies, consumed one per request in order."""
        with self._lock:
            self._replies.extend(replies)

    def release(self) -> None:
        """Let a ``hold`` reply send the rest of its chunks."""
        self._release.set()

    def reset(self) -> None:
        with self._lock:
            self._generation += 1
            self._replies.clear()
            self.requests.clear()
            self.request_headers.clear()
            self.other_requests.clear()
            self.peers.clear()
            self.hangups = 0
        self.hung_up.clear()
        self._release.clear()

    def _next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.request_headers.append(headers)
            if self.handler is not None:
                return self.handler(body)
            return self._replies.popleft() if self._replies else self.default_reply


# The child: its server's options come as JSON (argv[2]); its first stdout line is the base URL;
# it serves until its stdin closes.
_CHILD = """\
import json, sys
sys.path.insert(0, sys.argv[1])
from openai_server import FakeOpenAIServer
with FakeOpenAIServer(**json.loads(sys.argv[2])) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


class FakeOpenAIServerProcess:
    """A :class:`FakeOpenAIServer` in a child process of its own (``sys.executable``): its
    threads do not share the GIL with the client being measured.

        with FakeOpenAIServerProcess(default_reply={"text": "hi", "rate": 500}) as server:
            ...  # point the client at server.base_url

    The options are FakeOpenAIServer's that JSON can carry (no ``tls``, no ``handler``); the
    child cannot be scripted, so :meth:`reset` is a no-op. Guarantee: entering returns with the
    child serving at ``base_url``, or raises (a RuntimeError naming the child's exit status if
    it died first) with the child gone; leaving closes its stdin (its signal to stop), waits up
    to ``STOP_S`` for it, then kills it and waits: once left, the child has exited. No wait is
    unbounded (``START_S`` for the URL).
    """

    START_S = 30.0
    STOP_S = 10.0

    def __init__(self, *, chunk_size: int = 4, default_reply: Reply = "ok",
                 port: int = 0) -> None:
        self._options = json.dumps({"chunk_size": chunk_size, "default_reply": default_reply,
                                    "port": port})
        self.process: subprocess.Popen[str] | None = None  # kept once stopped: its returncode
        self._base_url: str | None = None

    def start(self) -> FakeOpenAIServerProcess:
        assert self.process is None, "already started"
        here = str(Path(__file__).resolve().parent)
        self.process = subprocess.Popen([sys.executable, "-c", _CHILD, here, self._options],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self._base_url = self._read_url(self.process)
        except BaseException:
            self.stop()
            raise
        return self

    def _read_url(self, child: subprocess.Popen[str]) -> str:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], self.START_S)
        if not ready:
            raise RuntimeError(f"the fake server's process printed no URL in {self.START_S:g} s")
        url = child.stdout.readline().strip()
        if url:
            return url
        try:  # its stdout closed: it is exiting
            status = child.wait(self.STOP_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError("the fake server's process closed its stdout without printing "
                               "its URL") from None
        raise RuntimeError(f"the fake server's process exited with status {status} before "
                           "printing its URL")

    def stop(self) -> None:
        """Close the child's stdin, wait ``STOP_S`` for it to exit, else kill it and wait."""
        child = self.process
        if child is None or child.stdin is None or child.stdin.closed:
            return
        self._base_url = None
        with contextlib.suppress(BrokenPipeError):
            child.stdin.close()
        try:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(self.STOP_S)
        finally:  # timed out, or interrupted: never leave it running
            if child.poll() is None:
                child.kill()
                child.wait(self.STOP_S)
            if child.stdout is not None:
                child.stdout.close()

    def __enter__(self) -> FakeOpenAIServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL the child serves (what OPENAI_BASE_URL / api_base take)."""
        assert self._base_url is not None, "server not started"
        return self._base_url

    def reset(self) -> None:
        """Nothing to clear: the child is never scripted (FakeOpenAIServer's interface)."""


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # clients hanging up are normal


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        fake = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real provider
    disable_nagle_algorithm = True  # small SSE writes must not wait for delayed ACKs (40 ms)
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send_json(400, _error_body(400, "body is not JSON"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            # Other APIs (e.g. Anthropic's /v1/messages) are only recorded, to inspect what a
            # provider adapter would send.
            self.fake.other_requests.append({"path": self.path, "body": body, "headers": headers})
            self._send_json(404, _error_body(404, f"no route {self.path}"))
            return
        self.fake.peers.append(self.client_address)
        reply = _normalize(self.fake._next_reply(body, headers), self.fake.chunk_size)
        if reply.get("hold") == "start" and not self._hold():
            return
        if "error" in reply:
            status = int(reply["error"])
            self._send_json(status, _error_body(status, reply.get("message", "scripted error")),
                            retry_after=reply.get("retry_after"))
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._send_json(200, _completion(body, reply))

    def _hold(self) -> bool:
        """Wait for :meth:`FakeOpenAIServer.release` (30 s at most); False, and counted in
        ``hangups``, as soon as the client closes the connection meanwhile. A hold outlived by
        its test (the server was reset: a release and the next reset can both come between two
        looks of this thread, which waits for the GIL) ends quietly, counted nowhere."""
        deadline = time.monotonic() + 30
        generation = self.fake._generation
        while not self.fake._release.wait(timeout=0.005) and time.monotonic() < deadline:
            if self.fake._generation != generation:
                self.close_connection = True
                return False
            if self._client_hung_up():
                with self.fake._lock:
                    if self.fake._generation == generation:
                        self.fake.hangups += 1
                        self.fake.hung_up.set()
                self.close_connection = True
                return False
        return True

    def _client_hung_up(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        if isinstance(self.connection, ssl.SSLSocket):
            return True  # mid-answer a TLS client sends nothing but its close (no peeking)
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _send_json(self, status: int, payload: dict[str, Any],
                   retry_after: str | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if retry_after is not None or status == 429:
            self.send_header("Retry-After", str(retry_after if retry_after is not None else 0))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
        """Stream the reply as SSE, one chunk of the chunked body per event. Writes are held
        in ``_pending`` and sent together where a real provider's would be: the headers with
        the first events (up to the first delta, then flushed at once), the rest as soon as
        they are made unless paced (``rate``) or held, when each goes out on its own. One
        segment instead of one per event: the client reads the first delta in one wake."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._headers_buffer.append(b"\r\n")  # end_headers, without its flush: sent below
        self._pending = [b"".join(self._headers_buffer)]
        self._headers_buffer = []
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        rate = float(reply.get("rate") or 0)
        started = time.monotonic()
        try:
            for i, event in enumerate(_sse_events(body, reply, include_usage)):
                if rate:  # on a schedule, so a late chunk does not delay the ones after it
                    self._flush()
                    time.sleep(max(0.0, started + i / rate - time.monotonic()))
                self._write_chunk(f"data: {event}\n\n".encode())
                if i == 1 or rate:
                    self._flush()  # the first delta goes out at once (and each paced one)
                if i == 1 and reply.get("hold") is True and not self._hold():
                    return  # after the role chunk and one delta; the client hung up
                if i == 1 and reply.get("cut"):
                    self.close_connection = True  # hang up mid-stream, body unfinished
                    return
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")  # end of the chunked body
            self._flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client closed the stream (abort)

    def _write_chunk(self, data: bytes) -> None:
        self._pending.append(b"%x\r\n%s\r\n" % (len(data), data))

    def _flush(self) -> None:
        if self._pending:
            data, self._pending = b"".join(self._pending), []
            self.wfile.write(data)


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _normalize(reply: Reply, chunk_size: int) -> dict[str, Any]:
    if isinstance(reply, str):
        reply = {"text": reply}
    reply = dict(reply)
    text = reply.get("text", "")
    if isinstance(text, str):
        text = [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)]
    reply["text"] = text
    calls = []
    for i, call in enumerate(reply.get("tool_calls") or []):
        args = call.get("arguments", call.get("args", {}))
        args = args if isinstance(args, str) else json.dumps(args)
        calls.append({"id": call.get("id", f"call_{i}"), "name": call["name"], "arguments": args})
    reply["tool_calls"] = calls
    reply.setdefault("finish_reason", "tool_calls" if calls else "stop")
    return reply


def _usage(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, int]:
    usage = dict(reply.get("usage") or {})
    usage.setdefault("prompt_tokens", len(json.dumps(body.get("messages", []))) // 4)
    usage.setdefault("completion_tokens", len(reply["text"]) + len(reply["tool_calls"]))
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def _split(text: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sse_events(body: dict[str, Any], reply: dict[str, Any], include_usage: bool) -> Iterator[str]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "fake"), "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return json.dumps({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in reply["text"]:
        yield chunk({"content": piece})
        if reply.get("stream_error"):
            yield json.dumps({"error": {"message": reply["stream_error"], "type": "server_error"}})
            return
    for index, call in enumerate(reply["tool_calls"]):
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["name"], "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        for part in _split(call["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, reply["finish_reason"])
    if include_usage:
        yield json.dumps({**base, "choices": [], "usage": _usage(body, reply)})


def _completion(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "".join(reply["text"]) or None}
    if reply["tool_calls"]:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in reply["tool_calls"]
        ]
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": reply["finish_reason"]}],
            "usage": _usage(body, reply)}
