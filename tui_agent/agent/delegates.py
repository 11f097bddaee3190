"""An agent's sub-agents and workflows as tools its model can call (``Agent(agents=...,
workflows=...)``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from tui_agent._util import maybe_await
from tui_agent.tools import Tool, create_tool


class Delegate(Protocol):
    """A sub-agent as its tool uses it (``Agent``; a Protocol so the agent's modules import
    each other one way)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...

    async def generate(self, messages: Any, **options: Any) -> Any: ...


def subagent_tool(key: str, agent: Delegate) -> Tool:
    async def ask(tool_input: dict[str, Any], context: Any) -> str:
        result = await agent.generate(tool_input["prompt"], request_context=context.request_context)
        return result.text

    return create_tool(
        id=f"agent-{key}",
        description=agent.description or f"Ask the agent {agent.name!r}; give it a prompt.",
        input_schema={
            "type": "object",
            "properties": {"prompt": {"type": "string"}},
            "required": ["prompt"],
        },
        execute=ask,
    )


def workflow_tool(key: str, workflow: Callable[..., Any]) -> Tool:
    async def run(tool_input: dict[str, Any]) -> Any:
        return await maybe_await(workflow(tool_input.get("input_data")))

    return create_tool(
        id=f"workflow-{key}",
        description=getattr(workflow, "__doc__", None) or f"Run the workflow {key!r}.",
        input_schema={"type": "object", "properties": {"input_data": {}}},
        execute=run,
    )
