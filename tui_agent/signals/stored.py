"""A signal as the store keeps it, and back: the one record a routed signal becomes
(:func:`signal_in`, its data with the branch's attributes merged), and the model message
rendered from a stored signal's data when it is read (:func:`model_message_of`).

The store keeps rows and renders nothing: it stores the data only (a message is stored once,
tests/test_store_once.py) and asks the renderer installed here for the model message when a
row is read (``tui_agent.store.records.install_signal_renderer``). A plain text message (most
of what is sent) is written without pydantic or a JSON encoder (``plain_text_in``);
tests/test_signal_fast_path.py proves it gives exactly the general path's record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC
from json import encoder as json_encoder
from typing import Any, cast

from tui_agent.signals.data import SIGNAL_TYPES, PlainText, Signal
from tui_agent.signals.elements import (
    merge_checked,
    model_message,
    neutralize_markup,
    render_element,
)
from tui_agent.store.records import SignalIn, install_signal_renderer

# json's own string encoder (ensure_ascii=False, as the store's dumps): C, one call per string.
_json_str = json_encoder.encode_basestring
# The store's JSON form (codec.dumps), refusing what is not JSON instead of converting it.
_dumps_strict = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def branch_records(
    sent: Signal | PlainText, active_attributes: dict[str, Any], idle_attributes: dict[str, Any]
) -> tuple[SignalIn, SignalIn]:
    """What the store keeps of a routed signal on each branch (if the thread is active, if it
    is idle): one record when the branches' attributes are the same (the default), so it is
    built once. A ``PlainText`` (only for branches without attributes) is written as its JSON
    without a Signal (:func:`plain_text_in`)."""
    if isinstance(sent, PlainText):
        record = plain_text_in(sent.id, sent.tag_name, sent.text, sent.created_json, sent.type,
                               sent.attributes, sent.metadata)
        return record, record
    when_active = signal_in(sent, active_attributes)
    if active_attributes == idle_attributes:
        return when_active, when_active
    return when_active, signal_in(sent, idle_attributes)


def signal_in(signal: Signal, branch_attributes: dict[str, Any]) -> SignalIn:
    """The signal as stored for one branch: the model message and the echo payload, both with
    the branch's attributes merged over the signal's own."""
    if not branch_attributes and is_plain_text(signal):
        return plain_signal_in(signal)
    return signal_in_general(signal, branch_attributes)


def signal_in_general(signal: Signal, branch_attributes: dict[str, Any]) -> SignalIn:
    """:func:`signal_in` for any signal: its data's JSON built without pydantic's dump where
    it can be (:func:`signal_json`; tests/test_signal_fast_path.py proves it is the dump's),
    else through :func:`signal_in_reference`."""
    attributes = merge_checked(signal.attributes, branch_attributes)
    fields = signal.__dict__
    if _is_plain(fields, attributes):  # one string, scalar attributes: no encoder at all
        created = fields["created_at"].isoformat()[:-6] + "Z"  # pydantic's JSON of a UTC time
        return plain_text_in(fields["id"], fields["tag_name"], fields["contents"], created,
                             fields["type"], attributes, fields["metadata"])
    data_json = signal_json(signal, attributes)
    if data_json is None:
        return signal_in_reference(signal, branch_attributes)
    return SignalIn(signal.id, signal.type, None, None, data_json, derived_message=True)


def _is_plain(fields: Mapping[str, Any], attributes: dict[str, Any]) -> bool:
    """A signal's fields (and its merged attributes) that :func:`plain_text_in` writes as the
    encoder would: one string, a known type, a tag, names to plain scalars, nothing else, a
    time in UTC (a Signal made with ``model_construct`` may hold anything: checked here).
    Metadata may be names to plain scalars too (a state signal's lane and version), None
    excepted: the encoder writes a None value, the attributes' JSON leaves it out."""
    metadata: Any = fields["metadata"]  # anything (model_construct): its type checked next
    options = fields["provider_options"]
    return (
        type(fields["contents"]) is str and type(fields["id"]) is str
        and type(fields["tag_name"]) is str and type(fields["type"]) is str
        and fields["type"] in _TYPES
        and type(metadata) is dict and type(options) is dict and not options
        and fields["created_at"].tzinfo is UTC
        and _plain_scalars(attributes) and _plain_scalars(cast("dict[Any, Any]", metadata))
    )


def _plain_scalars(values: Mapping[Any, object]) -> bool:
    """Names to plain scalars (a float finite): a loop, not ``all()`` over a generator (a
    burst's sends check two dicts each)."""
    for name, value in values.items():
        kind = type(value)
        if type(name) is not str or kind not in _SCALAR_JSON:
            return False
        if kind is float and not math.isfinite(cast(float, value)):
            return False
    return True


_TYPES = frozenset(SIGNAL_TYPES)


def signal_json(signal: Signal, attributes: dict[str, Any]) -> str | None:
    """``dumps`` of ``signal.model_dump(mode="json")`` with ``attributes``, made with the
    C JSON encoder from the signal's fields (pydantic's dump costs ~10 µs a signal): None when
    a field is not plain JSON already (a part object, a value pydantic would convert, a time
    not in UTC), for the reference path to handle."""
    fields = signal.__dict__
    created = fields["created_at"]
    if created.tzinfo is not UTC:
        return None
    data = {
        "id": fields["id"], "type": fields["type"], "tag_name": fields["tag_name"],
        "contents": fields["contents"], "attributes": attributes,
        "metadata": fields["metadata"], "provider_options": fields["provider_options"],
        "created_at": created.isoformat()[:-6] + "Z",  # pydantic's JSON form of a UTC time
    }
    try:
        return _dumps_strict(data)
    except (TypeError, ValueError):  # not plain JSON (a model, a datetime, NaN): pydantic's
        return None


def signal_in_reference(signal: Signal, branch_attributes: dict[str, Any]) -> SignalIn:
    """:func:`signal_in` through pydantic's ``model_dump`` (the reference the fast paths are
    tested against)."""
    data = signal.model_dump(mode="json")
    data["attributes"] = merge_checked(signal.attributes, branch_attributes)
    # Only the data: the store renders the model message from it when read (and so does
    # ``SignalIn.message``, if someone asks: the memoryless path).
    return SignalIn(signal.id, signal.type, None, data, derived_message=True)


def is_plain_text(signal: Signal) -> bool:
    """A user message of one string with nothing else set: most of what is sent."""
    return (
        signal.type == "user"
        and type(signal.contents) is str
        and type(signal.id) is str
        and type(signal.tag_name) is str
        and not (signal.attributes or signal.metadata or signal.provider_options)
        and signal.created_at.tzinfo is UTC
    )


def plain_signal_in(signal: Signal) -> SignalIn:
    """:func:`signal_in_general` for a plain text message, without pydantic's dump or a
    JSON encoder: the same message and data, and the data's JSON built here (the store writes
    it as it is; the text is encoded once). tests/test_signal_fast_path.py proves both paths
    store the same rows and give the model the same message."""
    text = signal.contents
    assert isinstance(text, str) and signal.tag_name is not None
    created = signal.created_at.isoformat()[:-6] + "Z"  # pydantic's JSON form of a UTC time
    return plain_text_in(signal.id, signal.tag_name, text, created)


def plain_text_in(
    signal_id: str, tag_name: str, text: str, created: str, signal_type: str = "user",
    attributes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None,
) -> SignalIn:
    """:func:`plain_signal_in` from the fields of a signal of one string (a ``PlainText`` sent
    needs no Signal for it), ``created`` its time as pydantic writes it in JSON; ``attributes``
    (a typed ``send_signal`` dict's) are plain scalars already checked, stored merged as any
    signal's are (a None value is left out); ``metadata`` likewise names to plain scalars, no
    None among them (:func:`_is_plain` checks it), written as the encoder writes them."""
    attributes_json = _scalars_json(attributes) if attributes else "{}"
    metadata_json = _scalars_json(metadata) if metadata else "{}"
    data_json = (
        f'{{"id":{_json_str(signal_id)},"type":"{signal_type}","tag_name":{_json_str(tag_name)},'
        f'"contents":{_json_str(text)},"attributes":{attributes_json},"metadata":{metadata_json},'
        f'"provider_options":{{}},"created_at":"{created}"}}'
    )
    # Only the JSON: the store writes it as it is, and renders the model message from it when
    # read. Its data and message are made from it if someone asks (the memoryless path).
    return SignalIn(signal_id, signal_type, None, None, data_json, derived_message=True)


# The plain scalar types (JSON's strings, numbers and booleans; a float must be finite).
_SCALAR_JSON: frozenset[type] = frozenset({str, int, float, bool})


# json's C encoder of a flat dict, as the store's encoder writes it (``_dumps_strict``'s
# options: what ``JSONEncoder.encode`` calls, without its Python layers). No circular check:
# it is only given names to plain scalars, nothing to recurse into.
_flat_encoder: Callable[[dict[str, Any], int], list[str]] = (  # pyright: ignore[reportUnknownVariableType]
    json_encoder.c_make_encoder(  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
        None, None, _json_str, None, ":", ",", False, False, False))


def _scalars_json(attributes: dict[str, Any]) -> str:
    """The JSON of checked attributes of names to plain scalars (``limits.plain_attributes``),
    merged as a stored signal's are (None left out): what the store's encoder writes of them
    (json's C encoder, called once; tests/test_signal_fast_path.py)."""
    if None in attributes.values():
        attributes = {name: value for name, value in attributes.items() if value is not None}
    return "".join(_flat_encoder(attributes, 0))


def model_message_of(data: dict[str, Any]) -> dict[str, Any]:
    """The model message of a stored signal, rendered from its data (whose attributes are the
    branch's, merged and checked when it was routed): what ``to_model_message(signal,
    branch)`` gave when it was sent (tests/test_store_once.py checks both agree)."""
    contents = data.get("contents")
    if (data.get("type") == "user" and type(contents) is str
            and not data.get("attributes") and not data.get("provider_options")):
        return {"role": "user", "content": neutralize_markup(contents) if "<" in contents
                else contents}  # the plain text message, most of what is sent
    tag, attributes = data.get("tag_name"), data.get("attributes")
    if (type(contents) is str and type(tag) is str and tag and type(attributes) is dict
            and not data.get("provider_options") and data.get("type") in _TYPES):
        # One string in its element (a typed signal: state, notification, reactive): what
        # model_message renders, without a Signal built to read two fields from.
        return {"role": "user", "content": render_element(
            tag, cast("dict[str, Any]", attributes), contents)}
    signal = Signal.model_construct(**data)
    return model_message(signal, signal.attributes)


install_signal_renderer(model_message_of)
