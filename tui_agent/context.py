"""The request context: per-call values (user id, tier, locale...) that tools, instructions and
model callables read. A mapping; wherever one is taken, a plain dict is accepted too."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from tui_agent.errors import ConfigError


class RequestContext(MutableMapping[str, Any]):
    def __init__(self, values: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        self._values: dict[str, Any] = {**(values or {}), **kwargs}

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._values[key] = value

    def __delitem__(self, key: str) -> None:
        del self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"RequestContext({self._values!r})"

    def set(self, key: str, value: Any) -> None:
        self._values[key] = value

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    @classmethod
    def coerce(cls, value: Mapping[str, Any] | None) -> RequestContext:
        if isinstance(value, RequestContext):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"request_context must be a RequestContext or a dict, not {type(value).__name__}"
            )
        return cls(value)
