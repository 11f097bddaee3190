"""Bounds on what a caller may send, and the checks of every value against them: each value is
checked once, where the call reads it, before anything is stored (names, attributes, contents,
JSON values, text, ids).

Every value that reaches the store as JSON (a message's text, attributes, metadata,
``provider_options``, ids) passes :func:`check_json_value` / :func:`check_text`: a lone surrogate
(not UTF-8), a value JSON cannot hold (a set, an object, NaN), an integer too large to write out,
nesting deeper than ``max_depth`` or text larger than ``max_text_bytes`` raises ``SignalError``
naming the field. The limits are settings (``tui-agent.toml`` or ``TUI_AGENT_MAX_*``; defaults in
:class:`InputLimits`), read once per process at first use; ``set_input_limits`` replaces them.
Checked by ``tests/test_bad_input.py``, which also prints the tried / refused / stored table.
"""

from __future__ import annotations

import base64
import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from tui_agent.errors import SignalError

NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_.-]*"
NAME_RE = re.compile(NAME_PATTERN)
# An XML parser turns an attribute named xmlns into a namespace declaration: the element would no
# longer carry the attribute (nor keep its plain tag), so the model would not see what was sent.
_RESERVED_ATTRIBUTES = frozenset({"xmlns"})

_TEXT_PART_KEYS = frozenset({"type", "text", "provider_options"})
_FILE_PART_KEYS = frozenset({"type", "data", "url", "media_type", "filename", "provider_options"})



@dataclass(frozen=True, slots=True)
class InputLimits:
    """The documented defaults; each is the setting of the same name (``max_text_bytes`` ...)."""

    max_text_bytes: int = 1_000_000  # a message's text, UTF-8 bytes, all text parts together
    max_attributes: int = 64  # attributes on one signal (or one routing branch)
    max_attribute_bytes: int = 16_384  # one attribute value as the model sees it, UTF-8 bytes
    max_id_length: int = 256  # thread, resource and run ids, characters
    max_depth: int = 32  # nesting of lists/dicts in attributes, metadata, provider_options
    max_int_digits: int = 4_300  # Python's own int→str limit: beyond it json cannot write it


_limits: InputLimits | None = None


def input_limits() -> InputLimits:
    """The limits in force: the settings' values the first time, cached after that."""
    global _limits
    if _limits is None:
        from tui_agent.settings import current_settings

        configured = current_settings().input_limits()
        _limits = InputLimits(**configured)
    return _limits


def set_input_limits(limits: InputLimits | None) -> None:
    """Replace the limits for this process (None: read the settings again at next use)."""
    global _limits
    _limits = limits


def carries_utf8(text: str) -> bool:
    """Whether UTF-8 can carry ``text`` (no lone surrogate): :func:`check_str`'s test, as a yes
    or no for the fast paths that hand anything else to the general path."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


def check_json_value(value: object, where: str, depth: int = 0) -> None:
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
        _check_container(cast("list[Any] | tuple[Any, ...] | Mapping[Any, Any]", value), where,
                         depth)
        return
    raise SignalError(
        f"{where} has unsupported type {type(value).__name__} (no JSON form): use strings, "
        "numbers, booleans, None, lists and dicts (convert it with str() first)"
    )


def _check_container(
    value: list[Any] | tuple[Any, ...] | Mapping[Any, Any], where: str, depth: int
) -> None:
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


# -- names, attributes, contents ------------------------------------------------------------------


def check_name(name: object, what: str, where: str = "") -> str:
    """Return ``name`` if it is a valid XML tag/attribute name for the model, else raise."""
    suffix = f" in {where}" if where else ""
    if not isinstance(name, str):
        raise SignalError(f"{what}{suffix} must be a string, got {type(name).__name__}")
    if name == "":
        raise SignalError(f"{what}{suffix} must not be empty (names match {NAME_PATTERN})")
    if not NAME_RE.fullmatch(name):
        raise SignalError(f"invalid {what} {name!r}{suffix}: names must match {NAME_PATTERN}")
    return name


def _check_attribute_value(value: object, where: str, limits: InputLimits) -> None:
    check_json_value(value, where)
    if isinstance(value, str):
        size = len(value) if value.isascii() else len(value.encode("utf-8"))
    elif isinstance(value, (list, tuple, Mapping)):
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    else:
        return  # a number, bool or None: small
    if size > limits.max_attribute_bytes:
        raise SignalError(
            f"{where} is {size:,} bytes; the limit is {limits.max_attribute_bytes:,} "
            "(setting max_attribute_bytes)"
        )


def check_attributes(attributes: object, what: str = "attributes") -> dict[str, Any]:
    """Validate attribute names and values; return a new dict in the same order."""
    if attributes is None:
        return {}
    given = as_mapping(attributes)
    if given is None:
        raise SignalError(f"{what} must be a dict, got {type(attributes).__name__}")
    limits = input_limits()
    if len(given) > limits.max_attributes:
        raise SignalError(
            f"{what} has {len(given)} attributes; the limit is {limits.max_attributes} "
            "(setting max_attributes)"
        )
    out: dict[str, Any] = {}
    for name, value in given.items():
        name = check_name(name, "attribute name", what)
        if name in _RESERVED_ATTRIBUTES:
            raise SignalError(f"attribute name {name!r} in {what} is reserved by XML")
        _check_attribute_value(value, f"{what}[{name!r}]", limits)
        out[name] = value
    return out


# Attribute names seen valid (a burst names the same few again and again), bounded.
_GOOD_NAMES: set[object] = set()


def _good_name(name: object) -> bool:
    if type(name) is not str or not NAME_RE.fullmatch(name) or name in _RESERVED_ATTRIBUTES:
        return False
    if len(_GOOD_NAMES) >= 4096:
        _GOOD_NAMES.clear()
    _GOOD_NAMES.add(name)
    return True


def plain_attributes(given: object) -> dict[str, Any] | None:
    """:func:`check_attributes` for the common attributes, names to plain scalars (ASCII text,
    finite numbers, booleans, None), in one loop: a copy in the same order, or None when any is
    not so plain (or is refused), for ``check_attributes`` to check with its own errors. None
    given (no attributes) is ``{}``, as there."""
    if given is None:
        return {}
    if type(given) is not dict:
        return None
    given = cast("dict[object, object]", given)  # the caller's: each key and value checked next
    limits = input_limits()
    if len(given) > limits.max_attributes:
        return None
    max_bytes = limits.max_attribute_bytes
    int_digits = min(limits.max_int_digits, sys.get_int_max_str_digits() or sys.maxsize) - 1
    for name, value in given.items():
        if name not in _GOOD_NAMES and not _good_name(name):
            return None
        if type(value) is str:
            if len(value) > max_bytes or not value.isascii():
                return None
        elif type(value) is int:
            if value.bit_length() * 0.30103 > int_digits:
                return None
        elif type(value) is float:
            if not math.isfinite(value):
                return None
        elif type(value) is not bool and value is not None:
            return None
    return cast("dict[str, Any]", dict(given))


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def unknown_keys_error(
    keys: set[str], allowed: frozenset[str] | set[str], what: str
) -> SignalError:
    """An error naming the unknown keys, the allowed ones, and the snake_case spelling of a
    camelCase key from the reference (``tagName`` → ``tag_name``)."""
    bad = sorted(keys)
    hints = [f"{k!r} → {_snake_case(k)!r}" for k in bad if _snake_case(k) in allowed]
    hint = f" (names are snake_case: {', '.join(hints)})" if hints else ""
    return SignalError(
        f"unknown key(s) {', '.join(map(repr, bad))} in {what}; "
        f"allowed: {', '.join(sorted(allowed))}{hint}"
    )


def _check_part(value: object, where: str) -> dict[str, Any]:
    part = as_mapping(value)
    if part is None:
        raise SignalError(f"{where} must be a dict part, got {type(value).__name__}")
    kind = part.get("type")
    if kind == "text":
        if set(part) - _TEXT_PART_KEYS:
            raise unknown_keys_error(set(part) - _TEXT_PART_KEYS, _TEXT_PART_KEYS, where)
        if not isinstance(part.get("text"), str):
            raise SignalError(f"{where} is a text part and needs 'text' as a string")
        check_json_value(part.get("provider_options"), f"{where} provider_options")
        return dict(part)
    if kind == "file":
        return _check_file_part(part, where)
    raise SignalError(f"{where} has type {kind!r}; parts are 'text' or 'file'")


def _check_file_part(part: Mapping[Any, Any], where: str) -> dict[str, Any]:
    if set(part) - _FILE_PART_KEYS:
        raise unknown_keys_error(set(part) - _FILE_PART_KEYS, _FILE_PART_KEYS, where)
    has_data, has_url = part.get("data") is not None, part.get("url") is not None
    if has_data == has_url:
        raise SignalError(f"{where} is a file part and needs exactly one of 'data' or 'url'")
    if not isinstance(part.get("media_type"), str) or not part["media_type"]:
        raise SignalError(f"{where} is a file part and needs 'media_type' (e.g. 'image/png')")
    out: dict[str, Any] = {k: v for k, v in part.items() if v is not None}
    data = out.get("data")
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = cast("bytes | bytearray | memoryview[int]", data)
        out["data"] = base64.b64encode(bytes(raw)).decode("ascii")  # stored as JSON
    elif has_data and not isinstance(data, str):
        raise SignalError(f"{where} 'data' must be base64 text or bytes")
    if has_url and not isinstance(out["url"], str):
        raise SignalError(f"{where} 'url' must be a string")
    for key, value in out.items():
        check_json_value(value, f"{where} {key!r}")
    return out


def check_contents(contents: object, what: str = "contents") -> str | list[dict[str, Any]]:
    """Contents are a string or a list of text/file parts; their text within max_text_bytes."""
    if isinstance(contents, str):
        check_text(contents, what)
        return contents
    items = as_items(contents)
    if items is not None:
        parts = [_check_part(p, f"{what}[{i}]") for i, p in enumerate(items)]
        _check_total_text(parts, what)
        return parts
    raise SignalError(
        f"{what} must be a string or a list of text/file parts, got {type(contents).__name__}"
    )


def _check_total_text(parts: list[dict[str, Any]], what: str) -> None:
    """Each text part is valid text; all of them together within max_text_bytes."""
    limits = input_limits()
    total = 0
    for i, part in enumerate(parts):
        if part["type"] == "text":
            total += check_text(part["text"], f"{what}[{i}] text", limits)
    if total > limits.max_text_bytes:
        raise SignalError(
            f"{what} text is {total:,} bytes; the limit is {limits.max_text_bytes:,} "
            "(setting max_text_bytes)"
        )


def check_json_object(value: object, what: str) -> dict[str, Any]:
    """A dict that can be stored as JSON (see ``check_json_value``), as a new dict."""
    if value is None:
        return {}
    mapping = as_mapping(value)
    if mapping is None:
        raise SignalError(f"{what} must be a dict, got {type(value).__name__}")
    check_json_value(mapping, what)
    return dict(mapping)


def as_mapping(value: object) -> Mapping[Any, Any] | None:
    """``value`` if it is a mapping, else None. Its keys and values are the caller's, not
    checked yet."""
    return cast("Mapping[Any, Any]", value) if isinstance(value, Mapping) else None


def as_given_dict(value: object) -> dict[Any, Any] | None:
    """``value`` if it is a dict, else None. Its keys and values are the caller's, not checked
    yet."""
    return cast("dict[Any, Any]", value) if isinstance(value, dict) else None


def as_items(value: object) -> list[Any] | tuple[Any, ...] | None:
    """``value`` if it is a list or tuple, else None. Its items are the caller's, not checked
    yet."""
    if isinstance(value, list | tuple):
        return cast("list[Any] | tuple[Any, ...]", value)
    return None


# The store's JSON form (codec.dumps: compact, not ASCII-escaped), refusing what is not JSON.
_flat_json_of = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_FLAT = frozenset({str, int, float, bool, type(None)})


def flat_json_text(value: Any) -> str | None:
    """The store's JSON of ``value`` (``codec.dumps``'s form) for the common value (a scalar,
    or a dict of string keys to plain scalars: one level, nothing to recurse into), checked in
    one pass over it and its JSON as :func:`check_json_value` checks it; None for any other
    value (or one that fails a check), which the general check takes, with its errors word for
    word (a state's ``state.lanes.json_text``, a notification's payload and metadata).
    tests/test_signal_fast_path.py proves both agree."""
    if value is None:
        return "null"
    kind: type[Any] = type(value)  # pyright: ignore[reportUnknownVariableType]
    limits = input_limits()
    if kind is dict:
        if limits.max_depth < 1:
            return None  # a dict is nested deeper than the limit allows: the general error
        if not value:
            return "{}"
        if not all(
                type(key) is str and type(item) in _FLAT for key, item in value.items()):
            return None
    elif kind not in _FLAT:
        return None
    try:
        text = _flat_json_of(value)
    except ValueError:  # NaN or infinity: the general path's error
        return None
    if not carries_utf8(text):  # a lone surrogate in a key or string is in the text as it is
        return None
    # An integer of D digits is within the limit when D <= bound - 2 (``_check_int``), and no
    # integer in the text is longer than the text.
    bound = min(limits.max_int_digits, sys.get_int_max_str_digits() or sys.maxsize)
    if len(text) > bound - 2:
        return None
    return text
