"""Tools through JSON-schema-constrained output.

This small model does not emit native tool calls. With tools, llama.cpp constrains its output by
a JSON schema to either ``{"tool": name, "arguments": {...}}`` or ``{"answer": "..."}``; the
first becomes a real tool call, the second streams as text while it is generated.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from tui_agent.errors import ConfigError, ModelCallError
from tui_agent.models.base import ModelEvent, ModelRequest, StepEnd, TextDelta, ToolCallDelta
from tui_agent.models.local.chat_template import derived_request, plain_messages, with_system_hint
from tui_agent.models.local.reply_parser import JsonReplyParser


def active_tools(request: ModelRequest) -> list[dict[str, Any]]:
    """The function specs the model may call, after ``tool_choice``."""
    choice = request.tool_choice
    if not request.tools or choice == "none":
        return []
    functions = [tool.get("function", tool) for tool in request.tools]
    if isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name") or choice.get("name")
        chosen = [f for f in functions if f.get("name") == wanted]
        if not chosen:
            known = ", ".join(str(f.get("name")) for f in functions)
            raise ConfigError(f"tool_choice names tool {wanted!r}, which is not among: {known}")
        return chosen
    return functions


async def stream_with_tools(
    inner: Any, request: ModelRequest, tools: list[dict[str, Any]]
) -> AsyncIterator[ModelEvent]:
    """Stream ``request`` through ``inner`` (HTTP to the server) with the reply constrained:
    answer text as it comes, or one tool call at the end."""
    if "response_format" in request.settings:
        raise ConfigError(
            "the local model cannot combine tools with a response_format: its tool calls "
            "already use JSON-schema output"
        )
    must_call = request.tool_choice == "required" or isinstance(request.tool_choice, dict)
    messages = with_system_hint(plain_messages(request.messages), tool_hint(tools, must_call))
    schema = reply_schema(tools, allow_answer=not must_call)
    constrained = derived_request(request, messages, {"response_format": schema})
    parser = JsonReplyParser()
    end: StepEnd | None = None
    async for event in inner.stream(constrained):
        if isinstance(event, TextDelta):
            text = parser.feed(event.text)
            if text:
                yield TextDelta(text)
        elif isinstance(event, StepEnd):
            end = event
    for event in _finish_reply(parser, end):
        yield event


def reply_schema(tools: list[dict[str, Any]], *, allow_answer: bool = True) -> dict[str, Any]:
    """The ``response_format`` that lets the model call one tool or answer in text."""
    variants = [_tool_variant(tool) for tool in tools]
    if allow_answer:
        variants.append(
            {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    schema = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def tool_hint(tools: list[dict[str, Any]], must_call: bool) -> str:
    """The system text that tells the model the reply format and the tools' arguments."""
    lines = ["You can use tools. Reply with one JSON object only."]
    lines.append('To call a tool: {"tool": "<tool name>", "arguments": {<arguments>}}')
    if not must_call:
        lines.append('To answer the user: {"answer": "<your answer>"}')
        lines.append("When a tool result is given, use it to answer the user.")
    lines.append("Tools:")
    for tool in tools:
        props = (tool.get("parameters") or {}).get("properties") or {}
        args = ", ".join(f'"{key}": {_type_name(spec)}' for key, spec in props.items())
        description = str(tool.get("description") or "").strip()
        lines.append(f"- {tool['name']}: {description} Arguments: {{{args}}}".replace("  ", " "))
    return "\n".join(lines)


def _finish_reply(parser: JsonReplyParser, end: StepEnd | None) -> list[ModelEvent]:
    """The events after the last token: the answer's tail, or the tool call; then the end."""
    usage = end.usage if end is not None else None
    reason = end.finish_reason if end is not None else "stop"
    tail = parser.flush()
    if parser.kind == "answer":
        return [*([TextDelta(tail)] if tail else []), StepEnd(reason, usage)]
    return [_tool_call(parser.text, reason), StepEnd("tool-calls", usage)]


def _tool_call(reply_text: str, reason: str) -> ToolCallDelta:
    try:
        reply = json.loads(reply_text)
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or "tool" not in reply:
        cut = " (cut off by max_tokens: raise it)" if reason == "length" else ""
        raise ModelCallError(
            f"the local model's reply is not a tool call or an answer{cut}: {reply_text[:200]!r}",
            model="local",
        )
    arguments = reply.get("arguments")
    return ToolCallDelta(
        index=0,
        id=f"call_{uuid.uuid4().hex[:24]}",
        name=str(reply["tool"]),
        arguments=json.dumps(arguments if isinstance(arguments, dict) else {}),
    )


def _tool_variant(tool: dict[str, Any]) -> dict[str, Any]:
    parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    parameters = _inline_refs(parameters, parameters.get("$defs", {}), ())
    return {
        "type": "object",
        "properties": {"tool": {"const": tool["name"]}, "arguments": parameters},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


_DROPPED_KEYWORDS = ("$defs", "$schema", "title")  # noise for the grammar, not constraints
_NAME_MAPS = ("properties", "patternProperties")  # their keys are names the user chose


def _inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """Replace local ``#/$defs/X`` refs by their target: each tool's schema moves under our
    ``anyOf``, where its refs would no longer resolve. A recursive ref becomes "any value"."""
    if isinstance(node, list):
        return [_inline_refs(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen or name not in defs:
            return {}
        return _inline_refs(defs[name], defs, (*seen, name))
    inlined: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYWORDS:
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            # A property may be called "title": keep every name, inline each one's schema.
            inlined[key] = {name: _inline_refs(v, defs, seen) for name, v in value.items()}
        else:
            inlined[key] = _inline_refs(value, defs, seen)
    return inlined


def _type_name(spec: Any) -> str:
    if isinstance(spec, dict) and isinstance(spec.get("type"), str):
        return str(spec["type"])
    return "value"
