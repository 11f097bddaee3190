"""The checks of ``Agent(...)``'s fields, run when the agent is built (issue 21, point 4).

Each check takes the value as given and returns it in the form the agent keeps, or raises a
``ConfigError`` (``ProcessorError`` for processors, as at run time) whose message starts with
the field and, for a dict or a list, the key or index at fault: ``workflows['w'] must be a
function …``. Nothing given is dropped silently. A field given as a function of the request
context is checked when a run resolves it (``agent._per_run``), by the same check.
Tested by tests/test_agent_construction.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from tui_agent.errors import ConfigError
from tui_agent.signals.limits import as_given_dict, as_mapping
from tui_agent.tools import Tool, is_tool_name

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tui_agent.memory import Memory

    #: ``request_context_schema``: a pydantic model class, a JSON schema, or none.
    ContextSchema: TypeAlias = type[BaseModel] | dict[str, Any] | None

EDITOR_FIELDS = ("instructions", "tools")


def keyed(value: object, field: str, what: str, *, prefix: str | None = None) -> dict[str, Any]:
    """``value`` as a dict of ``what`` by name (None: empty); each key a non-empty string,
    which makes a tool name once ``prefix`` is put before it when one is given (tools,
    subagents and workflows become tools the model calls by that name)."""
    if value is None:
        return {}
    given = as_mapping(value)
    if given is None:
        raise ConfigError(
            f"{field} must be a dict {{name: {what}}} or a function of the request context, "
            f"not {type(value).__name__}"
        )
    for key in given:
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{field}: key {key!r} must be a non-empty string")
        if prefix is not None and not is_tool_name(prefix + key):
            raise ConfigError(
                f"{field}[{key!r}]: the name must be letters, digits, '_' or '-' (it names "
                f"a tool to the model)"
            )
    return dict(given)


def check_tools(tools: object) -> dict[str, Tool]:
    checked = keyed(tools, "tools", "tool", prefix="")
    for name, tool in checked.items():
        if not isinstance(tool, Tool):
            raise ConfigError(
                f"tools[{name!r}] is not a tool ({type(tool).__name__}): build it with "
                "create_tool(...)"
            )
    return checked


def check_workflows(workflows: object) -> dict[str, Callable[..., Any]]:
    checked = keyed(workflows, "workflows", "workflow", prefix="workflow-")
    for name, workflow in checked.items():
        if not callable(workflow):
            raise ConfigError(
                f"workflows[{name!r}] must be a function of its input (it becomes the tool "
                f"'workflow-{name}'), not {type(workflow).__name__}"
            )
    return checked


def check_scorers(scorers: object) -> dict[str, Any]:
    checked = keyed(scorers, "scorers", "scorer")
    for name, scorer in checked.items():
        if not callable(getattr(scorer, "score", scorer)):
            raise ConfigError(
                f"scorers[{name!r}] must be a function of the run or an object with a "
                f".score(run) method, not {type(scorer).__name__}"
            )
    return checked


def check_agents(agents: object, agent_class: type[Any]) -> dict[str, Any]:
    checked = keyed(agents, "agents", "Agent", prefix="agent-")
    for name, agent in checked.items():
        if not isinstance(agent, agent_class):
            raise ConfigError(f"agents[{name!r}] is not an Agent ({type(agent).__name__})")
    return checked


def check_metadata(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    given = as_mapping(metadata)
    if given is None:
        raise ConfigError(
            f"metadata must be a dict or a function of the request context, not "
            f"{type(metadata).__name__}"
        )
    for key in given:
        if not isinstance(key, str):
            raise ConfigError(f"metadata: key {key!r} must be a string")
    return dict(given)


def check_memory(memory: Any) -> Memory | None:
    if memory is None:
        return None
    if not hasattr(memory, "store") or not hasattr(memory, "model_history"):
        raise ConfigError(f"memory must be a Memory(...), not {type(memory).__name__}")
    return cast("Memory", memory)  # a Memory, or an object that acts as one


def check_description(description: object) -> str | None:
    if description is None or isinstance(description, str):
        return description
    raise ConfigError(f"description must be a string, not {type(description).__name__}")


def check_retries(retries: object) -> int:
    if retries is None:
        return 3
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"max_processor_retries must be an integer >= 0, not {retries!r}")
    return retries


def check_context_schema(schema: object) -> ContextSchema:
    if schema is None:
        return None
    given = as_given_dict(schema)
    if given is not None:
        import jsonschema.validators

        try:
            jsonschema.validators.validator_for(given).check_schema(given)
        except jsonschema.SchemaError as error:
            raise ConfigError(
                f"request_context_schema is not a valid JSON schema: {error.message}"
            ) from None
        return cast("dict[str, Any]", given)
    if isinstance(schema, type) and hasattr(schema, "model_validate"):
        return cast("type[BaseModel]", schema)
    raise ConfigError("request_context_schema must be a pydantic model class or a JSON schema")


_EDITOR_HELP = (
    "editor must be False or {'instructions': bool, 'tools': bool | {'description': bool}}"
)


def check_editor(editor: object) -> Literal[False] | dict[str, Any]:
    if editor is None:
        return {"instructions": True, "tools": True}  # the reference's default
    if editor is False:
        return False
    given = as_given_dict(editor)
    if given is None or set(given) - set(EDITOR_FIELDS):
        raise ConfigError(_EDITOR_HELP)
    if not isinstance(given.get("instructions", False), bool):
        raise ConfigError(f"editor['instructions']: {_EDITOR_HELP}")
    tools = given.get("tools", False)
    only = as_given_dict(tools)
    if not isinstance(tools, bool) and (
        only is None
        or set(only) - {"description"}
        or not isinstance(only.get("description", False), bool)
    ):
        raise ConfigError(f"editor['tools']: {_EDITOR_HELP}")
    return given


def named(field: str, check: Callable[[Any], Any], value: Any) -> Any:
    """``check(value)``, its ``ConfigError`` starting with ``field`` (a check that knows the
    value only, not where it was given)."""
    try:
        return check(value)
    except ConfigError as error:
        if str(error).startswith(field):
            raise
        raise ConfigError(f"{field}: {error}") from None


def static_or_fn(value: Any, check: Callable[[Any], Any]) -> Any:
    """A constructor field as given: a function of the request context is kept (checked when
    a run resolves it), anything else is checked now."""
    if callable(value) and not isinstance(value, Mapping | list | tuple):
        return value
    return check(value)
