"""Small helpers shared across the core."""

from __future__ import annotations

import inspect
from typing import Any


async def maybe_await(value: Any) -> Any:
    """The value, awaited if it is awaitable (for callbacks that may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


def as_dict(value: Any, what: str) -> dict[str, Any]:
    """A plain dict from a dict or a pydantic model; a clear error otherwise."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(exclude_unset=True)
    from tui_agent.errors import ConfigError

    raise ConfigError(f"{what} must be a dict or a pydantic model, not {type(value).__name__}")
