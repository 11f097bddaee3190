"""What the notification inbox and its dispatcher need from an agent, as typed Protocols (the
``Agent`` satisfies them without naming them; this layer never imports the agent's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tui_agent.memory import Memory
    from tui_agent.notifications.dispatcher import NotificationDispatcher


class DispatcherHost(Protocol):
    """Where an agent keeps its dispatcher in this process (its runtime)."""

    dispatcher: NotificationDispatcher | None

    def ensure_dispatcher(self) -> None: ...


class NotifyingAgent(Protocol):
    """An agent whose inbox is delivered: its memory, its runtime, and its ``send_signal``."""

    @property
    def id(self) -> str: ...

    @property
    def memory(self) -> Memory | None: ...

    @property
    def runtime(self) -> DispatcherHost: ...

    def send_signal(self, signal: Any, **target: Any) -> Any: ...
