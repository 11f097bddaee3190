"""Instructions in all five forms → the ordered system messages the model gets."""

from __future__ import annotations

from typing import Any, cast

from tui_agent._util import maybe_await
from tui_agent.errors import ConfigError
from tui_agent.signals.limits import as_items

FORMS = (
    "a string, a list of strings, a system message {'role': 'system', 'content': ..., "
    "'provider_options': {...}}, a list mixing those, "
    "or a callable (request_context) -> any of these"
)


def check_instructions(instructions: object) -> None:
    """Construction-time check (a callable is checked when it is called)."""
    if instructions is None:
        raise ConfigError(f"Agent needs instructions: {FORMS}")
    if not callable(instructions):
        to_system_messages(instructions)


async def resolve_instructions(instructions: Any, request_context: Any) -> list[dict[str, Any]]:
    if callable(instructions):
        instructions = await maybe_await(instructions(request_context))
    return to_system_messages(instructions)


def to_system_messages(instructions: object) -> list[dict[str, Any]]:
    given = as_items(instructions)
    items = [instructions] if given is None else given
    return [_system_message(item, index) for index, item in enumerate(items)]


def _system_message(item: object, index: int) -> dict[str, Any]:
    if isinstance(item, str):
        return {"role": "system", "content": item}
    if isinstance(item, dict):
        item = cast("dict[str, Any]", item)  # the caller's message
        role = item.get("role", "system")
        content = item.get("content")
        if role != "system":
            raise ConfigError(f"instructions[{index}]: role must be 'system', got {role!r}")
        if not isinstance(content, str):
            raise ConfigError(
                f"instructions[{index}]: content must be a string, got {type(content).__name__}"
            )
        unknown = set(item) - {"role", "content", "provider_options", "providerOptions"}
        if unknown:
            raise ConfigError(f"instructions[{index}]: unknown keys {sorted(unknown)}")
        message: dict[str, Any] = {"role": "system", "content": content}
        options = item.get("provider_options", item.get("providerOptions"))
        if options:
            if not isinstance(options, dict):
                raise ConfigError(f"instructions[{index}]: provider_options must be a dict")
            message["provider_options"] = options
        return message
    raise ConfigError(
        f"instructions{'' if index == 0 else f'[{index}]'} has the wrong type "
        f"({type(item).__name__}); expected {FORMS}"
    )
