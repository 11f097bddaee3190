"""What a run keeps of its steps: the messages the model gets and the store keeps of each step
(the store gets a tool payload's transcript form, the model its real one:
tests/test_transform_privacy.py), the step results, and the run's result."""

from __future__ import annotations

from typing import Any

from tui_agent.agent.model_step import StepOutcome
from tui_agent.agent.result import GenerateResult, StepResult, ToolResult, UsageInfo
from tui_agent.agent.tool_calls import ToolRunner, call_entry, tool_result_text
from tui_agent.models.base import Usage
from tui_agent.store.records import MessageIn


def assistant_message(
    outcome: StepOutcome, tools: ToolRunner, run_id: str
) -> tuple[dict[str, Any], MessageIn]:
    """The step's answer: as the model gets it next, and as it is stored."""
    message: dict[str, Any] = {"role": "assistant", "content": outcome.text or None}
    metadata: dict[str, Any] = {}
    if outcome.calls:
        message["tool_calls"] = [call_entry(c, c.args) for c in outcome.calls]
        # What the store keeps: each call's transcript form (hooks["transform"]).
        metadata["tool_calls"] = [call_entry(c, tools.transcript_args(c)) for c in outcome.calls]
    return message, MessageIn("assistant", outcome.text, run_id, metadata=metadata)


def tool_message(
    result: ToolResult, tools: ToolRunner, run_id: str
) -> tuple[dict[str, Any], MessageIn]:
    """A tool's result: as the model gets it next, and as it is stored."""
    message = {"role": "tool", "tool_call_id": result.tool_call_id,
               "content": tool_result_text(result)}
    kept = tools.transcript_result(result)  # what the store keeps
    stored = MessageIn(
        "tool",
        tool_result_text(kept),
        run_id,
        metadata={
            "tool_call_id": kept.tool_call_id,
            "tool_name": kept.tool_name,
            "is_error": kept.is_error,
            "result": kept.result,
        },
    )
    return message, stored


def step_result(index: int, outcome: StepOutcome, results: list[ToolResult]) -> StepResult:
    return StepResult(
        step=index,
        text=outcome.text,
        tool_calls=outcome.calls,
        tool_results=results,
        finish_reason=outcome.finish_reason,
        usage=usage_info(outcome.usage),
    )


def generate_result(
    run_id: str,
    steps: list[StepResult],
    usage: Usage,
    finish_reason: str,
    thread_id: str | None,
    resource_id: str | None,
) -> GenerateResult:
    last = steps[-1] if steps else None
    return GenerateResult(
        run_id=run_id,
        text=last.text if last else "",
        tool_calls=[c for s in steps for c in s.tool_calls],
        tool_results=[r for s in steps for r in s.tool_results],
        usage=usage_info(usage),
        finish_reason=finish_reason,
        steps=steps,
        thread_id=thread_id,
        resource_id=resource_id,
    )


def usage_info(usage: Usage) -> UsageInfo:
    return UsageInfo(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
    )
