"""What the notification inbox and its dispatcher need from an agent, as typed Protocols (the
``Agent`` satisfies them without naming them; this layer never imports the agent's, nor the
memory that holds the inbox: no circle, even for the type checker)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tui_agent.store.contract import Store


class DispatcherHandle(Protocol):
    """A dispatcher as its host keeps it (``dispatcher.NotificationDispatcher``)."""

    def running_in(self, loop: asyncio.AbstractEventLoop) -> bool: ...

    def poke(self) -> None: ...

    async def stop_and_wait(self) -> None: ...


class DispatcherHost(Protocol):
    """Where an agent keeps its dispatcher in this process (its runtime)."""

    dispatcher: DispatcherHandle | None

    def ensure_dispatcher(self) -> None: ...


class InboxMemory(Protocol):
    """The memory whose store holds the inbox (``tui_agent.memory.Memory``)."""

    @property
    def store(self) -> Store: ...


class NotifyingAgent(Protocol):
    """An agent whose inbox is delivered: its memory, its runtime, and its ``send_signal``."""

    @property
    def id(self) -> str: ...

    @property
    def memory(self) -> InboxMemory | None: ...

    @property
    def runtime(self) -> DispatcherHost: ...

    def send_signal(
        self, signal: Any, *, run_id: Any = None, resource_id: Any = None,
        thread_id: Any = None, if_active: Any = None, if_idle: Any = None,
    ) -> Any: ...
