"""Per-call options of generate()/stream(), parsed once into a typed object."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, cast

from tui_agent._util import as_dict
from tui_agent.agent.instructions import FORMS, check_instructions
from tui_agent.context import RequestContext
from tui_agent.errors import ConfigError
from tui_agent.signals.limits import as_given_dict, as_mapping, check_limit
from tui_agent.tools import Tool, parse_transform

KNOWN_OPTIONS = {
    "memory",
    "max_steps",
    "hooks",
    "tool_choice",
    "request_context",
    "run_id",
    "model_settings",
    "provider_options",
    "instructions",
    "tools_override",
    "require_tool_approval",
    "approval_timeout_s",
}
HOOK_NAMES = {"before_tool_call", "after_tool_call", "transform"}
TOOL_CHOICES = {"auto", "none", "required"}


@dataclass(slots=True)
class MemoryTarget:
    resource_id: str
    thread_id: str
    title: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(slots=True)
class RunOptions:
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    memory: MemoryTarget | None = None
    max_steps: int = 5
    hooks: dict[str, Any] = field(default_factory=dict)
    tool_choice: Any = "auto"
    request_context: RequestContext = field(default_factory=RequestContext)
    model_settings: dict[str, Any] = field(default_factory=dict)
    provider_options: dict[str, Any] = field(default_factory=dict)
    last_messages: int | None = None  # None: the Memory's own last_messages
    #: Replace the agent's instructions / tools for this run (None: the agent's own). Either
    #: may be a function of the request context, like the constructor's.
    instructions: Any = None
    tools_override: Any = None
    #: Every tool call of this run waits for a person's approval (as a tool's own
    #: ``require_approval``); ``approval_timeout_s``: a call unanswered that long is declined.
    require_tool_approval: bool = False
    approval_timeout_s: float | None = None


def parse_run_options(
    options: dict[str, Any], defaults: dict[str, Any], agent_hooks: dict[str, Any]
) -> RunOptions:
    merged = {**defaults, **{k: v for k, v in options.items() if v is not None}}
    unknown = set(merged) - KNOWN_OPTIONS
    if unknown:
        raise ConfigError(f"unknown option(s) {sorted(unknown)}; known: {sorted(KNOWN_OPTIONS)}")
    parsed = RunOptions(
        memory=parse_memory_option(merged.get("memory")),
        max_steps=_max_steps(merged.get("max_steps", 5)),
        hooks={**agent_hooks, **parse_hooks(merged.get("hooks"))},
        tool_choice=_tool_choice(merged.get("tool_choice", "auto")),
        request_context=RequestContext.coerce(merged.get("request_context")),
        model_settings=as_dict(merged.get("model_settings"), "model_settings"),
        provider_options=as_dict(merged.get("provider_options"), "provider_options"),
        instructions=_instructions(merged.get("instructions")),
        tools_override=_tools_override(merged.get("tools_override")),
        require_tool_approval=_flag(merged.get("require_tool_approval", False),
                                    "require_tool_approval"),
        approval_timeout_s=_timeout(merged.get("approval_timeout_s")),
    )
    if merged.get("run_id"):
        parsed.run_id = str(merged["run_id"])
    memory = as_mapping(merged.get("memory"))
    memory_options = as_mapping(memory.get("options")) if memory is not None else None
    if memory_options is not None and "last_messages" in memory_options:
        parsed.last_messages = check_limit(
            memory_options["last_messages"], "memory options last_messages"
        )
    return parsed


def wake_options(
    stream_options: dict[str, Any], resource_id: str, thread_id: str, run_id: str
) -> dict[str, Any]:
    """A woken run's ``stream()`` options: the sender's ``if_idle.stream_options`` (their own
    objects, functions and tools included) on the signal's thread, under the id the wake was
    given; ``memory={"options": {...}}`` there is kept (signals.data.check_stream_options
    refuses a memory naming a thread)."""
    given = as_mapping(stream_options.get("memory")) or {}
    memory = {"resource": resource_id, "thread": thread_id, **given}
    return {**stream_options, "memory": memory, "run_id": run_id}


def check_wake_options(
    stream_options: dict[str, Any], defaults: dict[str, Any], agent_hooks: dict[str, Any]
) -> None:
    """Fail at the send, naming the option, for what a woken run would refuse."""
    try:
        parse_run_options(wake_options(stream_options, "r", "t", "check"), defaults, agent_hooks)
    except ConfigError as error:
        raise ConfigError(f"if_idle.stream_options: {error}") from None


def parse_memory_option(memory: object) -> MemoryTarget | None:
    if memory is None:
        return None
    memory = as_dict(memory, "memory")
    resource = memory.get("resource", memory.get("resource_id"))
    thread = memory.get("thread", memory.get("thread_id"))
    if thread is None:
        raise ConfigError("memory needs a thread: memory={'resource': R, 'thread': T}")
    if not resource or not isinstance(resource, str):
        raise ConfigError(
            "memory needs a resource (a non-empty string): memory={'resource': R, 'thread': T}"
        )
    if isinstance(thread, str):
        if not thread:
            raise ConfigError("memory thread id must be a non-empty string")
        return MemoryTarget(resource, thread)
    thread = as_dict(thread, "memory thread")
    if not thread.get("id") or not isinstance(thread["id"], str):
        raise ConfigError("memory thread object needs an 'id': {'id', 'title', 'metadata'}")
    metadata: object = thread.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ConfigError("memory thread metadata must be a dict")
    return MemoryTarget(resource, thread["id"], thread.get("title"),
                        cast("dict[str, Any] | None", metadata))


def parse_hooks(hooks: object) -> dict[str, Any]:
    hooks = as_dict(hooks, "hooks")
    unknown = set(hooks) - HOOK_NAMES
    if unknown:
        raise ConfigError(f"unknown hook(s) {sorted(unknown)}; known: {sorted(HOOK_NAMES)}")
    parsed = {name: fn for name, fn in hooks.items() if fn is not None}
    if "transform" in parsed:  # a policy: a function or {"targets", "transform_tool_payload"}
        parsed["transform"] = parse_transform(parsed["transform"], "hooks['transform']")
    for name, fn in parsed.items():
        if name != "transform" and not callable(fn):
            raise ConfigError(f"hook {name!r} must be a function")
    return parsed


def _instructions(value: object) -> Any:
    if value is None:
        return None
    try:
        check_instructions(value)
    except ConfigError as error:
        raise ConfigError(f"the instructions option: {error} (expected {FORMS})") from None
    return value


def _tools_override(value: object) -> Any:
    """``{name: tool}`` or a callable of the request context (checked when called)."""
    if value is None or (callable(value) and not isinstance(value, dict)):
        return value
    if not isinstance(value, dict):
        raise ConfigError(
            f"tools_override must be a dict {{name: tool}} or a callable of the request "
            f"context, not {type(value).__name__}"
        )
    tools = cast("dict[str, Any]", value)  # the caller's: checked below
    for name, tool in tools.items():
        if not isinstance(tool, Tool):
            raise ConfigError(f"tools_override[{name!r}] is not a tool: build it with create_tool")
    return dict(tools)


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, got {value!r}")
    return value


def _timeout(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"approval_timeout_s must be a positive number of seconds, got {value!r}")
    return float(value)


def _max_steps(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"max_steps must be a positive integer, got {value!r}")
    return value


def _tool_choice(value: object) -> Any:
    if isinstance(value, str) and value in TOOL_CHOICES:
        return value
    choice = as_given_dict(value)
    if choice is not None and (choice.get("tool_name") or choice.get("function")):
        name = choice.get("tool_name") or choice["function"]["name"]
        return {"type": "function", "function": {"name": name}}
    raise ConfigError(
        f"tool_choice must be 'auto', 'none', 'required' or {{'tool_name': NAME}}, got {value!r}"
    )
