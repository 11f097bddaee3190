"""What a run is given when it starts: its plan (resolved from the call and the agent) and its
dependency bundle (what it may call of its agent and runtime, as pydantic-ai's
``GraphAgentDeps``). The run reads these, never the ``Agent`` itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tui_agent.agent.options import RunOptions
    from tui_agent.agent.ports import RunHost, RunMemory
    from tui_agent.agent.result import GenerateResult
    from tui_agent.memory import Memory
    from tui_agent.models.base import LanguageModel
    from tui_agent.store.records import ApprovalRecord
    from tui_agent.tools import Tool


@dataclass
class RunPlan:
    """Everything a run needs, resolved before it starts (so bad input raises early)."""

    model: LanguageModel
    system: list[dict[str, Any]]
    tools: dict[str, Tool]
    tool_specs: list[dict[str, Any]]
    options: RunOptions
    input_messages: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    # The agent's options that may be functions of the request context, resolved for this run.
    memory: Memory | None = None  # the agent's, or its memory function's for this run
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    input_processors: list[Any] = field(default_factory=list[Any])  # the user's objects
    output_processors: list[Any] = field(default_factory=list[Any])
    scorers: dict[str, Any] = field(default_factory=dict[str, Any])
    #: A run that goes on for a parked one whose owner died: the answered calls it executes
    #: first (``store/approvals.py``), before its first model step.
    resume: list[ApprovalRecord] | None = None
    #: A woken run whose start was claimed with its plan's reads (``Store.claim_wake``): the
    #: thread's history as the model gets it and the signals taken; its intake starts from
    #: these instead of a round trip of its own.
    started: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
    #: The plan waited after that claim (other tasks ran): the signals sent meanwhile are
    #: taken before the first model call too.
    started_late: bool = False


@dataclass(frozen=True, slots=True)
class RunDeps:
    """What a run needs from its agent, built by the agent when it starts the run (as
    pydantic-ai's ``GraphAgentDeps``): the run calls these, never the agent's own methods."""

    agent: object  # given to tools and processors as their context's ``agent``
    agent_id: str
    agent_name: str
    memory: RunMemory | None
    max_processor_retries: int
    process_input: Callable[[list[dict[str, Any]], RunView], Awaitable[list[dict[str, Any]]]]
    process_output_chunk: Callable[[str, RunView], Awaitable[str]]
    process_output: Callable[[str, RunView], Awaitable[str]]
    score: Callable[[RunView, GenerateResult], Awaitable[dict[str, Any]]]
    host: RunHost  # the lease owner, the queued run's start, forgetting the run


class RunView(Protocol):
    """A run as its agent's processors and scorers read it (``RunDeps`` callbacks)."""

    @property
    def run_id(self) -> str: ...

    @property
    def plan(self) -> RunPlan: ...

    @property
    def options(self) -> RunOptions: ...

    @property
    def messages(self) -> list[dict[str, Any]]: ...

    @property
    def memory(self) -> RunMemory | None: ...
