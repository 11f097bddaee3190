"""Tool execution within a run: the hooks around each call (``before_tool_call`` may answer
instead of the tool, ``after_tool_call`` sees the outcome) and the transform policy
(``hooks["transform"]`` or the tool's own: what the stream shows and what the transcript keeps
of a tool payload, while the model gets the real one: tests/test_transform_privacy.py).

A tool's failure, a bad input or an unstorable result is the model's business, not a crash:
it becomes the call's error result and the run goes on (tests/test_agent_loop.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from tui_agent._util import call_off_loop, dump_if_model, why_unstorable
from tui_agent.agent.result import ToolCall, ToolResult
from tui_agent.events import TOOL_RESULT, ChunkType
from tui_agent.signals.limits import as_given_dict
from tui_agent.tools import (
    Tool,
    ToolContext,
    ToolInputError,
    TransformPolicy,
    shown_args,
    shown_result,
)

Emit = Callable[[ChunkType, dict[str, Any]], None]
_NOT_SHOWN = object()


class ToolRunner:
    """Runs one run's tool calls and keeps what the transform policy lets each target have of
    their payloads (``shown_args`` / ``shown_result``, asked once per call and target): the
    display form goes into both chunk types, the transcript form is taken when the step's
    messages are stored."""

    def __init__(
        self,
        tools: dict[str, Tool],
        hooks: dict[str, Any],
        context: ToolContext,
        hook_metadata: dict[str, str],
        emit: Emit,
    ) -> None:
        self._tools = tools
        self._hooks = hooks
        self._context = context
        self._hook_metadata = hook_metadata
        self._emit = emit
        self._shown_args: dict[str, Any] = {}  # call id → its display args (both chunks)
        self._transcript: dict[tuple[str, str], Any] = {}  # ("in"|"out", call id) → kept

    async def run_all(self, calls: list[ToolCall]) -> list[ToolResult]:
        if len(calls) == 1:
            return [await self._run(calls[0])]
        return list(await asyncio.gather(*(self._run(call) for call in calls)))

    def transcript_args(self, call: ToolCall) -> Any:
        """What the store keeps of a call's arguments (taken: asked once per call)."""
        return self._transcript.pop(("in", call.tool_call_id), call.args)

    def transcript_result(self, result: ToolResult) -> ToolResult:
        """The result as the store keeps it (taken: asked once per result)."""
        kept = self._transcript.pop(("out", result.tool_call_id), result.result)
        if kept is result.result:
            return result
        return result.model_copy(update={"result": kept})

    async def run_answered(self, call: ToolCall, approved: bool, args: Any,
                           declined: str) -> ToolResult:
        """A call a person answered: approved, it runs with ``args`` (the input, maybe
        edited); declined, its result is the error ``declined`` (the model reads it)."""
        if args != call.args:  # an edited input: its result shows the edited one's form
            self._shown_args.pop(call.tool_call_id, None)
            call = call.model_copy(update={"args": args})
        if approved:
            return await self._run(call)
        result = error_result(call, declined)
        self._emit(TOOL_RESULT, await self._shown_result(call, result))
        return result

    async def _run(self, call: ToolCall) -> ToolResult:
        result = await self._execute(call)
        self._emit(TOOL_RESULT, await self._shown_result(call, result))
        return result

    # -- hooks["transform"]: what the stream shows and the transcript keeps of a tool payload --

    def _policy(self, tool_name: str) -> TransformPolicy | None:
        tool = self._tools.get(tool_name)
        if tool is not None and tool.transform is not None:
            return tool.transform  # the tool's own wins over the agent's / the call's
        return self._hooks.get("transform")

    async def shown_call(self, call: ToolCall) -> dict[str, Any]:
        """The ``tool-call`` chunk's payload (display form); keeps the transcript form, and the
        display args for the ``tool-result`` chunk."""
        payload = call.model_dump()
        policy = self._policy(call.tool_name)
        if policy is None:
            return payload
        ids = {"tool_name": call.tool_name, "tool_call_id": call.tool_call_id}
        payload["args"] = await shown_args(policy, "display", args=call.args, **ids)
        self._shown_args[call.tool_call_id] = payload["args"]
        self._transcript[("in", call.tool_call_id)] = await shown_args(
            policy, "transcript", args=call.args, **ids
        )
        return payload

    async def display_args(self, call: ToolCall) -> Any:
        """A call's arguments as the stream shows them (display form), keeping nothing: the
        ``tool-call-approval`` chunk's (the stored call keeps the real ones, to run them)."""
        return await shown_args(self._policy(call.tool_name), "display",
                                tool_name=call.tool_name, tool_call_id=call.tool_call_id,
                                args=call.args)

    async def _shown_result(self, call: ToolCall, result: ToolResult) -> dict[str, Any]:
        """The ``tool-result`` chunk's payload (display form: its ``args`` as the ``tool-call``
        chunk showed them); keeps the transcript form."""
        payload = result.model_dump()
        policy = self._policy(call.tool_name)
        if policy is None:
            return payload
        shown = self._shown_args.pop(call.tool_call_id, _NOT_SHOWN)
        if shown is _NOT_SHOWN:  # no tool-call chunk showed it (never so in a run: a guard)
            shown = await shown_args(
                policy,
                "display",
                tool_name=call.tool_name,
                tool_call_id=call.tool_call_id,
                args=call.args,
            )
        payload["args"] = shown
        payload["result"] = await _result_for(policy, "display", call, result)
        self._transcript[("out", call.tool_call_id)] = await _result_for(
            policy, "transcript", call, result
        )
        return payload

    # -- one call, with its hooks -------------------------------------------------------------

    async def _execute(self, call: ToolCall) -> ToolResult:
        tool = self._tools.get(call.tool_name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return error_result(call, f"unknown tool {call.tool_name!r} (tools: {known})")
        try:
            tool_input = tool.parse_input(call.args)
        except ToolInputError as error:
            return error_result(call, str(error))
        c = self._context
        context = ToolContext(
            agent=c.agent,
            run_id=c.run_id,
            resource_id=c.resource_id,
            thread_id=c.thread_id,
            request_context=c.request_context,
            tool_call_id=call.tool_call_id,
        )
        hook_input: dict[str, Any] = {
            "tool_name": call.tool_name,
            "input": tool_input,
            "context": context,
            "metadata": dict(self._hook_metadata),
            "tool_call_id": call.tool_call_id,
        }
        before = self._hooks.get("before_tool_call")
        output: Any = None
        error: BaseException | None = None
        decision: Any = None
        try:
            decision = await call_off_loop(before, hook_input) if before else None
        except Exception as raised:  # as a tool that raises: the tool does not run, the model
            error = raised  # gets the error as the call's result, the run goes on
        answer = as_given_dict(decision)
        if answer is not None and answer.get("proceed") is False:
            output = answer.get("output")  # the hook answers instead of the tool
        elif error is None:
            try:
                output = await tool.run(tool_input, context)
            except Exception as raised:  # a tool's failure is the model's business, not a crash
                error = raised
        after = self._hooks.get("after_tool_call")
        if after:
            await call_off_loop(after, {**hook_input, "output": output, "error": error})
        if error is not None:
            return error_result(call, f"{type(error).__name__}: {error}")
        result = dump_if_model(output)
        unstorable = why_unstorable(result)
        if unstorable is not None:
            return error_result(call, f"the tool's result cannot be stored: {unstorable}")
        return ToolResult(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            args=call.args,
            result=result,
        )


async def _result_for(
    policy: TransformPolicy, target: str, call: ToolCall, result: ToolResult
) -> Any:
    """What ``target`` may show of ``result`` (``tools.shown_result``)."""
    return await shown_result(
        policy,
        target,
        tool_name=call.tool_name,
        tool_call_id=call.tool_call_id,
        args=call.args,
        result=result.result,
        is_error=result.is_error,
    )


def error_result(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        args=call.args,
        result={"error": message},
        is_error=True,
    )


def tool_result_text(result: ToolResult) -> str:
    """A result as the model reads it: an error as ``Error: ...``, a value as text or JSON."""
    if result.is_error:
        return f"Error: {result.result['error']}"
    value = result.result
    return value if isinstance(value, str) else json.dumps(value, default=str)


def call_entry(call: ToolCall, args: Any) -> dict[str, Any]:
    """An OpenAI-style tool call entry of an assistant message."""
    return {
        "id": call.tool_call_id,
        "type": "function",
        "function": {"name": call.tool_name, "arguments": _arguments_text(args)},
    }


def _arguments_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)
