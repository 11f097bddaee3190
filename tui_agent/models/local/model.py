"""``LocalModel``: the adapter the agent loop talks to.

It finds the weights and runtime (``installed``), starts the llama.cpp server once per process
(``server``) and sends requests to it over the direct OpenAI-protocol path (``OpenAIHTTPModel``;
``route="litellm"`` sends them through litellm instead). The direct path needs no litellm, so a
chat on the local model never waits for litellm's import (``tests/test_openai_http.py``,
``test_local_chat_does_not_import_litellm_before_its_first_token``). Without
tools a request goes as plain chat (``chat_template``); with tools the reply is constrained to
JSON and decoded back into text or a tool call (``constrained``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tui_agent.errors import ConfigError
from tui_agent.models.base import ModelEvent, ModelRequest
from tui_agent.models.local.chat_template import derived_request, plain_messages
from tui_agent.models.local.constrained import active_tools, stream_with_tools
from tui_agent.models.local.installed import check_runtime, known_model, locate_weights
from tui_agent.models.local.server import LocalServer, default_threads, get_server, loaded_server


class LocalModel:
    """``local/<name>``: a small model that runs on this machine, no key or network needed."""

    def __init__(
        self,
        name: str = "smollm2",
        *,
        threads: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
        route: str = "auto",
    ) -> None:
        known_model(name)
        if route not in ("auto", "litellm"):
            raise ConfigError(f"LocalModel route must be 'auto' or 'litellm', got {route!r}")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ConfigError(f"LocalModel threads must be an int >= 1, got {threads!r}")
        self._name = name
        self._threads = threads
        self._model_path = model_path
        self._route = route
        self._weights: Path | None = None  # set by check_ready

    @property
    def model_id(self) -> str:
        return f"local/{self._name}"

    @property
    def route(self) -> str:
        """``direct`` (the default) or ``litellm`` (forced)."""
        return "litellm" if self._route == "litellm" else "direct"

    @property
    def threads(self) -> int:
        return self._threads if self._threads is not None else default_threads()

    def check_ready(self) -> None:
        """ModelNotInstalledError naming the pip command if the runtime or weights are missing."""
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
        inner = _inner_model(server, self.route)
        tools = active_tools(request)
        if tools:
            events = stream_with_tools(inner, request, tools)
        else:
            events = inner.stream(derived_request(request, plain_messages(request.messages), {}))
        async for event in events:
            yield event


def _inner_model(server: LocalServer, route: str) -> Any:
    """The model that talks to the llama.cpp server's OpenAI-compatible endpoint."""
    base = f"{server.base_url}/v1"
    if route == "litellm":
        from tui_agent.models.litellm_model import LiteLLMModel  # imports litellm: only when used

        return LiteLLMModel("openai/smollm2", api_base=base, api_key=server.api_key)
    from tui_agent.models.openai_http import OpenAIHTTPModel

    return OpenAIHTTPModel("openai/smollm2", api_base=base, api_key=server.api_key)
