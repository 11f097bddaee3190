"""One run of an agent: the step loop (model → tool calls → signals).

A step is one model call (``model_step``) plus the tool calls it asked for (``tool_calls``).
Between steps, every signal pending on the thread is taken into the run (arrival order), and
the loop goes on even if the model had finished. With memory, each message is stored as it
happens and each chunk lands in the thread's event log (``run_log``), the lease is renewed
(``lease_watch``), and the run's end is written with its lease released (``run_end``). The run
gets what it needs as a :class:`~tui_agent.agent.plan.RunDeps` bundle and a
:class:`~tui_agent.agent.plan.RunPlan`, never the agent itself.

Every write a run makes is fenced by its lease (the store refuses it, in the same transaction,
once another run holds the thread): a run that stalled past its TTL stops at its first refused
write or lease renewal, and ends with ``LeaseLostError`` without writing its end
(tests/test_fencing.py). A write that fails otherwise (a full disk) stops the run at once and
ends it failed, its lease released (tests/test_write_failures.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from tui_agent.abort import AbortEvent, CancelOnAbort
from tui_agent.agent.approval_gate import Answer, ApprovalGate, answers_of, declined_text
from tui_agent.agent.lease_watch import Rest, watch_lease
from tui_agent.agent.model_step import ModelStep, StepOutcome
from tui_agent.agent.output import AgentOutput
from tui_agent.agent.plan import RunDeps, RunPlan
from tui_agent.agent.ports import RunMemory
from tui_agent.agent.result import GenerateResult, StepResult, ToolCall, ToolResult
from tui_agent.agent.run_end import RunEnd
from tui_agent.agent.run_intake import RunIntake
from tui_agent.agent.run_log import RunLog
from tui_agent.agent.step_record import (
    assistant_message,
    generate_result,
    step_result,
    tool_message,
    usage_info,
)
from tui_agent.agent.tool_calls import ToolRunner
from tui_agent.errors import RunSetAsideError
from tui_agent.events import (
    FROM_AGENT,
    START,
    STEP_FINISH,
    ChunkType,
    Source,
    StartPayload,
)
from tui_agent.models.base import Usage
from tui_agent.store.records import ApprovalRecord, EventIn, MessageIn
from tui_agent.tools import ToolContext

T = TypeVar("T")


class _Aborted(Exception):
    pass


class Run:
    def __init__(self, deps: RunDeps, plan: RunPlan, output: AgentOutput) -> None:
        self.deps = deps
        self.plan = plan
        self.options = plan.options
        self.output = output
        self.run_id = output.run_id
        self.abort_event = AbortEvent()
        memory = plan.memory if plan.memory is not None else deps.memory
        self.memory: RunMemory | None = memory if self.options.memory else None
        target = self.options.memory
        self.thread_id = target.thread_id if target else None
        self.resource_id = target.resource_id if target else None
        self.messages: list[dict[str, Any]] = []
        self.steps: list[StepResult] = []
        self.usage = Usage()
        self._log: RunLog | None = None
        if self.memory is not None and self.thread_id and self.resource_id:
            self._log = RunLog(self.memory.store, self.thread_id, self.resource_id,
                               self.run_id, self._stop_on_write_error)
        self._end = RunEnd(self.run_id, output, deps.host, self.memory, self._log)
        self._intake = RunIntake(self.run_id, output, self.memory, self._log, self.emit)
        self._finished = False  # the run's end is written and its finish chunk emitted
        # Set once a write of the run's log failed (refused by the fence, the disk full): the
        # run stops at once and ends failed with it.
        self.write_error: Exception | None = None
        context = ToolContext(
            agent=deps.agent,
            run_id=self.run_id,
            resource_id=self.resource_id,
            thread_id=self.thread_id,
            request_context=self.options.request_context,
        )
        hook_metadata = {"agent_id": deps.agent_id, "agent_name": deps.agent_name}
        self._rest = Rest()  # while it waits for a person: the lease watch only renews
        self._tools = ToolRunner(plan.tools, self.options.hooks, context, hook_metadata,
                                 self.emit)
        self._gate = ApprovalGate(
            run_id=self.run_id, agent_id=deps.agent_id, owner=lambda: deps.host.owner,
            tools=plan.tools, require_all=self.options.require_tool_approval,
            timeout_s=self.options.approval_timeout_s, memory=self.memory, log=self._log,
            output=output, parked=deps.host.parked, shown=self._tools.display_args,
            rest=self._rest, abort_event=self.abort_event,
        )
        self._model = ModelStep(self, deps, self.emit, self.abort_event, self._tools)

    # -- chunks -------------------------------------------------------------------------------

    def emit(
        self,
        type_: ChunkType,
        payload: dict[str, Any],
        source: Source = FROM_AGENT,
        stored: EventIn | None = None,
    ) -> None:
        """Push a chunk to the run's output and log it (as ``stored``, if given: a form that
        refers to a stored message instead of copying its text)."""
        self.output.push({"type": type_, "run_id": self.run_id, "from": source, "payload": payload})
        if self._log is not None:
            self._log.add(stored or EventIn(type_, payload, self.run_id, source))

    def _stop_on_write_error(self, error: Exception) -> None:
        """The run's log could not be written: the fence refused it (another run owns the
        thread now) or the store failed (disk full). Stop at once (the abort path cancels the
        model call or tool) and end failed with this error."""
        if self.write_error is None:
            self.write_error = error
        self.abort_event.set()

    # -- the run ------------------------------------------------------------------------------

    async def execute(self) -> GenerateResult:
        """Run to the end. Errors are emitted as an ``error`` chunk, then raised."""
        watcher = None
        try:
            self.emit_start()
            self.messages = await self._intake.start(
                self.plan.system, self.plan.input_messages, self.options.last_messages,
                take_signals=self.plan.resume is None, started=self.plan.started,
                started_late=self.plan.started_late)
            if self.memory is not None and self.thread_id:
                watcher = asyncio.get_running_loop().create_task(watch_lease(
                    self.memory, self.thread_id, self.run_id, self.deps.host.owner,
                    self.abort_event, finished=lambda: self._finished,
                    on_lost=self._stop_on_write_error, rest=self._rest,
                ))
            if self.plan.resume is not None:
                await self._resume(self.plan.resume)
            finish_reason = await self._loop()
            self._intake.accepting = False
            return await self._finish(finish_reason)
        except _Aborted:
            self._intake.accepting = False
            if self.write_error is None:
                return await self._finish_aborted()
            await self._end.failed(self.write_error, self._partial, answer_owed=False)
            raise self.write_error from None
        except RunSetAsideError:
            self._intake.accepting = False  # no end written: the run that takes it over ends
            raise
        except BaseException as error:
            self._intake.accepting = False
            await self._end.failed(error, self._partial, answer_owed=self._intake.answer_owed)
            raise
        finally:
            if watcher is not None:
                watcher.cancel()
            self.output.close()
            self.deps.host.forget(self.run_id)

    def emit_start(self) -> None:
        payload: StartPayload = {"run_id": self.run_id, "agent_id": self.deps.agent_id}
        if self.thread_id and self.resource_id:  # both or neither: a memory target
            payload |= {"thread_id": self.thread_id, "resource_id": self.resource_id}
        self.output.push(
            {"type": START, "run_id": self.run_id, "from": FROM_AGENT, "payload": payload}
        )

    def _keep(self, message: tuple[dict[str, Any], MessageIn]) -> MessageIn:
        """The model gets the first form next; the second is stored."""
        self.messages.append(message[0])
        return message[1]

    def deliver_local(self, signal: dict[str, Any]) -> bool:
        """Hand a signal to this memoryless run (taken between steps). False once the run has
        taken its last signals: it would never see this one."""
        return self._intake.deliver_local(signal)

    async def _loop(self) -> str:
        steps_left = self.options.max_steps
        while True:
            outcome = await self._guarded(self._model.step(len(self.steps), self.messages))
            steps_left -= 1
            tool_results: list[ToolResult] = []
            stored = [self._keep(assistant_message(outcome, self._tools, self.run_id))]
            self._model.parts = []
            if outcome.calls:
                tool_results, stored = await self._guarded(self._calls(outcome.calls, stored))
            step = self._record_step(outcome, tool_results)
            self.emit(
                STEP_FINISH,
                {
                    "step": step.step,
                    "finish_reason": outcome.finish_reason,
                    "usage": step.usage.model_dump(),
                },
            )
            step.signals = await self._intake.take_signals(self.messages, stored)
            if step.signals:
                steps_left = max(steps_left, 1)  # a delivered signal always gets an answer
                continue
            if outcome.calls and steps_left > 0:
                continue
            if outcome.calls:
                return "tool-calls"
            if self.memory is None or await self._end_finished(outcome.finish_reason, False):
                return outcome.finish_reason
            self.steps[-1].signals = await self._intake.take_signals(self.messages)
            steps_left = max(steps_left, 1)

    async def _calls(
        self, calls: list[ToolCall], stored: list[MessageIn]
    ) -> tuple[list[ToolResult], list[MessageIn]]:
        """A step's tool calls: their results in call order, and what is left to store of the
        step. Calls that need a person's approval wait for it (``approval_gate``): the others
        run first, then the run parks, storing what the step produced so far."""
        waiting = self._gate.waiting(calls)
        if not waiting:
            results = await self._tools.run_all(calls)
            return results, stored + [self._tool_message(r) for r in results]
        free = [c for c in calls if c not in waiting]
        first = await self._tools.run_all(free) if free else []
        answers = await self._gate.wait(waiting, stored + [self._tool_message(r) for r in first])
        later = await self._answered(waiting, answers)
        by_id = {r.tool_call_id: r for r in [*first, *later]}
        return [by_id[c.tool_call_id] for c in calls], [self._tool_message(r) for r in later]

    async def _answered(self, calls: list[ToolCall], answers: dict[str, Answer]) -> list[
            ToolResult]:
        """The answered calls executed (approved) or refused (declined), in parallel."""
        return list(await asyncio.gather(*(
            self._tools.run_answered(c, answers[c.tool_call_id].approved,
                                     answers[c.tool_call_id].args,
                                     declined_text(answers[c.tool_call_id].reason))
            for c in calls
        )))

    async def _resume(self, records: list[ApprovalRecord]) -> None:
        """Go on for a parked run whose owner died: its answered calls first (their results
        stored), then the signals that waited, then the model."""
        calls = [ToolCall(tool_call_id=r.tool_call_id, tool_name=r.tool_name, args=r.args)
                 for r in records]
        results = await self._guarded(self._answered(calls, answers_of(records)))
        self.steps.append(StepResult(step=0, tool_calls=calls, tool_results=results,
                                     finish_reason="tool-calls"))
        stored = [self._tool_message(r) for r in results]
        self.steps[-1].signals = await self._intake.take_signals(self.messages, stored)

    def _tool_message(self, result: ToolResult) -> MessageIn:
        return self._keep(tool_message(result, self._tools, self.run_id))

    async def _guarded(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work`` in this task unless the run is aborted first: the abort cancels it
        where it waits (``CancelOnAbort``: no task of its own, no wait on the abort's)."""
        abort = self.abort_event
        if abort.is_set():
            work.close()
            raise _Aborted
        try:
            with CancelOnAbort(abort):
                result = await work
                # An abort can also end the work itself (a model stream closed by the abort
                # event returns normally), or come as it ended: the abort still wins, or the
                # run would finish as "stop".
                if not abort.is_set():
                    return result
        except Exception:  # the aborted work's own error no longer matters
            if abort.is_set():
                raise _Aborted from None
            raise
        raise _Aborted

    # -- bookkeeping --------------------------------------------------------------------------

    def _record_step(self, outcome: StepOutcome, results: list[ToolResult]) -> StepResult:
        self.usage.add(outcome.usage)
        step = step_result(len(self.steps), outcome, results)
        self.steps.append(step)
        return step

    def result(self, finish_reason: str) -> GenerateResult:
        return generate_result(self.run_id, self.steps, self.usage, finish_reason,
                               self.thread_id, self.resource_id)

    # -- the end of a run (written by run_end) ------------------------------------------------

    @property
    def _partial(self) -> str:
        """What the current step has streamed of its answer so far."""
        return "".join(self._model.parts)

    async def _end_finished(self, finish_reason: str, force: bool) -> bool:
        """End finished unless (not ``force``) signals arrived meanwhile: then False, go on."""
        last = self.steps[-1] if self.steps else None
        payload = {
            "finish_reason": finish_reason,
            "usage": usage_info(self.usage).model_dump(),
            "text": last.text if last else "",
        }
        if not await self._end.finished(payload, force=force):
            return False
        self._finished = True
        return True

    async def _finish(self, finish_reason: str) -> GenerateResult:
        result = self.result(finish_reason)
        if not self._finished:
            await self._end_finished(finish_reason, True)
        result.scores = await self.deps.score(self, result)
        return result

    async def _finish_aborted(self) -> GenerateResult:
        partial = self._partial
        if partial:
            self.steps.append(StepResult(step=len(self.steps), text=partial, finish_reason="abort"))
        await self._end.aborted(partial)
        return self.result("abort")

