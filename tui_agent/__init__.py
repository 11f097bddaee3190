"""tui-agent: agents on shared, live threads.

Public names load lazily so that ``import tui_agent`` stays fast and never imports litellm or
textual.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Agent": "tui_agent.agent.agent",
    "create_tool": "tui_agent.tools",
    "Tool": "tui_agent.tools",
    "Memory": "tui_agent.memory",
    "SqliteStore": "tui_agent.store",
    "RequestContext": "tui_agent.context",
}

__all__ = [
    "Agent",
    "Memory",
    "RequestContext",
    "SqliteStore",
    "Tool",
    "__version__",
    "create_tool",
]

if TYPE_CHECKING:
    from tui_agent.agent.agent import Agent
    from tui_agent.context import RequestContext
    from tui_agent.memory import Memory
    from tui_agent.store import SqliteStore
    from tui_agent.tools import Tool, create_tool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tui_agent' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
