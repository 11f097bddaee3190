"""Checking a notification before anything is stored: ``validate_notification`` (the general
path: every field checked, defaults filled, each refusal a ``SignalError`` naming the field) and
``plain_notification`` (the one-pass check of the common case, which declines, never refuses:
what it declines goes to ``validate_notification``, so a refusal reads the same either way).
Tested in tests/test_signal_fast_path.py and tests/test_notifications.py."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tui_agent.errors import ConfigError, SignalError
from tui_agent.notifications.policy import PRIORITIES, PRIORITY_RANK
from tui_agent.notifications.records import STATUSES
from tui_agent.signals import check_attributes, unknown_keys_error
from tui_agent.signals.limits import (
    as_mapping,
    carries_utf8,
    check_json_value,
    check_str,
    check_text,
    flat_json_text,
    input_limits,
    plain_attributes,
)
from tui_agent.store.codec import dumps

_KEYS = frozenset({
    "source", "kind", "summary", "priority", "payload", "dedupe_key", "coalesce_key",
    "attributes", "metadata",
})
_RESERVED_ATTRIBUTES = ("id", "source", "kind", "priority")


def check_status(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise ConfigError(f"unknown notification status {status!r}; statuses: {STATUSES}")


# -- validation -----------------------------------------------------------------------------------


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SignalError(f"notification {key!r} must be a non-empty string, got {value!r}")
    check_text(value, f"notification {key!r}")
    return value


def _optional_key(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise SignalError(f"notification {key!r} must be a non-empty string, got {value!r}")
    return value if value is None else check_str(value, f"notification {key!r}")


# ``json.dumps(value, allow_nan=False)`` without an encoder made per call.
_strict_json = json.JSONEncoder(allow_nan=False).encode


def _check_json(value: object, what: str) -> Any:
    if flat_json_text(value) is not None:  # the common payload (None, a flat dict): one pass
        return value
    try:
        _strict_json(value)
    except RecursionError:
        check_json_value(value, f"notification {what}")  # names the field and the depth limit
        raise
    except (TypeError, ValueError) as exc:
        raise SignalError(f"notification {what} must be JSON: {exc}") from None
    check_json_value(value, f"notification {what}")  # also: lone surrogates, nesting depth
    return value


def validate_notification(value: object) -> dict[str, Any]:
    """The notification's fields, checked; a clear SignalError names the first problem."""
    raw = as_mapping(value)
    if raw is None:
        raise SignalError(f"notification must be a dict, got {type(value).__name__}")
    keys: set[str] = set(raw)
    if keys - _KEYS:
        raise unknown_keys_error(keys - _KEYS, _KEYS, "notification")
    priority = raw.get("priority", "medium")
    if priority not in PRIORITIES:
        raise SignalError(
            f"unknown notification priority {priority!r}; priorities: {', '.join(PRIORITIES)}"
        )
    attributes = check_attributes(raw.get("attributes"), "notification attributes")
    reserved = [k for k in _RESERVED_ATTRIBUTES if k in attributes]
    if reserved:
        raise SignalError(f"notification attributes {reserved} are set from the record itself")
    given_metadata = raw.get("metadata")
    metadata = as_mapping(given_metadata)
    if given_metadata is not None and metadata is None:
        raise SignalError(
            f"notification metadata must be a dict, got {type(given_metadata).__name__}")
    return {
        "source": _text(raw, "source"), "kind": _text(raw, "kind"),
        "summary": _text(raw, "summary"), "priority": priority,
        "payload": _check_json(raw.get("payload"), "payload"),
        "dedupe_key": _optional_key(raw, "dedupe_key"),
        "coalesce_key": _optional_key(raw, "coalesce_key"),
        "attributes": attributes, "metadata": _check_json(dict(metadata or {}), "metadata"),
    }


# A plain notification's checked fields (``validate_notification``'s), the store's JSON of its
# payload, attributes and metadata, and whether its metadata is names to plain scalars only.
Plain = tuple[dict[str, Any], str, str, str, bool]


def plain_notification(value: object) -> Plain | None:
    """``validate_notification(value)`` for the common notification (a dict of strings, a
    known priority, attributes of names to plain scalars, a payload and metadata of the one
    level :func:`~tui_agent.signals.limits.flat_json_text` takes, room for the signal's own
    attributes and metadata), checked in one pass, with the JSON the store writes of its
    payload, attributes and metadata; None for any other value, which
    :func:`validate_notification` takes, with its errors word for word.
    tests/test_signal_fast_path.py proves both agree."""
    if type(value) is not dict:
        return None
    if not value.keys() <= _KEYS:  # pyright: ignore[reportUnknownMemberType]
        return None
    raw: dict[str, Any] = {**_ABSENT, **value}  # pyright: ignore[reportUnknownArgumentType]
    priority, source, kind, summary = raw["priority"], raw["source"], raw["kind"], raw["summary"]
    if type(priority) is not str or priority not in PRIORITY_RANK:
        return None
    limits = _limits()
    for text in (source, kind, summary):  # _text's checks
        if type(text) is not str or not text.strip():
            return None
        if text.isascii():
            size = len(text)
        else:
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate
                return None
        if size > limits.max_text_bytes:
            return None
    dedupe_key, coalesce_key = raw["dedupe_key"], raw["coalesce_key"]
    for key in (dedupe_key, coalesce_key):  # _optional_key's
        if key is not None and (
                type(key) is not str or not key or not carries_utf8(key)):
            return None
    given = raw["attributes"]
    if given is None:
        attributes: dict[str, Any] = {}
        attributes_json = "{}"
    else:
        plain = plain_attributes(given)
        if plain is None or not plain.keys().isdisjoint(_RESERVED_ATTRIBUTES):
            return None
        attributes, attributes_json = plain, dumps(plain)
    given = raw["metadata"]
    if given is None:
        metadata: dict[str, Any] = {}
        metadata_json: str | None = "{}"
    elif type(given) is dict:
        metadata = dict(given)  # pyright: ignore[reportUnknownArgumentType]
        metadata_json = flat_json_text(metadata)
        if metadata_json is None:
            return None
    else:
        return None
    payload = raw["payload"]
    payload_json = "null" if payload is None else flat_json_text(payload)
    if payload_json is None:
        return None
    if (attributes or metadata or limits.max_attributes < 5) and (
            len(attributes) + len(metadata) + 4 + ("notification_id" not in metadata)
            > limits.max_attributes):
        return None  # near the limit: the general path checks the signal as a send does
    item = {"source": source, "kind": kind, "summary": summary, "priority": priority,
            "payload": payload, "dedupe_key": dedupe_key, "coalesce_key": coalesce_key,
            "attributes": attributes, "metadata": metadata}
    plain_metadata = not metadata or None not in metadata.values()
    return item, payload_json, attributes_json, metadata_json, plain_metadata


# What a notification leaves out (validate_notification's defaults; None: a refusal there).
_ABSENT: dict[str, Any] = dict.fromkeys(_KEYS) | {"priority": "medium"}
_limits = input_limits
