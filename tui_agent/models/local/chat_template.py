"""Requests in the form this model's chat template accepts: plain system/user/assistant text.

SmolLM2's template knows no tool roles. An assistant's tool calls become the JSON it would have
written and tool results become a user message that names the tool, so the model sees its own
reply format in the history.
"""

from __future__ import annotations

import json
from typing import Any

from tui_agent.models.base import ModelRequest

# Measured on SmolLM2-135M: without this nudge it calls the same tool again and again.
_USE_RESULT = "\nUse it to answer my question."


def derived_request(
    request: ModelRequest, messages: list[dict[str, Any]], extra_settings: dict[str, Any]
) -> ModelRequest:
    """``request`` with these messages and extra settings, and no tools: the inner model
    (plain HTTP to the llama.cpp server) only ever sees text."""
    return ModelRequest(
        messages=messages,
        settings={**request.settings, **extra_settings},
        abort=request.abort,
    )


def plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages as plain system/user/assistant text; consecutive tool results share one
    user message."""
    names: dict[str, str] = {}  # tool call id -> tool name, to label the results
    out: list[dict[str, Any]] = []
    results: list[str] = []  # the tool results in the last message of ``out``, if any
    for message in messages:
        role = message.get("role")
        text = _text_of(message.get("content"))
        if role == "tool":
            if not results:
                out.append({"role": "user"})
            results.append(f"Result of {_tool_name(message, names)}: {text}")
            out[-1]["content"] = "\n".join(results) + _USE_RESULT
            continue
        if role == "assistant" and message.get("tool_calls"):
            names.update(_call_names(message))
            out.append({"role": "assistant", "content": _calls_as_text(text, message)})
        elif role in ("system", "user", "assistant"):
            out.append({"role": role, "content": text})
        else:
            continue  # a role the template cannot show
        results = []
    return out


def with_system_hint(messages: list[dict[str, Any]], hint: str) -> list[dict[str, Any]]:
    """One leading system message: the caller's own instructions, then ``hint``."""
    own = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    rest = [m for m in messages if m["role"] != "system"]
    return [{"role": "system", "content": "\n\n".join([*own, hint])}, *rest]


def _tool_name(result: dict[str, Any], names: dict[str, str]) -> str:
    return names.get(str(result.get("tool_call_id")), result.get("name") or "tool")


def _call_names(message: dict[str, Any]) -> dict[str, str]:
    calls = message.get("tool_calls") or []
    return {str(call.get("id")): str((call.get("function") or {}).get("name")) for call in calls}


def _calls_as_text(text: str, message: dict[str, Any]) -> str:
    lines = [text] if text else []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        lines.append(json.dumps({"tool": function.get("name"), "arguments": arguments}))
    return "\n".join(lines)


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(str(p) for p in parts)
    return str(content)
