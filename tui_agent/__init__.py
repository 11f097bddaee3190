"""tui-agent: agents on shared, live threads.

Everything a program writes against is importable from here: the agent and its tools, memory
and the stores, the error family, the test model and the stream's event types. Names load
lazily (on first access), so ``import tui_agent`` stays fast and never imports litellm or
textual (tests/test_import.py); ``from tui_agent import Agent`` loads the agent core only.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_ERRORS = (
    "TuiAgentError", "ConfigError", "ArgumentTypeError", "MissingCredentialError",
    "UnknownProviderError", "ToolDefinitionError", "RequestContextError", "SignalError",
    "ModelCallError",
    "ModelNotInstalledError", "ProcessorError", "RunFailedError", "StoreError",
    "ApprovalError", "RunSetAsideError",
    "StoreCorruptError", "LeaseLostError", "StoreFullError", "ThreadBusyError",
)
_EVENTS = (
    "Chunk", "ChunkType", "StartChunk", "StepStartChunk", "TextDeltaChunk", "ToolCallChunk",
    "ToolResultChunk", "StepFinishChunk", "FinishChunk", "AbortChunk", "ErrorChunk",
    "InterruptedChunk", "EchoChunk", "SupersededChunk", "ToolCallApprovalChunk", "is_end",
)
# public name → the module that defines it
_EXPORTS: dict[str, str] = {
    "Agent": "tui_agent.agent.agent",
    "create_tool": "tui_agent.tools",
    "Tool": "tui_agent.tools",
    "Memory": "tui_agent.memory",
    "RequestContext": "tui_agent.context",
    "open_store": "tui_agent.store.url",
    "Store": "tui_agent.store.contract",
    "SqliteStore": "tui_agent.store.sqlite",
    "PostgresStore": "tui_agent.store.postgres",  # asyncpg itself loads when one connects
    "ScriptedModel": "tui_agent.testing",
    **dict.fromkeys(_ERRORS, "tui_agent.errors"),
    **dict.fromkeys(_EVENTS, "tui_agent.events"),
}

__all__ = [  # every name of _EXPORTS (tests/test_import.py)
    "AbortChunk", "Agent", "ApprovalError", "ArgumentTypeError", "Chunk", "ChunkType",
    "ConfigError", "EchoChunk", "ErrorChunk", "FinishChunk", "InterruptedChunk", "LeaseLostError",
    "Memory", "MissingCredentialError", "ModelCallError", "ModelNotInstalledError",
    "PostgresStore", "ProcessorError", "RequestContext", "RequestContextError", "RunFailedError",
    "RunSetAsideError", "ScriptedModel", "SignalError", "SqliteStore", "StartChunk",
    "StepFinishChunk", "StepStartChunk", "Store", "StoreCorruptError", "StoreError",
    "StoreFullError", "SupersededChunk", "TextDeltaChunk", "ThreadBusyError", "Tool",
    "ToolCallApprovalChunk", "ToolCallChunk", "ToolDefinitionError", "ToolResultChunk",
    "TuiAgentError", "UnknownProviderError", "__version__", "create_tool", "is_end", "open_store",
]

if TYPE_CHECKING:
    from tui_agent.agent.agent import Agent
    from tui_agent.context import RequestContext
    from tui_agent.errors import (
        ApprovalError,
        ArgumentTypeError,
        ConfigError,
        LeaseLostError,
        MissingCredentialError,
        ModelCallError,
        ModelNotInstalledError,
        ProcessorError,
        RequestContextError,
        RunFailedError,
        RunSetAsideError,
        SignalError,
        StoreCorruptError,
        StoreError,
        StoreFullError,
        ThreadBusyError,
        ToolDefinitionError,
        TuiAgentError,
        UnknownProviderError,
    )
    from tui_agent.events import (
        AbortChunk,
        Chunk,
        ChunkType,
        EchoChunk,
        ErrorChunk,
        FinishChunk,
        InterruptedChunk,
        StartChunk,
        StepFinishChunk,
        StepStartChunk,
        SupersededChunk,
        TextDeltaChunk,
        ToolCallApprovalChunk,
        ToolCallChunk,
        ToolResultChunk,
        is_end,
    )
    from tui_agent.memory import Memory
    from tui_agent.store.contract import Store
    from tui_agent.store.postgres import PostgresStore
    from tui_agent.store.sqlite import SqliteStore
    from tui_agent.store.url import open_store
    from tui_agent.testing import ScriptedModel
    from tui_agent.tools import Tool, create_tool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tui_agent' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
