"""Offline models for tests: drive the agent loop with no network and no provider.

``ScriptedModel(replies=[...])`` answers each model call with the next reply; a ``handler`` may
compute replies from what the model was sent. A reply is:

- a string: streamed as text deltas of ``chunk_size`` characters, ``delay_s`` apart;
- ``{"tool_calls": [{"name": ..., "args": {...}}, ...]}`` (optionally with ``"text"``): streamed
  as tool-call deltas, the JSON arguments split across several deltas;
- an exception instance: raised from the model call (to test provider errors).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from itertools import count
from typing import Any

from tui_agent._util import maybe_await
from tui_agent.errors import ArgumentTypeError, ConfigError, TuiAgentError
from tui_agent.models.base import (
    ModelEvent,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallDelta,
    Usage,
)

Reply = str | dict[str, Any] | BaseException
Handler = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Any]


class ScriptedModelExhausted(TuiAgentError):
    """The model was called more often than it had replies."""


class ScriptedModel:
    def __init__(
        self,
        replies: list[Reply] | None = None,
        handler: Handler | None = None,
        chunk_size: int = 8,
        delay_s: float = 0.0,
    ) -> None:
        if replies is None and handler is None:
            raise ConfigError("ScriptedModel needs replies=[...] or handler=fn(messages, tools)")
        if chunk_size < 1:
            raise ConfigError("chunk_size must be at least 1")
        self._replies = list(replies or [])
        self._handler = handler
        self.chunk_size = chunk_size
        self.delay_s = delay_s
        self.requests: list[ModelRequest] = []  # every call, for assertions
        self._ids = count(1)

    @property
    def model_id(self) -> str:
        return "scripted/test"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def check_ready(self) -> None:
        return None

    async def _next_reply(self, request: ModelRequest) -> Reply:
        if self._replies:
            return self._replies.pop(0)
        if self._handler is not None:
            return await maybe_await(self._handler(request.messages, request.tools))
        raise ScriptedModelExhausted(
            f"ScriptedModel has no reply left for call {len(self.requests)}"
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        reply = await self._next_reply(request)
        if isinstance(reply, BaseException):
            raise reply
        usage = Usage(input_tokens=_count_tokens(request.messages))
        if isinstance(reply, str):
            async for piece in self._chunks(reply, request):
                yield TextDelta(piece)
            usage.output_tokens = len(reply.split())
            yield StepEnd("stop", usage)
            return
        if not isinstance(reply, dict):
            raise ArgumentTypeError(
                f"ScriptedModel reply must be str, dict or exception, not {reply!r}")
        if reply.get("text"):
            async for piece in self._chunks(reply["text"], request):
                yield TextDelta(piece)
        calls = reply.get("tool_calls") or []
        for index, call in enumerate(calls):
            async for delta in self._tool_call_deltas(index, call, request):
                yield delta
        usage.output_tokens = sum(len(json.dumps(c.get("args", {}))) // 4 for c in calls)
        yield StepEnd("tool-calls" if calls else reply.get("finish_reason", "stop"), usage)

    async def _chunks(self, text: str, request: ModelRequest) -> AsyncIterator[str]:
        for start in range(0, len(text), self.chunk_size):
            if request.abort is not None and request.abort.is_set():
                return
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            yield text[start : start + self.chunk_size]

    async def _tool_call_deltas(
        self, index: int, call: dict[str, Any], request: ModelRequest
    ) -> AsyncIterator[ToolCallDelta]:
        call_id = call.get("id") or f"call_{next(self._ids)}"
        args = call.get("args", {})
        encoded = args if isinstance(args, str) else json.dumps(args)
        yield ToolCallDelta(index=index, id=call_id, name=call["name"])
        async for piece in self._chunks(encoded, request):
            yield ToolCallDelta(index=index, arguments=piece)


def _count_tokens(messages: list[dict[str, Any]]) -> int:
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content.split())
    return total
