"""What several test files share: the types of conftest's ``agents`` and ``stores`` factories,
and ``Seen``, a ScriptedModel handler that records every call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tui_agent import Agent, SqliteStore

AgentFactory = Callable[..., Agent]
StoreFactory = Callable[..., SqliteStore]


class Seen:
    """A model handler (``ScriptedModel(handler=seen)``) that answers "ok" and records the
    messages of every call."""

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls.append(messages)
        return "ok"

    def user_texts(self) -> list[str]:
        return [m["content"] for call in self.calls for m in call if m["role"] == "user"]
