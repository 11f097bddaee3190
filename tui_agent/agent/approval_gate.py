"""A run's stop before a tool call that needs a person's approval (issue 24).

A call needs approval when its tool says so (``create_tool(require_approval=True)``) or the run
was asked to hold every call (``generate(..., require_tool_approval=True)``). At such a step the
run executes the calls that need none, then *parks*: with memory it stores, in one fenced
transaction, what the step produced, its log so far (every chunk it emitted is durable before
it waits) and the waiting calls (``Store.park_run``), then emits one ``tool-call-approval``
chunk per call and waits, holding its lease (renewed as ever; an abort still stops it). It
goes on when every call is answered, told at once by an answer given in this process (its
:class:`Parked` entry) and by the store's change feed for one given in another process: no
polling; meanwhile its lease watch only renews (``lease_watch.Rest``) and it looks for an
abort asked elsewhere at each such wake, so a run waiting for hours costs no query between
renewals. ``approval_timeout_s``: a call still unanswered then is declined with that reason.

A run without memory parks in this process only: its answers come from this process's
``approve_tool_call``/``decline_tool_call``. Tested by tests/test_approvals.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tui_agent.agent.lease_watch import Rest
from tui_agent.agent.result import ToolCall
from tui_agent.errors import ApprovalError, RunSetAsideError
from tui_agent.events import FROM_AGENT, TOOL_CALL_APPROVAL
from tui_agent.store.approvals import ApprovalIn
from tui_agent.store.changes import ChangeFeed
from tui_agent.store.records import ApprovalRecord, EventIn, MessageIn

if TYPE_CHECKING:
    from tui_agent.agent.output import AgentOutput
    from tui_agent.agent.ports import ParkedRegistry, RunMemory
    from tui_agent.agent.run_log import RunLog
    from tui_agent.tools import Tool


@dataclass(slots=True)
class LocalAnswer:
    """An answer given in this process to a memoryless run's call."""

    approved: bool
    args: Any = None
    reason: str | None = None


@dataclass(eq=False)
class Parked:
    """A run of this process waiting for answers: ``told`` is set by every answer given here
    (a memoryless run's are kept in ``answers``)."""

    run_id: str
    calls: dict[str, ApprovalIn]
    tools: dict[str, Tool]
    memoryless: bool
    told: asyncio.Event = field(default_factory=asyncio.Event)
    answers: dict[str, LocalAnswer] = field(default_factory=dict[str, LocalAnswer])
    aside: bool = False  # its process closes: stop waiting, leave the calls pending

    def set_aside(self) -> None:
        """Its process closes the agent: the run stops waiting here, its calls stay pending
        in the store and whoever answers them goes on with it (``RunSetAsideError``)."""
        self.aside = True
        self.told.set()

    def answer_here(self, tool_call_id: str, answer: LocalAnswer) -> None:
        """A memoryless run's answer (``ApprovalError`` if the call waits for none)."""
        if tool_call_id not in self.calls:
            raise ApprovalError(
                f"run {self.run_id} waits for no approval of tool call {tool_call_id!r}"
            )
        if tool_call_id in self.answers:
            raise ApprovalError(f"tool call {tool_call_id!r} was answered already")
        self.answers[tool_call_id] = answer
        self.told.set()


class ParkedRuns:
    """The runs of one runtime that wait for answers, by run id."""

    def __init__(self) -> None:
        self._parked: dict[str, Parked] = {}

    def add(self, parked: Parked) -> None:
        self._parked[parked.run_id] = parked

    def discard(self, parked: Parked) -> None:
        if self._parked.get(parked.run_id) is parked:
            del self._parked[parked.run_id]

    def get(self, run_id: str) -> Parked | None:
        return self._parked.get(run_id)

    def set_aside_all(self) -> list[str]:
        """Set aside every run waiting with memory (its process closes); their ids."""
        stored = [p for p in self._parked.values() if not p.memoryless]
        for parked in stored:
            parked.set_aside()
        return [p.run_id for p in stored]

    def tell(self, run_id: str) -> None:
        """An answer to one of run ``run_id``'s calls was stored: it looks now."""
        parked = self._parked.get(run_id)
        if parked is not None:
            parked.told.set()


@dataclass(slots=True)
class Answer:
    """What the run does with one waiting call: run it (with ``args``) or not (``reason``)."""

    approved: bool
    args: Any
    reason: str | None = None


def declined_text(reason: str | None) -> str:
    """The error a declined call's result carries (what the model reads)."""
    return f"a person declined this tool call: {reason or 'no reason given'}"


def answers_of(records: Sequence[ApprovalRecord]) -> dict[str, Answer]:
    """Stored answers by tool call id (an approval's edited input wins over the model's)."""
    return {
        r.tool_call_id: Answer(
            r.status == "approved",
            r.answer_args if r.answer_args is not None else r.args,
            r.reason,
        )
        for r in records
    }


class ApprovalGate:
    """One run's approvals: which calls wait, parking on them, and the answers."""

    def __init__(
        self,
        *,
        run_id: str,
        agent_id: str,
        owner: Callable[[], str],
        tools: dict[str, Tool],
        require_all: bool,
        timeout_s: float | None,
        memory: RunMemory | None,
        log: RunLog | None,
        output: AgentOutput,
        parked: ParkedRegistry,
        shown: Callable[[ToolCall], Awaitable[Any]],
        rest: Rest,
        abort_event: asyncio.Event,
    ) -> None:
        self._run_id, self._agent_id, self._owner = run_id, agent_id, owner
        self._tools, self._require_all, self._timeout_s = tools, require_all, timeout_s
        self._memory, self._log, self._output = memory, log, output
        self._parked = parked
        self._shown = shown  # a call's arguments as the stream shows them (hooks["transform"])
        self._rest, self._abort = rest, abort_event  # the lease watch only renews meanwhile

    def waiting(self, calls: Sequence[ToolCall]) -> list[ToolCall]:
        """The calls that must wait for a person (a call of an unknown tool fails anyway)."""
        return [
            c
            for c in calls
            if c.tool_name in self._tools
            and (self._require_all or self._tools[c.tool_name].require_approval)
        ]

    async def wait(
        self, calls: Sequence[ToolCall], produced: Sequence[MessageIn]
    ) -> dict[str, Answer]:
        """Park on ``calls`` (storing ``produced``, the step's messages, first) and wait for
        every answer; by tool call id."""
        options = {"require_tool_approval": True} if self._require_all else {}
        approvals = [ApprovalIn(c.tool_call_id, c.tool_name, c.args, options) for c in calls]
        parked = Parked(
            self._run_id,
            {a.tool_call_id: a for a in approvals},
            self._tools,
            memoryless=self._log is None,
        )
        self._parked.add(parked)
        try:
            chunks = [
                self._chunk(a, await self._shown(c)) for a, c in zip(approvals, calls, strict=True)
            ]
            await self._store(approvals, produced, chunks)
            for chunk in chunks:
                self._output.push(chunk)
            if self._log is None:
                return await self._local_answers(parked)
            return await self._stored_answers(parked)
        finally:
            self._parked.discard(parked)

    def _chunk(self, approval: ApprovalIn, shown_args: Any) -> dict[str, Any]:
        payload = {
            "approval_id": approval.id,
            "tool_call_id": approval.tool_call_id,
            "tool_name": approval.tool_name,
            "args": shown_args,
        }
        return {
            "type": TOOL_CALL_APPROVAL,
            "run_id": self._run_id,
            "from": FROM_AGENT,
            "payload": payload,
        }

    async def _store(
        self,
        approvals: list[ApprovalIn],
        produced: Sequence[MessageIn],
        chunks: list[dict[str, Any]],
    ) -> None:
        """Everything the run said so far, durable, and the calls it waits on: one write."""
        if self._memory is None or self._log is None:
            return
        log = self._log
        await log.settle()  # a flush under way ends first: nothing is written after parking
        events = [
            *log.take(),
            *(EventIn(TOOL_CALL_APPROVAL, c["payload"], self._run_id) for c in chunks),
        ]
        await self._memory.store.park_run(
            log.thread_id,
            log.resource_id,
            self._run_id,
            agent_id=self._agent_id,
            approvals=approvals,
            messages=produced,
            events=events,
        )

    async def _local_answers(self, parked: Parked) -> dict[str, Answer]:
        deadline = self._deadline()
        while len(parked.answers) < len(parked.calls):
            parked.told.clear()
            if not await self._until(parked.told, None, deadline):
                for call_id in parked.calls:
                    parked.answers.setdefault(call_id, LocalAnswer(False, None, self._expired()))
        return {
            call_id: Answer(
                a.approved, a.args if a.args is not None else parked.calls[call_id].args, a.reason
            )
            for call_id, a in parked.answers.items()
        }

    async def _stored_answers(self, parked: Parked) -> dict[str, Answer]:
        assert self._memory is not None and self._log is not None
        store, thread_id = self._memory.store, self._log.thread_id
        deadline = self._deadline()
        watch = ChangeFeed.of(store).watch(local=True)  # answers from other processes
        self._rest.begin()
        try:
            while True:
                if parked.aside:
                    await store.release_parked(thread_id, self._run_id)
                    raise RunSetAsideError(
                        f"run {self._run_id} was set aside while it waited for approval (this"
                        " process closed the agent): its calls stay pending, and whoever"
                        " answers them goes on with it"
                    )
                parked.told.clear()
                watch.event.clear()  # before the read: a commit after it sets it again
                if await store.abort_requested(thread_id, self._run_id):
                    self._abort.set()  # asked from another process (the run stops, guarded)
                if not await store.list_approvals(run_id=self._run_id, status="pending"):
                    taken = await store.take_answers(thread_id, self._run_id)
                    if taken is not None:
                        return answers_of(taken)
                if not await self._until(parked.told, watch.event, deadline):
                    await self._decline_unanswered()
                    deadline = None
        finally:
            self._rest.end()
            watch.close()

    async def _decline_unanswered(self) -> None:
        assert self._memory is not None
        store = self._memory.store
        for record in await store.list_approvals(run_id=self._run_id, status="pending"):
            with contextlib.suppress(ApprovalError):  # answered meanwhile: that answer stands
                await store.answer_approval(
                    record.id,
                    approved=False,
                    reason=self._expired(),
                    owner=self._owner(),
                    ttl_s=self._memory.lease_ttl_s,
                    take_over_dead=False,
                )

    def _expired(self) -> str:
        return f"no answer within {self._timeout_s:g} s"

    def _deadline(self) -> float | None:
        if self._timeout_s is None:
            return None
        return asyncio.get_running_loop().time() + self._timeout_s

    async def _until(
        self, told: asyncio.Event, changed: asyncio.Event | None, deadline: float | None
    ) -> bool:
        """Until told or a change (True), or the deadline (False). An abort cancels the wait
        (the run awaits it guarded)."""
        waits = [asyncio.ensure_future(told.wait())]
        if changed is not None:
            waits.append(asyncio.ensure_future(changed.wait()))
        left = None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            done, _ = await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        return bool(done)
