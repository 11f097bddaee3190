"""Agents defined in the settings file (``[[agents]]``): id, name, model, instructions, and
tools named by import path. A tool path names a ``Tool`` (``create_tool(...)``), a dict of
them, a function returning either, or a plain function, which becomes a tool whose input schema
is built from its signature."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from pydantic import create_model

from tui_agent.errors import ConfigError
from tui_agent.settings import AgentSettings, Settings


def build_configured_agent(settings: Settings, name: str | None, memory: Any,
                           model: str | None = None) -> Any:
    from tui_agent.agent.agent import Agent

    spec = _pick(settings, name)
    options = {"model_settings": {"max_tokens": spec.max_tokens}} if spec.max_tokens else {}
    return Agent(id=spec.id, name=spec.name or spec.id, instructions=spec.instructions,
                 model=model or spec.model, tools=load_tools(spec) or None, memory=memory,
                 default_options=options)


def _pick(settings: Settings, name: str | None) -> AgentSettings:
    if name is None:
        return settings.agents[0]
    spec = settings.agent(name)
    if spec is None:
        known = ", ".join(a.id for a in settings.agents)
        raise ConfigError(f"agent {name!r} is not in the settings' agents ({known})")
    return spec


def load_tools(spec: AgentSettings) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    for path in spec.tools:
        tools.update(_tools_at(path, spec.id))
    return tools


def _tools_at(path: str, agent_id: str) -> dict[str, Any]:
    from tui_agent.tools import Tool

    where = f"agents[{agent_id}].tools: {path!r}"
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"{where}: write it as package.module:name")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"{where}: cannot import {module_name!r} ({error})") from None
    if not hasattr(module, attribute):
        raise ConfigError(f"{where}: {module_name} has no attribute {attribute!r}")
    value = getattr(module, attribute)
    if isinstance(value, Tool):
        return {value.id: value}
    if callable(value) and not inspect.signature(value).parameters:
        value = value()  # a factory of tools
    if isinstance(value, Tool):
        return {value.id: value}
    if isinstance(value, dict) and all(isinstance(t, Tool) for t in value.values()):
        return dict(value)
    if callable(value):
        return {attribute: function_tool(attribute, value)}
    raise ConfigError(f"{where}: not a tool, a dict of tools or a function")


def function_tool(name: str, function: Any) -> Any:
    """A tool from a plain function: its parameters (with annotations and defaults) are the
    input schema, its docstring the description."""
    from tui_agent.tools import create_tool

    fields: dict[str, Any] = {}
    empty = inspect.Parameter.empty
    for parameter in inspect.signature(function).parameters.values():
        annotation = Any if parameter.annotation is empty else parameter.annotation
        default = ... if parameter.default is empty else parameter.default
        fields[parameter.name] = (annotation, default)
    schema = create_model(f"{name}_input", **fields)

    async def execute(tool_input: Any) -> Any:
        result = function(**tool_input.model_dump())
        return await result if inspect.isawaitable(result) else result

    return create_tool(id=name, description=inspect.getdoc(function) or name,
                       input_schema=schema, execute=execute)
