"""An editor's overrides of an agent (``Agent.apply_editor_overrides`` and the stored
overrides every run applies): what ``editor=`` allows, checked, and applied to a copy of the
agent or to a run's tools. ``id``, ``name`` and ``model`` are code-owned and dropped, as the
reference does. Tested by tests/test_agent_construction.py and tests/test_conformance.py.
"""

from __future__ import annotations

from copy import copy
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from tui_agent._util import json_round_trip
from tui_agent.agent.checks import EDITOR_FIELDS
from tui_agent.agent.instructions import check_instructions
from tui_agent.errors import ConfigError
from tui_agent.signals.limits import as_given_dict, as_mapping
from tui_agent.tools import Tool


class Editable(Protocol):
    """What the editor reads and sets of an agent (``Agent``; taken as a Protocol so the agent's
    modules import each other one way)."""

    id: str
    editor: Any
    tools: Any
    instructions: Any


E = TypeVar("E", bound=Editable)


def apply_overrides(agent: E, overrides: dict[str, Any]) -> E:
    """``Agent.apply_editor_overrides``: a copy of ``agent`` with an editor's overrides, within
    what its ``editor`` allows (code-owned fields dropped)."""
    overrides = without_code_owned(overrides)
    unknown = set(overrides) - set(EDITOR_FIELDS)
    if unknown:
        raise ConfigError(f"unknown editor override(s) {sorted(unknown)}")
    allowed = agent.editor
    if allowed is False:
        if overrides:
            raise ConfigError(f"agent {agent.id!r} is locked (editor=False)")
        return copy(agent)  # nothing to edit (tests/test_agent_construction.py)
    edited = copy(agent)  # with its own runtime (Agent.__copy__)
    if "instructions" in overrides:
        if not allowed.get("instructions", False):
            raise ConfigError(f"agent {agent.id!r} does not allow editing instructions")
        check_instructions(overrides["instructions"])
        edited.instructions = overrides["instructions"]
    if "tools" in overrides:
        edited.tools = edit_tools(agent, allowed.get("tools", False), overrides["tools"])
    return edited


def allowed_overrides(allowed_by: Any, stored: dict[str, Any]) -> dict[str, Any]:
    """What is stored for an agent, narrowed to what its ``editor=`` (``allowed_by``) allows
    now."""
    if allowed_by is False or not stored:
        return {}
    allowed: dict[str, Any] = {}
    if "instructions" in stored and allowed_by.get("instructions", False):
        allowed["instructions"] = stored["instructions"]
    tools_allowed = allowed_by.get("tools", False)
    if "tools" in stored and tools_allowed:
        full = tools_allowed is True
        allowed["tools"] = {
            name: change for name, change in stored["tools"].items() if full or change
        }
    return allowed


_CODE_OWNED = ("id", "name", "model")


def without_code_owned(overrides: object) -> dict[str, Any]:
    """An editor's overrides without the code-owned fields (the reference drops them)."""
    given = as_mapping(overrides)
    if given is None:
        raise ConfigError(f"editor overrides must be a dict, not {type(overrides).__name__}")
    return {key: value for key, value in given.items() if key not in _CODE_OWNED}


def storable_overrides(agent: Editable, overrides: dict[str, Any]) -> dict[str, Any]:
    """Checks what ``save_editor_overrides`` may store: the permission, then the forms (plain
    data only — a stored override cannot hold code)."""
    apply_overrides(agent, overrides)  # the permission and the forms, as for a copy
    stored: dict[str, Any] = {}
    if "instructions" in overrides:
        instructions = overrides["instructions"]
        if callable(instructions):
            raise ConfigError("stored instructions must be text or system messages, not code")
        stored["instructions"] = instructions
    if "tools" in overrides:
        tools: dict[str, Any] = {}
        for name, change in dict(overrides["tools"]).items():
            if isinstance(change, Tool):
                raise ConfigError(
                    f"tool override {name!r}: a Tool is code and cannot be stored; store "
                    "{'description': ...} or None, or use apply_editor_overrides()"
                )
            tools[name] = None if change is None else {"description": change["description"]}
        stored["tools"] = tools
    json_round_trip(stored)  # plain JSON, or a clear error now
    return stored


def with_stored_tool_edits(tools: dict[str, Tool], edits: dict[str, Any]) -> dict[str, Tool]:
    """A run's tools with the stored descriptions and removals (a tool the code no longer has
    is skipped: code wins)."""
    edited = dict(tools)
    for name, change in edits.items():
        if name not in edited:
            continue
        if change is None:
            del edited[name]
        else:
            edited[name] = replace(edited[name], description=change["description"])
    return edited


def edit_tools(agent: Editable, allowed: Any, changes: Any) -> dict[str, Tool]:
    """Editor tool overrides: ``{name: {"description": ...} | None(remove) | Tool(add)}``."""
    if not allowed:
        raise ConfigError(f"agent {agent.id!r} does not allow editing tools")
    only = as_given_dict(allowed)
    descriptions_only = only is not None
    if only is not None and not only.get("description"):
        raise ConfigError(f"agent {agent.id!r} does not allow editing tools")
    if callable(agent.tools):
        raise ConfigError("tools given as a callable cannot be edited")
    tools = dict(agent.tools)
    edits: dict[str, Any] = dict(changes)
    for name, change in edits.items():
        described = as_given_dict(change)
        if described is not None and set(described) <= {"description"}:
            if name not in tools:
                raise ConfigError(f"no tool {name!r} to describe")
            tools[name] = replace(tools[name], description=change["description"])
        elif descriptions_only:
            raise ConfigError(f"agent {agent.id!r} allows editing tool descriptions only")
        elif change is None:
            tools.pop(name, None)
        elif isinstance(change, Tool):
            tools[name] = change
        else:
            raise ConfigError(f"tool override {name!r} must be {{'description'}}, None or a Tool")
    return tools
