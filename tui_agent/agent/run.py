"""One run of an agent: the step loop (model → tool calls → signals) and what it writes.

A step is one model call plus the tool calls it asked for. Between steps, every signal pending on
the thread is taken into the run (arrival order), and the loop goes on even if the model had
finished. With memory, each message is stored as it happens and each chunk lands in the thread's
event log (text deltas in small batches, flushed on a tick shared by the process's runs so their
flushes share one group commit), so other processes can watch the run live. A reader sees the
first text delta as soon as it is pushed, however fast the model streams
(tests/test_group_commit.py).

Every write a run makes is fenced by its lease (the store refuses it, in the same transaction,
once another run holds the thread): a run that stalled past its TTL stops at its first refused
write or lease renewal, and ends with ``LeaseLostError`` without writing its end
(tests/test_fencing.py). A write that fails otherwise (a full disk) stops the run at once and
ends it failed, its lease released (tests/test_write_failures.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tui_agent._util import call_off_loop, dump_if_model, why_unstorable
from tui_agent.agent.inputs import model_input
from tui_agent.agent.output import AgentOutput
from tui_agent.agent.processors import RetryStep
from tui_agent.agent.result import (
    GenerateResult,
    StepResult,
    ToolCall,
    ToolResult,
    UsageInfo,
)
from tui_agent.errors import LeaseLostError, ProcessorError
from tui_agent.events import (
    ABORT,
    DATA_USER_MESSAGE,
    ERROR,
    FINISH,
    FROM_AGENT,
    FROM_USER,
    START,
    STEP_FINISH,
    STEP_START,
    TEXT_DELTA,
    TOOL_CALL,
    TOOL_RESULT,
    ChunkType,
    Source,
    StartPayload,
    echo_source,
    echo_type,
)
from tui_agent.models.base import ModelRequest, StepEnd, TextDelta, ToolCallDelta, Usage
from tui_agent.store.records import EventIn, MessageIn
from tui_agent.tools import (
    INPUT_PHASE,
    OUTPUT_PHASE,
    Tool,
    ToolContext,
    ToolInputError,
    TransformPolicy,
)

if TYPE_CHECKING:
    from tui_agent.agent.options import RunOptions
    from tui_agent.agent.runtime import ThreadRuntime
    from tui_agent.memory import Memory

LOG_FLUSH_S = 0.05  # text deltas reach the log (and other processes) at most this late
ABORT_POLL_S = 0.1  # how often a run looks for an abort requested from another process
# A model that streams without ever waiting (a scripted or cached reply) would otherwise push its
# whole answer before a reader sees the first delta: the run lets readers in after its first
# delta and then at least this often (see _ReaderTurns).
YIELD_EVERY_S = 0.001


class _ReaderTurns:
    """When a model step must let readers in: after its first delta, then once YIELD_EVERY_S
    has passed without the loop going round. A stream that waits for the network lets the loop
    round by itself (a coalesced read brings several deltas, then waits): no extra turn is
    taken for it, which would cost a wake of the run and of each reader per read."""

    __slots__ = ("_due", "_loop", "_went_round")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._due = 0.0
        self._went_round = False

    def due(self) -> bool:
        """True if the caller must ``await asyncio.sleep(0)`` (then call :meth:`given`)."""
        now = self._loop.time()
        if now < self._due:
            return False
        self._due = now + YIELD_EVERY_S
        if not self._went_round:
            return True
        self._watch()  # readers have had their turn since the last look
        return False

    def given(self) -> None:
        self._due = self._loop.time() + YIELD_EVERY_S
        self._watch()

    def _watch(self) -> None:
        self._went_round = False
        self._loop.call_soon(self._round)

    def _round(self) -> None:
        self._went_round = True


class _Aborted(Exception):
    pass


@dataclass(slots=True)
class _StepOutcome:
    text: str
    calls: list[ToolCall]
    finish_reason: str
    usage: Usage


@dataclass
class RunPlan:
    """Everything a run needs, resolved before it starts (so bad input raises early)."""

    model: Any
    system: list[dict[str, Any]]
    tools: dict[str, Tool]
    tool_specs: list[dict[str, Any]]
    options: RunOptions
    input_messages: list[dict[str, Any]] = field(default_factory=list)
    # The agent's options that may be functions of the request context, resolved for this run.
    memory: Memory | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    input_processors: list[Any] = field(default_factory=list)
    output_processors: list[Any] = field(default_factory=list)
    scorers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunDeps:
    """What a run needs from its agent, built by the agent when it starts the run (as
    pydantic-ai's ``GraphAgentDeps``): the run calls these, never the agent's own methods."""

    agent: Any  # given to tools and processors as their context's ``agent``
    agent_id: str
    agent_name: str
    memory: Memory | None
    max_processor_retries: int
    process_input: Callable[[list[Any], Run], Awaitable[list[Any]]]
    process_output_chunk: Callable[[str, Run], Awaitable[str]]
    process_output: Callable[[str, Run], Awaitable[str]]
    score: Callable[[Run, GenerateResult], Awaitable[dict[str, Any]]]
    runtime: ThreadRuntime  # the lease owner, the queued run's start, forgetting the run


class Run:
    def __init__(self, deps: RunDeps, plan: RunPlan, output: AgentOutput) -> None:
        self.deps = deps
        self.plan = plan
        self.options = plan.options
        self.output = output
        self.run_id = output.run_id
        self.abort_event = asyncio.Event()
        memory = plan.memory if plan.memory is not None else deps.memory
        self.memory: Memory | None = memory if self.options.memory else None
        target = self.options.memory
        self.thread_id = target.thread_id if target else None
        self.resource_id = target.resource_id if target else None
        self.messages: list[dict[str, Any]] = []
        self.steps: list[StepResult] = []
        self.usage = Usage()
        self._log: list[EventIn] = []
        self._partial_parts: list[str] = []  # the answer streamed so far in this step
        self._flusher: asyncio.Task[None] | None = None
        self._flush_waiting = False
        self.local_signals: list[dict[str, Any]] = []  # memoryless runs only
        self.accepting_signals = True
        self._finished = False  # the run's end is written and its finish chunk emitted
        #: Transcript forms of tool payloads (hooks["transform"]), by ("in"|"out", call id),
        #: until the step's messages are stored.
        self._transcript: dict[tuple[str, str], Any] = {}
        # Set once a write of the run's log failed (refused by the fence, the disk full): the
        # run stops at once and ends failed with it.
        self.write_error: Exception | None = None
        self._answer_owed = False  # it took signals and has not answered them yet
        self._tool_context = ToolContext(
            agent=deps.agent,
            run_id=self.run_id,
            resource_id=self.resource_id,
            thread_id=self.thread_id,
            request_context=self.options.request_context,
        )

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
        if self.memory is not None:
            self._log.append(stored or EventIn(type_, payload, self.run_id, source))
            if self._flusher is None or self._flusher.done():
                self._flush_waiting = True
                self._flusher = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        # On a clock shared by every run in the process: their flushes fall due in the same
        # loop iteration and share one group commit (see SqliteStore.write).
        await _until(_next_flush_tick(asyncio.get_running_loop().time()))
        self._flush_waiting = False  # from here on it writes: let it finish, never cancel
        try:
            await self._flush(grouped=True)
        except Exception as error:
            self._stop_on_write_error(error)

    def _stop_on_write_error(self, error: Exception) -> None:
        """The run's log could not be written: the fence refused it (another run owns the
        thread now) or the store failed (disk full). Stop at once (the abort path cancels the
        model call or tool) and end failed with this error."""
        if self.write_error is None:
            self.write_error = error
        self.abort_event.set()

    async def _settle_flusher(self) -> None:
        """At the end of a run: a flush still waiting is dropped (the run's last write takes
        the log), one already writing is awaited so no write outlives the run."""
        flusher = self._flusher
        if flusher is None or flusher.done():
            return
        if self._flush_waiting:
            flusher.cancel()
        await asyncio.gather(flusher, return_exceptions=True)

    def _take_log(self) -> list[EventIn]:
        events, self._log = _merge_text_deltas(self._log), []
        return events

    async def _flush(
        self, messages: list[MessageIn] | None = None, *, grouped: bool = False
    ) -> None:
        events = self._take_log()
        if (events or messages) and self.memory is not None:
            assert self.thread_id and self.resource_id
            store = self.memory.store
            append = store.append_soon if grouped else store.append  # grouped: a tick's flush
            await append(
                self.thread_id,
                self.resource_id,
                messages=messages or (),
                events=events,
                fence=self.run_id,
            )

    # -- the run ------------------------------------------------------------------------------

    async def execute(self) -> GenerateResult:
        """Run to the end. Errors are emitted as an ``error`` chunk, then raised."""
        watcher = None
        try:
            self.emit_start()
            await self._prepare()
            if self.memory is not None:
                watcher = asyncio.get_running_loop().create_task(self._watch_lease())
            finish_reason = await self._loop()
            self.accepting_signals = False
            return await self._finish(finish_reason)
        except _Aborted:
            self.accepting_signals = False
            if self.write_error is None:
                return await self._finish_aborted()
            await self._finish_failed(self.write_error)
            raise self.write_error from None
        except BaseException as error:
            self.accepting_signals = False
            await self._finish_failed(error)
            raise
        finally:
            if watcher is not None:
                watcher.cancel()
            self.output.close()
            self.deps.runtime.forget(self)

    def emit_start(self) -> None:
        payload: StartPayload = {"run_id": self.run_id, "agent_id": self.deps.agent_id}
        if self.thread_id and self.resource_id:  # both or neither: a memory target
            payload |= {"thread_id": self.thread_id, "resource_id": self.resource_id}
        self.output.push(
            {"type": START, "run_id": self.run_id, "from": FROM_AGENT, "payload": payload}
        )

    async def _prepare(self) -> None:
        self.messages = list(self.plan.system)
        inputs = self.plan.input_messages
        model_inputs = [model_input(m) for m in inputs]  # user text neutralised, as signals'
        if self.memory is None:
            self.messages.extend(model_inputs)
            return
        assert self.thread_id and self.resource_id
        history = await self.memory.model_history(self.thread_id, self.options.last_messages)
        self.messages.extend(history)
        if inputs:
            # Stored as the model saw them, each in its own role (a system message stays one).
            stored = [MessageIn(m["role"], m["content"], self.run_id) for m in model_inputs]
            for message, m in zip(stored, inputs, strict=True):
                if m["role"] != "user":
                    continue  # the caller's own system/assistant turns: history, not chat
                self.emit(
                    DATA_USER_MESSAGE,
                    {"id": message.id, "type": "user", "contents": m["content"]},
                    FROM_USER,
                    self._input_echo(message, m["content"]),
                )
            await self._flush(stored)
            self.messages.extend(model_inputs)
        await self._take_signals()

    def _input_echo(self, message: MessageIn, contents: Any) -> EventIn | None:
        """The stored echo of a user input: it refers to the input's stored message (stored in
        the same transaction) for its contents when they are the message's content, so the
        text is stored once (tests/test_store_once.py); None (a copy) when neutralising
        changed them."""
        if message.content is not contents and message.content != contents:
            return None
        payload = {"id": message.id, "type": "user"}
        return EventIn(DATA_USER_MESSAGE, payload, self.run_id, FROM_USER, message_id=message.id)

    async def _take_signals(self, messages: list[MessageIn] | None = None) -> list[str]:
        """Store what the step produced and take the pending signals, in one transaction.
        Without memory, the signals sent to this run in this process are taken instead."""
        if messages and messages[0].role == "assistant" and not messages[0].metadata:
            self._answer_owed = False  # a final answer (no tool calls) to what it took
        if self.memory is None:
            taken, self.local_signals = self.local_signals, []
        else:
            assert self.thread_id and self.resource_id
            taken = await self.memory.store.claim_signals(
                self.thread_id,
                self.resource_id,
                self.run_id,
                messages_before=messages or (),
                events_before=self._take_log(),
            )
        self._answer_owed = self._answer_owed or bool(taken)
        for signal in taken:
            self.messages.append(signal["message"])
            self.output.push(
                {
                    "type": echo_type(signal["type"]),
                    "run_id": self.run_id,
                    "from": echo_source(signal["type"]),
                    "payload": signal["data"],
                }
            )
        return [signal["id"] for signal in taken]

    def deliver_local(self, signal: dict[str, Any]) -> bool:
        """Hand a signal to this memoryless run (taken between steps). False once the run has
        taken its last signals: it would never see this one."""
        if not self.accepting_signals:
            return False
        self.local_signals.append(signal)
        return True

    async def _loop(self) -> str:
        steps_left = self.options.max_steps
        while True:
            outcome = await self._guarded(self._step(len(self.steps)))
            steps_left -= 1
            tool_results: list[ToolResult] = []
            stored = [self._assistant_message(outcome)]
            if outcome.calls:
                tool_results = await self._guarded(self._run_tools(outcome.calls))
                stored += [self._tool_message(r) for r in tool_results]
            step = self._record_step(outcome, tool_results)
            self.emit(
                STEP_FINISH,
                {
                    "step": step.step,
                    "finish_reason": outcome.finish_reason,
                    "usage": step.usage.model_dump(),
                },
            )
            step.signals = await self._take_signals(stored)
            if step.signals:
                steps_left = max(steps_left, 1)  # a delivered signal always gets an answer
                continue
            if outcome.calls and steps_left > 0:
                continue
            if outcome.calls:
                return "tool-calls"
            if self.memory is None or await self._try_release(outcome.finish_reason):
                return outcome.finish_reason
            self.steps[-1].signals = await self._take_signals()
            steps_left = max(steps_left, 1)

    async def _guarded(self, work: Any) -> Any:
        """Await ``work`` unless the run is aborted first (then cancel it)."""
        task = asyncio.ensure_future(work)
        if self.abort_event.is_set():
            task.cancel()
            raise _Aborted
        aborted = asyncio.ensure_future(self.abort_event.wait())
        try:
            await asyncio.wait((task, aborted), return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        # An abort can also end the work itself (a model stream closed by the abort event
        # returns normally): the abort still wins, or the run would finish as "stop".
        if not task.done() or self.abort_event.is_set():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:  # the aborted work's own error no longer matters
                pass
            raise _Aborted
        return task.result()

    # -- one model step -----------------------------------------------------------------------

    async def _step(self, index: int) -> _StepOutcome:
        retries = 0
        while True:
            self.emit(STEP_START, {"step": index})
            # a copy: a processor that edits in place must not rewrite the run's history
            messages = await self.deps.process_input(list(self.messages), self)
            outcome = await self._call_model(messages)
            if outcome.calls:
                return outcome  # not an answer: a result processor must not drop its calls
            try:
                outcome.text = await self.deps.process_output(outcome.text, self)
                return outcome
            except RetryStep as retry:
                retries += 1
                if retries > self.deps.max_processor_retries:
                    raise ProcessorError(
                        f"output processor asked for a retry {retries} times "
                        f"(max_processor_retries={self.deps.max_processor_retries}): "
                        f"{retry.reason}"
                    ) from None
                self.messages.append(
                    {
                        "role": "user",
                        "content": f"<system-reminder>Your previous answer was rejected: "
                        f"{retry.reason}. Answer again.</system-reminder>",
                    }
                )

    async def _call_model(self, messages: list[dict[str, Any]]) -> _StepOutcome:
        request = ModelRequest(
            messages=list(messages),  # a snapshot: the loop keeps appending to its own list
            tools=self.plan.tool_specs if self.options.tool_choice != "none" else [],
            tool_choice=self.options.tool_choice if self.plan.tool_specs else None,
            settings=self.options.model_settings,
            provider_options=self.options.provider_options,
            abort=self.abort_event,
        )
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        end = StepEnd("stop")
        self._partial_parts = text  # joined only if the run ends mid-answer
        processed = bool(self.plan.output_processors)  # else a delta is shown as it comes
        turns = _ReaderTurns(asyncio.get_running_loop())
        async for event in self.plan.model.stream(request):
            if type(event) is TextDelta:
                if event.text:
                    # The answer is what the caller saw: a redacting stream processor must
                    # not leak the original into the result or the stored message.
                    chunk = (await self.deps.process_output_chunk(event.text, self) if processed
                             else event.text)
                    if chunk:
                        text.append(chunk)
                        self.emit(TEXT_DELTA, {"text": chunk})
                        if turns.due():
                            await asyncio.sleep(0)  # let readers see what was pushed
                            turns.given()
            elif type(event) is ToolCallDelta:
                _add_tool_delta(calls, event)
            elif type(event) is StepEnd:
                end = event
        tool_calls = [self._tool_call(index, c) for index, c in sorted(calls.items())]
        for call in tool_calls:
            self.emit(TOOL_CALL, await self._shown_call(call))
        finish = "tool-calls" if tool_calls else end.finish_reason
        return _StepOutcome("".join(text), tool_calls, finish, end.usage or Usage())

    def _tool_call(self, index: int, raw: dict[str, Any]) -> ToolCall:
        arguments = raw["arguments"]
        try:
            args = json.loads(arguments) if arguments else {}
        except json.JSONDecodeError:
            args = arguments  # kept raw; validation reports it to the model
        call_id = raw.get("id") or f"call_{self.run_id[:8]}_{len(self.steps)}_{index}"
        return ToolCall(tool_call_id=call_id, tool_name=raw.get("name") or "", args=args)

    # -- tools --------------------------------------------------------------------------------

    async def _run_tools(self, calls: list[ToolCall]) -> list[ToolResult]:
        if len(calls) == 1:
            return [await self._run_tool(calls[0])]
        return list(await asyncio.gather(*(self._run_tool(call) for call in calls)))

    async def _run_tool(self, call: ToolCall) -> ToolResult:
        result = await self._execute_tool(call)
        self.emit(TOOL_RESULT, await self._shown_result(call, result))
        return result

    # -- hooks["transform"]: what the stream shows and the transcript keeps of a tool payload --

    def _transform_policy(self, tool_name: str) -> TransformPolicy | None:
        tool = self.plan.tools.get(tool_name)
        if tool is not None and tool.transform is not None:
            return tool.transform  # the tool's own wins over the agent's / the call's
        return self.options.hooks.get("transform")

    async def _shown_call(self, call: ToolCall) -> dict[str, Any]:
        """The ``tool-call`` chunk's payload (display form); keeps the transcript form."""
        payload = call.model_dump()
        policy = self._transform_policy(call.tool_name)
        if policy is None:
            return payload
        context = {"tool_name": call.tool_name, "tool_call_id": call.tool_call_id,
                   "input": call.args}
        payload["args"] = await policy.apply("display", INPUT_PHASE, context, call.args)
        self._transcript[("in", call.tool_call_id)] = await policy.apply(
            "transcript", INPUT_PHASE, context, call.args
        )
        return payload

    async def _shown_result(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        """The ``tool-result`` chunk's payload (display form); keeps the transcript form."""
        payload = result.model_dump()
        policy = self._transform_policy(call.tool_name)
        if policy is None or result.is_error:
            return payload
        context = {"tool_name": call.tool_name, "tool_call_id": call.tool_call_id,
                   "input": call.args, "output": result.result}
        payload["result"] = await policy.apply("display", OUTPUT_PHASE, context, result.result)
        self._transcript[("out", call.tool_call_id)] = await policy.apply(
            "transcript", OUTPUT_PHASE, context, result.result
        )
        return payload

    async def _execute_tool(self, call: ToolCall) -> ToolResult:
        tool = self.plan.tools.get(call.tool_name)
        if tool is None:
            known = ", ".join(sorted(self.plan.tools)) or "none"
            return _error_result(call, f"unknown tool {call.tool_name!r} (tools: {known})")
        try:
            tool_input = tool.parse_input(call.args)
        except ToolInputError as error:
            return _error_result(call, str(error))
        context = ToolContext(**{**self._tool_context_fields(), "tool_call_id": call.tool_call_id})
        hook_input = {
            "tool_name": call.tool_name,
            "input": tool_input,
            "context": context,
            "metadata": {"agent_id": self.deps.agent_id, "agent_name": self.deps.agent_name},
            "tool_call_id": call.tool_call_id,
        }
        hooks = self.options.hooks
        before = hooks.get("before_tool_call")
        output: Any = None
        error: BaseException | None = None
        decision = None
        try:
            decision = await call_off_loop(before, hook_input) if before else None
        except Exception as raised:  # as a tool that raises: the tool does not run, the model
            error = raised  # gets the error as the call's result, the run goes on
        if isinstance(decision, dict) and decision.get("proceed") is False:
            output = decision.get("output")
        elif error is None:
            try:
                output = await tool.run(tool_input, context)
            except Exception as raised:  # a tool's failure is the model's business, not a crash
                error = raised
        after = hooks.get("after_tool_call")
        if after:
            await call_off_loop(after, {**hook_input, "output": output, "error": error})
        if error is not None:
            return _error_result(call, f"{type(error).__name__}: {error}")
        result = dump_if_model(output)
        unstorable = why_unstorable(result)
        if unstorable is not None:
            return _error_result(call, f"the tool's result cannot be stored: {unstorable}")
        return ToolResult(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args,
            result=result,
        )

    def _tool_context_fields(self) -> dict[str, Any]:
        c = self._tool_context
        return {
            "agent": c.agent,
            "run_id": c.run_id,
            "resource_id": c.resource_id,
            "thread_id": c.thread_id,
            "request_context": c.request_context,
        }

    # -- bookkeeping --------------------------------------------------------------------------

    def _assistant_message(self, outcome: _StepOutcome) -> MessageIn:
        message: dict[str, Any] = {"role": "assistant", "content": outcome.text or None}
        metadata: dict[str, Any] = {}
        if outcome.calls:
            message["tool_calls"] = [_call_entry(c, c.args) for c in outcome.calls]
            # What the store keeps: each call's transcript form (hooks["transform"]).
            metadata["tool_calls"] = [
                _call_entry(c, self._transcript.pop(("in", c.tool_call_id), c.args))
                for c in outcome.calls
            ]
        self.messages.append(message)
        self._partial_parts = []
        return MessageIn("assistant", outcome.text, self.run_id, metadata=metadata)

    def _tool_message(self, result: ToolResult) -> MessageIn:
        self.messages.append(
            {"role": "tool", "tool_call_id": result.tool_call_id,
             "content": _tool_result_text(result)}
        )
        kept = self._transcript.pop(("out", result.tool_call_id), result.result)
        if kept is not result.result:  # the transcript form (hooks["transform"])
            result = result.model_copy(update={"result": kept})
        return MessageIn(
            "tool",
            _tool_result_text(result),
            self.run_id,
            metadata={
                "tool_call_id": result.tool_call_id,
                "tool_name": result.tool_name,
                "is_error": result.is_error,
                "result": result.result,
            },
        )

    def _record_step(self, outcome: _StepOutcome, results: list[ToolResult]) -> StepResult:
        self.usage.add(outcome.usage)
        step = StepResult(
            step=len(self.steps),
            text=outcome.text,
            tool_calls=outcome.calls,
            tool_results=results,
            finish_reason=outcome.finish_reason,
            usage=_usage_info(outcome.usage),
        )
        self.steps.append(step)
        return step

    def result(self, finish_reason: str) -> GenerateResult:
        last = self.steps[-1] if self.steps else None
        return GenerateResult(
            run_id=self.run_id,
            text=last.text if last else "",
            tool_calls=[c for s in self.steps for c in s.tool_calls],
            tool_results=[r for s in self.steps for r in s.tool_results],
            usage=_usage_info(self.usage),
            finish_reason=finish_reason,
            steps=self.steps,
            thread_id=self.thread_id,
            resource_id=self.resource_id,
        )

    # -- the end of a run ---------------------------------------------------------------------

    async def _try_release(self, finish_reason: str) -> bool:
        """Finish and release the thread unless signals arrived (then: go on)."""
        return await self._end_finished(finish_reason, force=False)

    async def _end_finished(self, finish_reason: str, *, force: bool) -> bool:
        """Write the run's end (with memory), emit ``finish``, and start the queued run the
        store handed us. False if signals arrived meanwhile and ``force`` was not given."""
        payload = self._finish_payload(finish_reason)
        outcome = await self._end_in_store("finished", finish_reason, payload, force=force)
        if outcome is not None and not outcome.finished:
            return False
        self._finished = True
        self.output.push(
            {"type": FINISH, "run_id": self.run_id, "from": FROM_AGENT, "payload": payload}
        )
        self._start_next(outcome)
        return True

    def _start_next(self, outcome: Any) -> None:
        """The store handed this run's lease to the run of a queued message: start it here."""
        if outcome is not None and outcome.next_run_id:
            runtime = self.deps.runtime
            runtime.start_queued_run(self.thread_id, self.resource_id, outcome.next_run_id)

    def _finish_payload(self, finish_reason: str) -> dict[str, Any]:
        last = self.steps[-1] if self.steps else None
        return {
            "finish_reason": finish_reason,
            "usage": _usage_info(self.usage).model_dump(),
            "text": last.text if last else "",
        }

    async def _end_in_store(
        self,
        status: str,
        finish_reason: str,
        payload: dict[str, Any],
        *,
        force: bool,
        error: str | None = None,
        messages: list[MessageIn] | None = None,
        keep_pending: bool = False,
        resume: bool = False,
    ) -> Any:
        if self.memory is None:
            return None
        assert self.thread_id and self.resource_id
        final_type = {"finished": FINISH, "aborted": ABORT, "failed": ERROR}[status]
        await self._settle_flusher()
        pending = self._take_log()
        events = [*pending, EventIn(final_type, payload, self.run_id)]
        outcome = await self.memory.store.finish_run(
            self.thread_id,
            self.resource_id,
            self.run_id,
            owner=self.deps.runtime.owner,
            status=status,
            finish_reason=finish_reason,
            error=error,
            messages=messages or (),
            events=events,
            force=force,
            keep_pending=keep_pending,
            resume=resume,
        )
        if not outcome.finished:
            self._log[:0] = pending  # the run goes on: nothing was written, keep its events
        return outcome

    async def _finish(self, finish_reason: str) -> GenerateResult:
        result = self.result(finish_reason)
        if not self._finished:
            await self._end_finished(finish_reason, force=True)
        result.scores = await self.deps.score(self, result)
        return result

    @property
    def _partial(self) -> str:
        """What the current step has streamed of its answer so far."""
        return "".join(self._partial_parts)

    async def _finish_aborted(self) -> GenerateResult:
        partial = self._partial
        messages = []
        if partial:
            messages.append(
                MessageIn("assistant", partial, self.run_id, metadata={"aborted": True})
            )
            self.steps.append(StepResult(step=len(self.steps), text=partial, finish_reason="abort"))
        payload = {"finish_reason": "abort", "text": partial}
        outcome = await asyncio.shield(
            self._end_in_store("aborted", "abort", payload, force=True, messages=messages)
        )
        self.output.push(
            {"type": ABORT, "run_id": self.run_id, "from": FROM_AGENT, "payload": payload}
        )
        self._start_next(outcome)  # a message queued behind an aborted run still runs
        return self.result("abort")

    async def _finish_failed(self, error: BaseException) -> None:
        # Cancelled (its process is exiting): what waits for the thread is left waiting, for
        # a live process to take over (Runtime.rescue_stranded), not stored as answered.
        cancelled = isinstance(error, asyncio.CancelledError)
        message = f"{type(error).__name__}: {error or 'the run was cancelled'}"
        payload = {"error": message, "finish_reason": "error"}
        self.output.push(
            {"type": ERROR, "run_id": self.run_id, "from": FROM_AGENT, "payload": payload}
        )
        if isinstance(error, LeaseLostError):
            return  # the thread is another run's now: this run's end stays "interrupted"
        # What was already said stays said: the partial answer is stored, marked failed.
        said = self._partial
        partial = [] if not said else [
            MessageIn("assistant", said, self.run_id, metadata={"failed": True})
        ]
        try:
            outcome = await asyncio.shield(
                self._end_in_store(
                    "failed", "error", payload, force=True, error=message, messages=partial,
                    keep_pending=cancelled, resume=cancelled and self._answer_owed,
                )
            )
        except Exception:
            # The store refused the full end (a disk too full for the partial text and the log
            # still pending): end it with nothing else, so the thread is released at once.
            outcome = await self._end_failed_bare(message, payload, keep_pending=cancelled)
        self._start_next(outcome)  # and behind a failed one

    async def _end_failed_bare(
        self, message: str, payload: dict[str, Any], *, keep_pending: bool
    ) -> Any:
        """The smallest end a failed run can write: its status and error event, the lease
        released. If even that fails, the run's own error is what matters: its lease expires
        after the TTL and another process takes the thread over."""
        if self.memory is None:
            return None
        assert self.thread_id and self.resource_id
        with contextlib.suppress(Exception):
            return await asyncio.shield(self.memory.store.finish_run(
                self.thread_id,
                self.resource_id,
                self.run_id,
                owner=self.deps.runtime.owner,
                status="failed",
                finish_reason="error",
                error=message,
                events=[EventIn(ERROR, payload, self.run_id)],
                force=True,
                keep_pending=keep_pending,
            ))
        return None

    async def _watch_lease(self) -> None:
        """Renew the thread lease every ``lease_renew_s`` and notice aborts asked from other
        processes."""
        assert self.memory is not None and self.thread_id
        store, ttl = self.memory.store, self.memory.lease_ttl_s
        renew_every = self.memory.lease_renew_s
        last_renewal = time.monotonic()
        while not self.abort_event.is_set():
            await asyncio.sleep(ABORT_POLL_S)
            if time.monotonic() - last_renewal >= renew_every:
                ours, abort = await store.renew_lease(
                    self.thread_id, self.run_id, self.deps.runtime.owner, ttl
                )
                last_renewal = time.monotonic()
                if not ours:
                    if not self._finished:  # declared dead while still going: stop now
                        self._stop_on_write_error(LeaseLostError(
                            f"run {self.run_id} lost the lease of thread {self.thread_id!r}"
                            " (it stalled past its TTL and was interrupted)"
                        ))
                    return
            else:
                abort = await store.abort_requested(self.thread_id, self.run_id)
            if abort:
                self.abort_event.set()


def _next_flush_tick(now: float) -> float:
    """The next multiple of LOG_FLUSH_S on the loop's clock: the same float for every run."""
    return (math.floor(now / LOG_FLUSH_S) + 1) * LOG_FLUSH_S


async def _until(when: float) -> None:
    """Sleep until loop time ``when`` exactly (``asyncio.sleep`` re-reads the clock, so runs
    aiming at one tick would each get their own timer)."""
    loop = asyncio.get_running_loop()
    due: asyncio.Future[None] = loop.create_future()
    timer = loop.call_at(when, _resolve, due)
    try:
        await due
    finally:
        timer.cancel()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _add_tool_delta(calls: dict[int, dict[str, Any]], delta: ToolCallDelta) -> None:
    call = calls.get(delta.index)
    if call is None:
        call = calls[delta.index] = {"id": None, "name": None, "arguments": ""}
    if delta.id:
        call["id"] = delta.id
    if delta.name:
        call["name"] = delta.name
    if delta.arguments:
        call["arguments"] += delta.arguments


def _merge_text_deltas(events: list[EventIn]) -> list[EventIn]:
    """Consecutive text deltas of a batch become one event (fewer rows, same text)."""
    merged: list[EventIn] = []
    for event in events:
        last = merged[-1] if merged else None
        if last is not None and last.type == event.type == TEXT_DELTA:
            last.payload = {"text": last.payload["text"] + event.payload["text"]}
        else:
            merged.append(EventIn(  # a copy: merging must not change the caller's
                event.type, event.payload, event.run_id, event.source, event.signal_id,
                event.message_id))
    return merged


def _error_result(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        args=call.args,
        result={"error": message},
        is_error=True,
    )


def _tool_result_text(result: ToolResult) -> str:
    if result.is_error:
        return f"Error: {result.result['error']}"
    value = result.result
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _call_entry(call: ToolCall, args: Any) -> dict[str, Any]:
    """An OpenAI-style tool call entry of an assistant message."""
    return {
        "id": call.tool_call_id,
        "type": "function",
        "function": {"name": call.tool_name, "arguments": _arguments_text(args)},
    }


def _arguments_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _usage_info(usage: Usage) -> UsageInfo:
    return UsageInfo(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
    )
