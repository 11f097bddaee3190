"""Tools: a name, a description, an input schema (pydantic model or JSON schema) and a function.

Input from the model is validated before ``execute`` runs; a validation error goes back to the
model as that call's error, never as a crash of the run.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from tui_agent._util import call_off_loop, maybe_await
from tui_agent.errors import ConfigError, ToolDefinitionError

_TOOL_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def is_tool_name(name: object) -> bool:
    """Whether ``name`` may name a tool to a model: a non-empty string of letters, digits,
    ``_`` or ``-`` (what every provider's function names accept)."""
    return isinstance(name, str) and bool(name) and set(name) <= _TOOL_NAME_CHARS


class ToolInputError(Exception):
    """The model's arguments do not match the tool's input schema (sent back to the model)."""


@dataclass(slots=True)
class ToolContext:
    """What a tool's ``execute(input, context)`` gets besides its input."""

    agent: Any
    run_id: str
    resource_id: str | None
    thread_id: str | None
    request_context: Any
    tool_call_id: str = ""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


@dataclass(eq=False)
class Tool:
    id: str
    description: str
    execute: Callable[..., Any]
    input_schema: type[BaseModel] | dict[str, Any] | None = None
    output_schema: type[BaseModel] | dict[str, Any] | None = None
    #: This tool's payload transform policy (wins over the agent's ``hooks["transform"]``).
    transform: Any = None
    require_approval: bool = False
    _json_schema: dict[str, Any] = field(init=False, repr=False)
    _validator: Any = field(init=False, repr=False, default=None)
    _wants_context: bool = field(init=False, repr=False, default=True)

    def __post_init__(self) -> None:
        if not is_tool_name(self.id):
            raise ToolDefinitionError(
                f"tool id {self.id!r} must be a non-empty string of letters, digits, '_' or '-'"
            )
        if not callable(self.execute):
            raise ToolDefinitionError(f"tool {self.id!r}: execute must be a function")
        self._json_schema = _input_json_schema(self.id, self.input_schema)
        self._wants_context = _takes_two_arguments(self.execute)
        self.transform = parse_transform(self.transform, f"tool {self.id!r}: transform")
        if not isinstance(self.require_approval, bool):
            raise ToolDefinitionError(
                f"tool {self.id!r}: require_approval must be True or False, "
                f"not {self.require_approval!r}"
            )

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the input, as sent to the model."""
        return self._json_schema

    def spec(self, name: str | None = None, description: str | None = None) -> dict[str, Any]:
        """The OpenAI-style function spec the model sees."""
        return {
            "type": "function",
            "function": {
                "name": name or self.id,
                "description": description if description is not None else self.description,
                "parameters": self._json_schema,
            },
        }

    def parse_input(self, arguments: str | dict[str, Any] | None) -> Any:
        """Model arguments → the validated input (pydantic instance or dict)."""
        args = _decode_arguments(arguments)
        if isinstance(self.input_schema, type) and issubclass(self.input_schema, BaseModel):
            try:
                return self.input_schema.model_validate(args)
            except ValidationError as error:
                raise ToolInputError(_describe_validation_error(error)) from None
        if self.input_schema is not None:
            self._validate_json(args)
        return args

    def _validate_json(self, args: dict[str, Any]) -> None:
        if self._validator is None:
            import jsonschema.validators

            cls = jsonschema.validators.validator_for(self._json_schema)
            self._validator = cls(self._json_schema)
        errors = sorted(self._validator.iter_errors(args), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(
                f"{'/'.join(map(str, e.path)) or '(input)'}: {e.message}" for e in errors
            )
            raise ToolInputError(f"invalid input: {details}")

    async def run(self, tool_input: Any, context: ToolContext) -> Any:
        """Execute the tool; a sync ``execute`` runs in a worker thread, off the event loop."""
        if self._wants_context:
            return await call_off_loop(self.execute, tool_input, context)
        return await call_off_loop(self.execute, tool_input)


def create_tool(
    *,
    id: str,
    description: str = "",
    input_schema: type[BaseModel] | dict[str, Any] | None = None,
    output_schema: type[BaseModel] | dict[str, Any] | None = None,
    execute: Callable[..., Any],
    transform: Any = None,
    require_approval: bool = False,
) -> Tool:
    """A tool for ``Agent(tools={...})``. ``execute(input, context)`` may be sync or async; a
    one-parameter function gets only ``input``. ``transform``: this tool's payload transform
    policy (see :class:`TransformPolicy`)."""
    return Tool(
        id=id,
        description=description,
        execute=execute,
        input_schema=input_schema,
        output_schema=output_schema,
        transform=transform,
        require_approval=require_approval,
    )


def _input_json_schema(tool_id: str, schema: Any) -> dict[str, Any]:
    if schema is None:
        return {"type": "object", "properties": {}}
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        _check_json_schema(tool_id, schema)
        return schema
    raise ToolDefinitionError(
        f"tool {tool_id!r}: input_schema must be a pydantic model class or a JSON schema dict, "
        f"not {type(schema).__name__}"
    )


def _check_json_schema(tool_id: str, schema: dict[str, Any]) -> None:
    import jsonschema.validators

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ToolDefinitionError(
            f"tool {tool_id!r}: input_schema is not a valid JSON schema: {error.message}"
        ) from None
    if schema.get("type", "object") != "object":
        raise ToolDefinitionError(
            f"tool {tool_id!r}: input_schema must describe an object (type 'object'), "
            f"got type {schema.get('type')!r}"
        )


def _decode_arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as error:
        raise ToolInputError(f"arguments are not valid JSON: {error.msg}") from None
    if not isinstance(value, dict):
        raise ToolInputError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def _describe_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(input)"
        parts.append(f"{where}: {item['msg']}")
    return "invalid input: " + "; ".join(parts)


def _takes_two_arguments(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    return has_varargs or len(positional) >= 2


# -- the tool payload transform policy (hooks["transform"], create_tool(transform=)) ------
# ``hooks["transform"]``: the reference's tool payload transform policy.
#
# As the reference describes it, the policy transforms a tool's payload *before the stream shows
# it* (target ``"display"``: the ``tool-call`` / ``tool-result`` chunks, which subscribers, the
# event log, the app, ``watch`` and an export see too) *and before the user-visible stored
# messages get it* (target ``"transcript"``: the assistant message's tool calls and the tool
# message kept in memory). The model and the tool itself always get the real payload in the
# run; so does the caller's own program (``result.tool_calls`` / ``result.tool_results`` /
# ``result.steps``, the scorers' ``result``), as in the reference, whose chunks keep the real
# payload and carry the transformed forms for display and transcript beside it. A later run's
# history comes from the stored transcript, so it sees the transcript form.
#
# A policy is a function ``fn(ctx) -> payload | None`` (both targets), or ``{"targets":
# ["display", "transcript"], "transform_tool_payload": fn}``. ``ctx`` has ``target``, ``phase``
# (``"input-available"`` for the call's input, ``"output-available"`` for its result, ``"error"``
# for a failed call's error message), ``tool_name``, ``tool_call_id``, ``input``, and ``output``
# (the output phase) or ``error`` (the error phase); ``fn`` returns the payload to show instead,
# or None to keep it. Sync or async. A policy that raises hides the payload (a placeholder is
# shown: a broken policy must not leak what it was meant to hide). Given per agent
# (``Agent(hooks={"transform": ...})``), per tool (``create_tool(transform=...)``: wins over the
# agent's) and per call (``generate(hooks={"transform": ...})`` replaces the agent's, as for the
# other hooks). Every producer of a shown or kept payload asks :func:`shown_args` and
# :func:`shown_result`, once per call and target. Tested by tests/test_transform_privacy.py and
# tests/test_conformance.py.

TARGETS = ("display", "transcript")
INPUT_PHASE = "input-available"
OUTPUT_PHASE = "output-available"
ERROR_PHASE = "error"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TransformPolicy:
    transform: Callable[[dict[str, Any]], Any]
    targets: frozenset[str] = frozenset(TARGETS)

    async def apply(self, target: str, phase: str, context: dict[str, Any], payload: Any) -> Any:
        """``payload`` as ``target`` should get it in ``phase`` (unchanged when the policy does
        not cover the target or returns None; a placeholder when the policy raises)."""
        if target not in self.targets:
            return payload
        try:
            changed = await maybe_await(
                self.transform({**context, "target": target, "phase": phase})
            )
        except Exception as error:  # fail closed: show that something was hidden, not what
            log.warning(
                "the tool payload transform policy raised for %s (%s, %s): %s",
                context.get("tool_name"),
                target,
                phase,
                type(error).__name__,
            )
            return {"message": f"tool {phase} payload unavailable"}
        return payload if changed is None else changed


async def shown_args(
    policy: TransformPolicy | None, target: str, *, tool_name: str, tool_call_id: str, args: Any
) -> Any:
    """What ``target`` (``"display"`` or ``"transcript"``) may show of a call's input: the
    ``args`` of both chunk types, the stored tool call. ``args`` itself without a policy."""
    if policy is None:
        return args
    context = {"tool_name": tool_name, "tool_call_id": tool_call_id, "input": args}
    return await policy.apply(target, INPUT_PHASE, context, args)


async def shown_result(
    policy: TransformPolicy | None,
    target: str,
    *,
    tool_name: str,
    tool_call_id: str,
    args: Any,
    result: Any,
    is_error: bool = False,
) -> Any:
    """What ``target`` may show of a call's output (``result``): the ``tool-result`` chunk's
    ``result``, the stored tool message. A failed call's ``{"error": message}`` goes through
    the error phase and stays ``{"error": <text>}``. ``result`` itself without a policy."""
    if policy is None:
        return result
    context = {"tool_name": tool_name, "tool_call_id": tool_call_id, "input": args}
    if not is_error:
        return await policy.apply(target, OUTPUT_PHASE, {**context, "output": result}, result)
    message = result.get("error") if isinstance(result, dict) else result
    shown = await policy.apply(target, ERROR_PHASE, {**context, "error": message}, message)
    return {"error": shown if isinstance(shown, str) else json.dumps(shown, default=str)}


def parse_transform(value: Any, where: str) -> TransformPolicy | None:
    """A policy from a function or ``{"targets", "transform_tool_payload"}``; a clear error
    naming ``where`` otherwise."""
    if value is None or isinstance(value, TransformPolicy):
        return value
    if callable(value):
        return TransformPolicy(value)
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where} must be a function or {{'targets': [...], 'transform_tool_payload': fn}}, "
            f"not {type(value).__name__}"
        )
    unknown = set(value) - {"targets", "transform_tool_payload", "transformToolPayload"}
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    fn = value.get("transform_tool_payload", value.get("transformToolPayload"))
    if not callable(fn):
        raise ConfigError(f"{where} needs 'transform_tool_payload': a function of the payload")
    targets = value.get("targets", TARGETS)
    if isinstance(targets, str) or not set(targets) <= set(TARGETS) or not targets:
        raise ConfigError(f"{where}.targets must be a non-empty list of {list(TARGETS)}")
    return TransformPolicy(fn, frozenset(targets))
