"""The agent layer's seams: what each part of it needs from the others and from the store,
as small typed Protocols (structural: the real classes satisfy them without naming them).

- A run (``run.py`` and its parts) needs :class:`RunMemory` (its :class:`RunStore`) and
  :class:`RunHost` (the runtime that started it).
- Routing, subscriptions and the runtime need :class:`AgentCore` from their agent, not the
  ``Agent`` class: so none of them imports ``agent.py``, and ``agent/`` has no import circle
  (tests/test_layers.py).

Only types live here: nothing of ``agent/`` is imported at run time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tui_agent.agent.output import AgentOutput
    from tui_agent.memory import Memory
    from tui_agent.notifications.ports import DispatcherHandle
    from tui_agent.store.records import (
        ApprovalRecord,
        EventIn,
        FinishOutcome,
        MessageIn,
        MessageRecord,
        WakeStart,
    )
    from tui_agent.tools import Tool


class RunStore(Protocol):
    """What a run writes and reads in the store: its log, its signals, its end, its lease."""

    async def append(
        self, thread_id: str, resource_id: str, *, messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (), fence: str | None = None,
    ) -> None: ...

    def append_soon(
        self, thread_id: str, resource_id: str, *, messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (), fence: str | None = None,
    ) -> asyncio.Future[None]: ...

    async def claim_signals(
        self, thread_id: str, resource_id: str, run_id: str, *,
        messages_before: Sequence[MessageIn] = (), events_before: Sequence[EventIn] = (),
    ) -> list[dict[str, Any]]: ...

    async def claim_with_history(
        self, thread_id: str, resource_id: str, run_id: str, *, last_messages: int,
    ) -> tuple[list[MessageRecord], list[dict[str, Any]]]: ...

    async def finish_run(
        self, thread_id: str, resource_id: str, run_id: str, *, owner: str, status: str,
        finish_reason: str | None, error: str | None = None,
        messages: Sequence[MessageIn] = (), events: Sequence[EventIn] = (), force: bool = False,
        keep_pending: bool = False, resume: bool = False,
    ) -> FinishOutcome: ...

    async def renew_lease(
        self, thread_id: str, run_id: str, owner: str, ttl_s: float
    ) -> tuple[bool, bool]: ...

    async def abort_requested(self, thread_id: str, run_id: str) -> bool: ...

    async def set_run_scores(self, run_id: str, scores: dict[str, Any]) -> None: ...

    # -- tool calls waiting for approval (store/approvals.py), and hearing their answers --

    async def park_run(
        self, thread_id: str, resource_id: str, run_id: str, *, agent_id: str | None,
        approvals: Sequence[Any], messages: Sequence[MessageIn] = (),
        events: Sequence[EventIn] = (),
    ) -> None: ...

    async def take_answers(
        self, thread_id: str, run_id: str
    ) -> list[ApprovalRecord] | None: ...

    async def list_approvals(
        self, *, status: str | None = "pending", thread_id: str | None = None,
        run_id: str | None = None, limit: int = 500,
    ) -> list[ApprovalRecord]: ...

    async def answer_approval(
        self, approval_id: str, *, approved: bool, args: Any = None, reason: str | None = None,
        owner: str, ttl_s: float, agent_id: str | None = None, take_over_dead: bool = True,
    ) -> Any: ...

    async def release_parked(self, thread_id: str, run_id: str) -> bool: ...

    async def data_version(self) -> int: ...

    @property
    def local_commits(self) -> int: ...


class RunMemory(Protocol):
    """The memory a run writes to: its store, its lease timing, and the thread's history."""

    @property
    def store(self) -> RunStore: ...

    @property
    def lease_ttl_s(self) -> float: ...

    @property
    def lease_renew_s(self) -> float: ...

    async def model_history(
        self, thread_id: str, last_messages: int | None = None
    ) -> list[dict[str, Any]]: ...

    async def history_and_signals(
        self, thread_id: str, resource_id: str, run_id: str, last_messages: int | None = None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]: ...


class RunHost(Protocol):
    """The runtime that started a run, as the run sees it."""

    @property
    def owner(self) -> str: ...

    def forget(self, run_id: str) -> None: ...

    def start_queued_run(self, thread_id: str, resource_id: str, run_id: str) -> None: ...

    @property
    def parked(self) -> ParkedRegistry:
        """This runtime's runs waiting for answers to tool calls (``approval_gate``)."""
        ...


class ParkedRun(Protocol):
    """A run of this process waiting for answers (``approval_gate.Parked``)."""

    @property
    def memoryless(self) -> bool: ...

    @property
    def calls(self) -> Mapping[str, Any]:  # tool call id → its ApprovalIn
        ...

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    def answer_here(self, tool_call_id: str, answer: Any) -> None: ...


class ParkedRegistry(Protocol):
    """A runtime's parked runs, by run id (``approval_gate.ParkedRuns``)."""

    def add(self, parked: Any) -> None: ...

    def discard(self, parked: Any) -> None: ...

    def get(self, run_id: str) -> ParkedRun | None: ...

    def tell(self, run_id: str) -> None: ...


class LocalRun(Protocol):
    """A live run of this process, as routing and subscriptions see it."""

    @property
    def run_id(self) -> str: ...

    @property
    def thread_id(self) -> str | None: ...

    @property
    def memory(self) -> RunMemory | None: ...

    @property
    def output(self) -> AgentOutput: ...

    @property
    def abort_event(self) -> asyncio.Event: ...

    def deliver_local(self, signal: dict[str, Any]) -> bool: ...


class AgentRuntime(Protocol):
    """An agent's runtime, as routing and subscriptions use it (``runtime.ThreadRuntime``)."""

    dispatcher: DispatcherHandle | None
    sender_only: bool

    @property
    def owner(self) -> str: ...

    def run(self, run_id: str) -> LocalRun | None: ...

    def run_on(self, thread_id: str) -> LocalRun | None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]: ...

    def track(self, future: asyncio.Future[Any]) -> None: ...

    def ensure_dispatcher(self) -> None: ...

    def rescue_soon(self, thread_id: str) -> None: ...

    def wake_claim(self, stream_options: dict[str, Any]) -> int | None: ...

    def claimed_early(self, run_id: str, started: WakeStart) -> None: ...

    def delivered(self, run_id: str, signal_id: str) -> None: ...

    async def start_woken_run(
        self, thread_id: str, resource_id: str, run_id: str, stream_options: dict[str, Any],
        resume: list[ApprovalRecord] | None = None, started: WakeStart | None = None,
    ) -> AgentOutput: ...

    @property
    def parked(self) -> ParkedRegistry: ...


class AgentCore(Protocol):
    """What routing, subscriptions, the runtime and the dispatcher read of their agent."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def memory(self) -> Memory | None: ...

    @property
    def hooks(self) -> dict[str, Any]: ...

    @property
    def default_options(self) -> Any:  # a dict, or the user's function of the context
        ...

    @property
    def runtime(self) -> AgentRuntime: ...

    async def resolve_default_options(self, request_context: Any) -> dict[str, Any]: ...

    async def resolve_tools(self, request_context: Any = None) -> dict[str, Tool]: ...

    def send_signal(
        self, signal: Any, *, run_id: Any = None, resource_id: Any = None,
        thread_id: Any = None, if_active: Any = None, if_idle: Any = None,
    ) -> Any: ...
