"""``RoutedModel``: a ``provider/model`` whose path is known only once litellm resolved it.

litellm stays the router: it knows each provider's base URL and key variable. When it sends a
provider to an OpenAI-compatible chat-completions endpoint (Groq, DeepSeek, Together, Fireworks,
xAI, LM Studio, vLLM, …), the call goes over the direct HTTP path (``OpenAIHTTPModel``) with the
base URL and key litellm resolved; otherwise through litellm itself (``LiteLLMModel``).
``openai/…`` needs no litellm to be routed and never comes here (``resolve._from_config``).
Tested in ``tests/test_openai_http.py`` (``test_an_openai_compatible_provider_goes_direct``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from tui_agent.models.base import LanguageModel, ModelEvent, ModelRequest
from tui_agent.models.litellm_model import (
    LiteLLMModel,
    litellm_loaded,
    load_litellm,
    openai_compatible_endpoint,
)
from tui_agent.models.openai_http import OpenAIHTTPModel


class RoutedModel:
    """Checks and routes through litellm; streams over the path litellm's routing allows."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._config: dict[str, Any] = {"api_key": api_key, "api_base": api_base,
                                        "headers": headers, "extra": extra}
        self._litellm = LiteLLMModel(model, **self._config)
        self._chosen: LanguageModel | None = None

    @property
    def model_id(self) -> str:
        return self._litellm.model_id

    @property
    def route(self) -> str:
        """``direct``, ``litellm``, or ``undecided`` before the first ``ensure_ready``."""
        if self._chosen is None:
            return "undecided"
        return "direct" if isinstance(self._chosen, OpenAIHTTPModel) else "litellm"

    def __repr__(self) -> str:
        return f"RoutedModel({self.model_id!r}, route={self.route!r})"

    def check_ready(self) -> None:
        self._litellm.check_ready()

    async def ensure_ready(self) -> None:
        if not litellm_loaded():
            await asyncio.to_thread(load_litellm)
        self._litellm.check_ready()
        if self._chosen is None:
            self._chosen = self._choose()

    def _choose(self) -> LanguageModel:
        endpoint = openai_compatible_endpoint(self.model_id, self._config["api_base"],
                                              self._config["api_key"])
        if endpoint is None:
            return self._litellm
        wire_model, base, key = endpoint
        return OpenAIHTTPModel(self.model_id, api_key=key, api_base=base,
                               headers=self._config["headers"], extra=self._config["extra"],
                               wire_model=wire_model)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        await self.ensure_ready()
        assert self._chosen is not None
        async for event in self._chosen.stream(request):
            yield event
