"""The embedded offline model, as a package (the split by concern follows)."""

from tui_agent.models.local.model import (
    CONTEXT_SIZE,
    KNOWN_MODELS,
    RUNTIME_PIP,
    THREADS_ENV,
    JsonReplyParser,
    LocalModel,
    LocalServer,
    check_runtime,
    default_threads,
    get_server,
    loaded_server,
    locate_weights,
    reply_schema,
    stop_servers,
)

__all__ = [
    "CONTEXT_SIZE",
    "KNOWN_MODELS",
    "RUNTIME_PIP",
    "THREADS_ENV",
    "JsonReplyParser",
    "LocalModel",
    "LocalServer",
    "check_runtime",
    "default_threads",
    "get_server",
    "loaded_server",
    "locate_weights",
    "reply_schema",
    "stop_servers",
]
