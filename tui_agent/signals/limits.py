"""Bounds on what a caller may send, checked by the call itself before anything is stored.

Every value that reaches the store as JSON (a message's text, attributes, metadata,
``provider_options``, ids) passes :func:`check_json_value` / :func:`check_text`: a lone surrogate
(not UTF-8), a value JSON cannot hold (a set, an object, NaN), an integer too large to write out,
nesting deeper than ``max_depth`` or text larger than ``max_text_bytes`` raises ``SignalError``
naming the field. The limits are settings (``tui-agent.toml`` or ``TUI_AGENT_MAX_*``; defaults in
:class:`InputLimits`), read once per process at first use; ``set_input_limits`` replaces them.
Checked by ``tests/test_bad_input.py``, which also prints the tried / refused / stored table.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tui_agent.errors import SignalError


@dataclass(frozen=True, slots=True)
class InputLimits:
    """The documented defaults; each is the setting of the same name (``max_text_bytes`` ...)."""

    max_text_bytes: int = 1_000_000  # a message's text, UTF-8 bytes, all text parts together
    max_attributes: int = 64  # attributes on one signal (or one routing branch)
    max_attribute_bytes: int = 16_384  # one attribute value as the model sees it, UTF-8 bytes
    max_id_length: int = 256  # thread, resource and run ids, characters
    max_depth: int = 32  # nesting of lists/dicts in attributes, metadata, provider_options
    max_int_digits: int = 4_300  # Python's own int→str limit: beyond it json cannot write it


_LIMITS: InputLimits | None = None


def input_limits() -> InputLimits:
    """The limits in force: the settings' values the first time, cached after that."""
    global _LIMITS
    if _LIMITS is None:
        from tui_agent.settings import current_settings

        configured = current_settings().input_limits()
        _LIMITS = InputLimits(**configured)
    return _LIMITS


def set_input_limits(limits: InputLimits | None) -> None:
    """Replace the limits for this process (None: read the settings again at next use)."""
    global _LIMITS
    _LIMITS = limits


def check_str(value: str, where: str) -> str:
    """A string that UTF-8 can carry (no lone surrogate): the store and every provider need it."""
    if value.isascii():  # no surrogate, and no copy to find it out (the common case)
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise SignalError(
            f"{where} contains a lone surrogate ({value[error.start]!r} at index {error.start}): "
            "it is not valid Unicode text and cannot be stored or sent"
        ) from None
    return value


def check_text(value: str, where: str, limits: InputLimits | None = None) -> int:
    """``value`` is valid text; returns its UTF-8 size (for a total across parts)."""
    check_str(value, where)
    size = len(value) if value.isascii() else len(value.encode("utf-8"))
    bound = (limits or input_limits()).max_text_bytes
    if size > bound:
        raise SignalError(
            f"{where} is {size:,} bytes; the limit is {bound:,} (setting max_text_bytes)"
        )
    return size


def check_id(value: str, where: str) -> str:
    """A thread/resource/run id: valid text, not blank, at most ``max_id_length`` characters."""
    check_str(value, where)
    bound = input_limits().max_id_length
    if len(value) > bound:
        raise SignalError(
            f"{where} is {len(value)} characters; the limit is {bound} (setting max_id_length)"
        )
    if "\x00" in value:
        raise SignalError(f"{where} contains a NUL character")
    return value


def check_json_value(value: Any, where: str, depth: int = 0) -> None:
    """``value`` can be stored as JSON and read back the same: strings (valid Unicode), finite
    numbers, booleans, None, lists/tuples and dicts with string keys, within the limits."""
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        check_str(value, where)
        return
    if isinstance(value, int):
        _check_int(value, where)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SignalError(f"{where} is {value!r}: numbers must be finite to be stored as JSON")
        return
    if isinstance(value, (list, tuple, Mapping)):
        _check_container(value, where, depth)
        return
    raise SignalError(
        f"{where} has unsupported type {type(value).__name__} (no JSON form): use strings, "
        "numbers, booleans, None, lists and dicts (convert it with str() first)"
    )


def _check_container(value: Any, where: str, depth: int) -> None:
    bound = input_limits().max_depth
    if depth >= bound:
        top = where.split("[", 1)[0]  # the field, not a path as deep as the nesting
        raise SignalError(f"{top} is nested deeper than {bound} levels (setting max_depth)")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise SignalError(f"{where} has a non-string key {key!r}")
            check_str(key, f"{where} key {key!r}")
            check_json_value(item, f"{where}[{key!r}]", depth + 1)
        return
    for i, item in enumerate(value):
        check_json_value(item, f"{where}[{i}]", depth + 1)


def _check_int(value: int, where: str) -> None:
    bound = min(input_limits().max_int_digits, sys.get_int_max_str_digits() or sys.maxsize)
    # bit_length * log10(2) is within one digit of the length, and costs nothing to compute.
    if value.bit_length() * 0.30103 > bound - 1:
        raise SignalError(
            f"{where} is an integer of about {int(value.bit_length() * 0.30103) + 1} digits; "
            f"the limit is {bound} digits (too large to write as JSON)"
        )


def check_limit(value: object, name: str) -> int:
    """A count of rows to read (``recall``, ``list_*``): a whole number >= 0. SQL reads a negative
    LIMIT as "no limit", so -1 would silently return everything."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        from tui_agent.errors import ConfigError

        raise ConfigError(f"{name} must be a whole number >= 0, got {value!r}")
    return value
