"""The model layer: the one small interface between the agent loop and any model.

A model turns a :class:`ModelRequest` (OpenAI-style messages and tool specs) into an async
stream of :class:`ModelEvent` values. The loop never knows whether it talks to litellm, the
embedded local model or a :class:`~tui_agent.testing.ScriptedModel`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage | None) -> None:
        if other is not None:
            self.input_tokens += other.input_tokens
            self.output_tokens += other.output_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(slots=True)
class ModelRequest:
    """One model call. ``messages`` are OpenAI-style dicts; a system message may carry
    ``provider_options`` (e.g. Anthropic ``cache_control``) that the adapter passes on."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)  # OpenAI "function" tool specs
    tool_choice: str | dict[str, Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # temperature, max_tokens, ...
    provider_options: dict[str, Any] = field(default_factory=dict)
    abort: asyncio.Event | None = None


@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of a tool call. Pieces with the same ``index`` belong to one call; ``arguments``
    fragments are concatenated into a JSON object."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class StepEnd:
    finish_reason: str  # "stop" | "length" | "tool-calls"
    usage: Usage | None = None


ModelEvent = TextDelta | ToolCallDelta | StepEnd


@runtime_checkable
class LanguageModel(Protocol):
    """What the agent loop needs of a model."""

    @property
    def model_id(self) -> str: ...

    def check_ready(self) -> None:
        """Raise a clear error (missing credential, unknown provider, model not installed)
        before any network call. Cheap after the first call."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...
