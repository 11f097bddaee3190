"""What several test files share: the types of conftest's ``agents`` and ``stores`` factories,
ScriptedModel handlers (``Seen`` records every call, ``Held`` waits at a gate), and ``until``,
the bounded wait on a condition (the app's tests have a Pilot form in ``helpers.app``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tui_agent import Agent, SqliteStore
from tui_agent.testing import ScriptedModel

AgentFactory = Callable[..., Agent]
StoreFactory = Callable[..., SqliteStore]


async def until(condition: Callable[[], Any], what: str, timeout: float = 10.0) -> None:
    """Let the loop run until ``condition()`` holds; fail naming ``what`` after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out after {timeout} s waiting for {what}"
        await asyncio.sleep(0.005)


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


class Held:
    """A model handler that sets ``entered`` when called, then answers ``reply`` once ``gate``
    is set: the run stays mid-step for as long as a test needs (no sleeps)."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.entered, self.gate = asyncio.Event(), asyncio.Event()

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.entered.set()
        await self.gate.wait()
        return self.reply


class HeldFirstCall:
    """A scripted model whose first call waits at a gate (the run stays mid-call while a test
    sends into it); every call's messages are kept."""

    def __init__(self) -> None:
        self.entered, self.gate = asyncio.Event(), asyncio.Event()
        self.calls: list[list[dict[str, Any]]] = []
        self.model = ScriptedModel(handler=self._reply)

    async def _reply(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls.append(messages)
        if len(self.calls) == 1:
            self.entered.set()
            await self.gate.wait()
        return "noted"
