"""Small helpers shared across the core, one of each (tests/test_shared_helpers.py).

``dumps``/``loads`` are how every JSON column and payload is written and read (compact, UTF-8
as is, a value JSON cannot hold written as its ``str()`` rather than failing a write).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import json.scanner
from collections.abc import Callable
from typing import Any


async def maybe_await(value: Any) -> Any:
    """The value, awaited if it is awaitable (for callbacks that may be sync or async)."""
    if inspect.isawaitable(value):
        return await value
    return value


async def call_off_loop(function: Callable[..., Any], *args: Any) -> Any:
    """Call a user callback that may be sync or async. A sync one runs in a worker thread (as
    pydantic-ai runs sync tools), so a slow tool or hook never stalls the event loop: lease
    renewal, subscriptions and the app go on meanwhile (tests/test_tools_off_loop.py). What it
    returns is awaited if awaitable."""
    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__  # an object with an async __call__
    ):
        return await function(*args)
    return await maybe_await(await asyncio.to_thread(function, *args))


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


# One encoder for every row: json.dumps with options builds a new encoder per call (2x slower).
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str, ensure_ascii=False)


def dumps(value: Any) -> str:
    """``value`` as compact JSON; what JSON cannot hold (a datetime, a set) as its ``str()``.
    None and an empty dict (a record's usual payload, attributes, metadata) without the
    encoder's Python entry."""
    if value is None:
        return "null"
    if type(value) is dict and not value:
        return "{}"
    return _ENCODER.encode(value)


def _text_form(value: Any) -> str:
    """What a strict check accepts for a value JSON cannot hold: a meaningful ``str()`` (a
    datetime, a path), not the default ``<Foo object at 0x…>``."""
    kind = type(value)
    if kind.__str__ is object.__str__ and kind.__repr__ is object.__repr__:
        raise TypeError(f"a {kind.__name__} object has no JSON form")
    return str(value)


_STRICT_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_text_form, ensure_ascii=False)


def why_unstorable(value: Any) -> str | None:
    """Why ``value`` cannot be stored as JSON (a circular structure, an integer too long to
    write, nesting too deep, an object with no JSON or text form), or None if it can."""
    try:
        _STRICT_ENCODER.encode(value)
    except (ValueError, TypeError, RecursionError) as error:
        return f"{type(error).__name__}: {str(error)[:200]}"
    return None


# What ``json.loads`` runs for a text: the default decoder's C scanner (json.loads, its
# decode() and raw_decode() are Python around it).
_scan_once: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.decoder.JSONDecoder())  # pyright: ignore[reportArgumentType]  (typeshed: its own type)


def loads(text: str | None) -> Any:
    """The value of a JSON column (``None`` for SQL NULL): ``json.loads(text)``, by its C
    scanner alone when the text is one JSON value and nothing else (as the stores write
    it); anything else (whitespace around it, bytes, an error) through ``json.loads``."""
    if text is None:
        return None
    try:
        value, end = _scan_once(text, 0)
    except (StopIteration, TypeError, ValueError):  # not a value at 0 (or not text)
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def json_round_trip(value: Any) -> Any:
    """``value`` as it reads back from the store: tuples become lists, keys strings, and what
    JSON cannot hold its ``str()`` (so what is returned equals what another process reads)."""
    return loads(dumps(value))


def dump_if_model(value: Any) -> Any:
    """A pydantic model as its JSON-mode dict; any other value unchanged (a tool's output is
    kept as the tool gave it, only a model is opened up so that it streams and stores)."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump is not None else value
