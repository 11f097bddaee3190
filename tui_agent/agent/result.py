"""Typed results of a run."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _DictAccess(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


class ToolCall(_DictAccess):
    tool_call_id: str
    tool_name: str
    args: Any


class ToolResult(_DictAccess):
    tool_call_id: str
    tool_name: str
    args: Any = None
    result: Any = None
    is_error: bool = False


class UsageInfo(_DictAccess):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0


class StepResult(_DictAccess):
    step: int
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    finish_reason: str = "stop"
    usage: UsageInfo = Field(default_factory=UsageInfo)
    signals: list[str] = Field(default_factory=list)  # ids of signals delivered after this step


class GenerateResult(_DictAccess):
    run_id: str
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    usage: UsageInfo = Field(default_factory=UsageInfo)
    finish_reason: str = "stop"  # stop | length | tool-calls | abort | error
    steps: list[StepResult] = Field(default_factory=list)
    scores: dict[str, Any] = Field(default_factory=dict)
    thread_id: str | None = None
    resource_id: str | None = None
