"""One model step of a run: the input processors, one model call (its events streamed, each text
delta pushed as it comes, through the output processors' stream method if any, the tool calls
it asks for gathered), then the output processors, which may ask the model to answer again
(at most ``max_processor_retries`` times: tests/test_agent_loop.py).

A reader sees the first text delta as soon as it is pushed, however fast the model streams: the
call lets readers in after its first delta and then at least every ``YIELD_EVERY_S``
(:class:`ReaderTurns`; tests/test_group_commit.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from tui_agent.agent.plan import RunDeps, RunPlan, RunView
from tui_agent.agent.processors import RetryStep
from tui_agent.agent.result import ToolCall
from tui_agent.agent.tool_calls import ToolRunner
from tui_agent.errors import ProcessorError
from tui_agent.events import STEP_START, TEXT_DELTA, TOOL_CALL, ChunkType
from tui_agent.models.base import (
    LanguageModel,
    ModelRequest,
    StepEnd,
    TextDelta,
    ToolCallDelta,
    Usage,
)

# A model that streams without ever waiting (a scripted or cached reply) would otherwise push its
# whole answer before a reader sees the first delta: the run lets readers in after its first
# delta and then at least this often (see ReaderTurns).
YIELD_EVERY_S = 0.001


class ReaderTurns:
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


@dataclass(slots=True)
class StepOutcome:
    text: str
    calls: list[ToolCall]
    finish_reason: str
    usage: Usage


Emit = Callable[[ChunkType, dict[str, Any]], None]


class ModelStep:
    """Runs the model steps of one run. ``parts`` is what the current step has streamed of its
    answer (the run keeps it if it ends mid-answer)."""

    def __init__(
        self,
        run: RunView,
        deps: RunDeps,
        emit: Emit,
        abort: asyncio.Event,
        tools: ToolRunner,
    ) -> None:
        self._run, self._deps, self._emit, self._abort, self._tools = (
            run, deps, emit, abort, tools)
        self.parts: list[str] = []

    async def step(self, index: int, messages: list[dict[str, Any]]) -> StepOutcome:
        """Step ``index`` on the run's ``messages`` (a retry's reminder is appended to them)."""
        deps, retries = self._deps, 0
        while True:
            self._emit(STEP_START, {"step": index})
            # a copy: a processor that edits in place must not rewrite the run's history
            given = await deps.process_input(list(messages), self._run)
            outcome = await self._call_model(given, index)
            if outcome.calls:
                return outcome  # not an answer: a result processor must not drop its calls
            try:
                outcome.text = await deps.process_output(outcome.text, self._run)
                return outcome
            except RetryStep as retry:
                retries += 1
                if retries > deps.max_processor_retries:
                    raise ProcessorError(
                        f"output processor asked for a retry {retries} times "
                        f"(max_processor_retries={deps.max_processor_retries}): "
                        f"{retry.reason}"
                    ) from None
                messages.append(
                    {
                        "role": "user",
                        "content": f"<system-reminder>Your previous answer was rejected: "
                        f"{retry.reason}. Answer again.</system-reminder>",
                    }
                )

    async def _call_model(self, messages: list[dict[str, Any]], index: int) -> StepOutcome:
        plan: RunPlan = self._run.plan
        options = plan.options
        request = ModelRequest(
            messages=list(messages),  # a snapshot: the loop keeps appending to its own list
            tools=plan.tool_specs if options.tool_choice != "none" else [],
            tool_choice=options.tool_choice if plan.tool_specs else None,
            settings=options.model_settings,
            provider_options=options.provider_options,
            abort=self._abort,
        )
        text: list[str] = []
        self.parts = text  # joined only if the run ends mid-answer
        process_chunk = self._process_chunk if plan.output_processors else None
        prefix = f"call_{self._run.run_id[:8]}_{index}"
        calls, end = await stream_model(plan.model, request, text, self._emit, process_chunk,
                                        prefix)
        for call in calls:
            self._emit(TOOL_CALL, await self._tools.shown_call(call))
        finish = "tool-calls" if calls else end.finish_reason
        return StepOutcome("".join(text), calls, finish, end.usage or Usage())

    async def _process_chunk(self, text: str) -> str:
        return await self._deps.process_output_chunk(text, self._run)


@dataclass(slots=True)
class _RawCall:
    id: str | None = None
    name: str | None = None
    arguments: str = ""


async def stream_model(
    model: LanguageModel,
    request: ModelRequest,
    parts: list[str],
    emit: Emit,
    process_chunk: Callable[[str], Awaitable[str]] | None,
    call_id_prefix: str,
) -> tuple[list[ToolCall], StepEnd]:
    """Stream one model call: its text goes into ``parts`` (the caller's list, joined only if
    the run ends mid-answer) and out as ``text-delta`` chunks; the calls it asked for, ids
    made from ``call_id_prefix`` where the model gave none, and how it ended."""
    calls: dict[int, _RawCall] = {}
    end = StepEnd("stop")
    turns = ReaderTurns(asyncio.get_running_loop())
    async for event in model.stream(request):
        if type(event) is TextDelta:
            if event.text:
                # The answer is what the caller saw: a redacting stream processor must not leak
                # the original into the result or the stored message.
                chunk = await process_chunk(event.text) if process_chunk else event.text
                if chunk:
                    parts.append(chunk)
                    emit(TEXT_DELTA, {"text": chunk})
                    if turns.due():
                        await asyncio.sleep(0)  # let readers see what was pushed
                        turns.given()
        elif type(event) is ToolCallDelta:
            _add_tool_delta(calls, event)
        elif type(event) is StepEnd:
            end = event
    tool_calls = [_tool_call(raw, f"{call_id_prefix}_{index}")
                  for index, raw in sorted(calls.items())]
    return tool_calls, end


def _add_tool_delta(calls: dict[int, _RawCall], delta: ToolCallDelta) -> None:
    call = calls.get(delta.index)
    if call is None:
        call = calls[delta.index] = _RawCall()
    if delta.id:
        call.id = delta.id
    if delta.name:
        call.name = delta.name
    if delta.arguments:
        call.arguments += delta.arguments


def _tool_call(raw: _RawCall, default_id: str) -> ToolCall:
    arguments = raw.arguments
    try:
        args: Any = json.loads(arguments) if arguments else {}  # the model's tool input
    except json.JSONDecodeError:
        args = arguments  # kept raw; validation reports it to the model
    return ToolCall(tool_call_id=raw.id or default_id, tool_name=raw.name or "", args=args)
