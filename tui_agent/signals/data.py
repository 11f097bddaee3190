"""Signals as data: the Signal model, its normalisation and validation, and the routing options.

Pure functions only (no store, no asyncio). Every bad input raises ``SignalError`` naming what is
wrong, before anything is stored; pydantic's ValidationError never escapes the ``normalize_*`` and
``parse_*`` functions.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from tui_agent.errors import SignalError
from tui_agent.signals.limits import (
    NAME_RE,
    InputLimits,
    as_items,
    as_mapping,
    check_attributes,
    check_contents,
    check_id,
    check_json_object,
    check_name,
    check_text,
    input_limits,
    plain_attributes,
    unknown_keys_error,
)
from tui_agent.store.codec import time_ordered_id

SignalType = Literal["user", "state", "reactive", "notification"]
SIGNAL_TYPES: tuple[str, ...] = ("user", "state", "reactive", "notification")
LEGACY_TYPES: dict[str, tuple[str, str | None]] = {
    "user-message": ("user", None),
    "system-reminder": ("reactive", "system-reminder"),
}
DEFAULT_TAGS: dict[str, str] = {
    "user": "user",
    "state": "state",
    "reactive": "system-reminder",
    "notification": "notification",
}
ACTIVE_BEHAVIORS: tuple[str, ...] = ("deliver", "persist", "discard")
IDLE_BEHAVIORS: tuple[str, ...] = ("wake", "persist", "discard")

# The elements a model reads as the user speaking: only a user signal may use them.
_USER_TAGS = frozenset({"user", "user-message"})

_MESSAGE_KEYS = frozenset({"contents", "attributes", "metadata", "provider_options"})
_SIGNAL_KEYS = _MESSAGE_KEYS | {"type", "tag_name"}


# -- the Signal model -----------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC)


class Signal(BaseModel):
    """One signal on a thread. ``tag_name`` is filled from the type when not given."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=time_ordered_id)
    type: SignalType
    tag_name: str | None = None
    contents: str | list[dict[str, Any]] = ""
    attributes: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    provider_options: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=_now)

    @field_validator("contents", mode="before")
    @classmethod
    def _contents(cls, v: Any) -> Any:
        return check_contents(v)

    @field_validator("attributes", mode="before")
    @classmethod
    def _attributes(cls, v: Any) -> Any:
        return check_attributes(v)

    @field_validator("metadata", "provider_options", mode="before")
    @classmethod
    def _json(cls, v: Any, info: Any) -> Any:
        return check_json_object(v, info.field_name)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return check_id(v, "signal id")

    @field_validator("created_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        # Naive datetimes are taken as UTC: every time in the API is tz-aware UTC.
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)

    @model_validator(mode="after")
    def _tag(self) -> Signal:
        if self.tag_name is None:
            self.tag_name = DEFAULT_TAGS[self.type]  # a valid name: nothing to check
        else:
            check_name(self.tag_name, "tag_name")
            if self.type != "user" and self.tag_name.lower() in _USER_TAGS:
                raise SignalError(
                    f"tag_name {self.tag_name!r} is the user's: a {self.type!r} signal cannot "
                    "pose as a user message (use send_message, or another tag name)"
                )
        return self

    @property
    def text(self) -> str:
        """The text of the contents: a string as is, text parts joined with newlines."""
        return signal_text(self.contents)

    @property
    def tag(self) -> str:
        return self.tag_name or DEFAULT_TAGS[self.type]


def signal_text(contents: object) -> str:
    """The text of a signal's contents (what the model sees inside its element, and what a
    transcript shows): a string as is, the text parts of a list joined with newlines (file
    parts left out). Contents read back from a log may be anything: other values show as
    ``str()``, list items that are not parts are skipped."""
    if isinstance(contents, str):
        return contents
    items = as_items(contents)
    if isinstance(items, list):
        parts = [as_mapping(p) for p in items]
        return "\n".join(
            str(p.get("text", "")) for p in parts if p is not None and p.get("type") == "text"
        )
    return str(contents)


def _from_validation_error(exc: ValidationError, what: str) -> SignalError:
    """Turn pydantic's report into one readable SignalError (keeping ours verbatim)."""
    messages: list[str] = []
    for err in exc.errors():
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, SignalError):
            messages.append(str(cause))
            continue
        loc = ".".join(str(p) for p in err["loc"])
        messages.append(f"{what}.{loc}: {err['msg']}" if loc else f"{what}: {err['msg']}")
    return SignalError("; ".join(messages))


# What pydantic's validation leaves on a plain user message (see plain_message), on a Signal
# ``normalize_signal`` builds from any dict, and on one ``checked_signal`` builds from the
# fields of a typed signal a sender made itself (a notification's: no provider options).
_PLAIN_FIELDS_SET = frozenset({"type", "contents", "tag_name"})
_SIGNAL_FIELDS_SET = frozenset(
    {"type", "tag_name", "contents", "attributes", "metadata", "provider_options"})
_TYPED_FIELDS_SET = frozenset({"type", "tag_name", "contents", "attributes", "metadata"})
_set_attr = object.__setattr__


def plain_message(text: str) -> Signal:
    """``normalize_message(text)`` for a ``str``, without pydantic's validation pass: the hot path
    of a burst of sends. A plain string needs one check (``check_text``, with the same error as
    the general path); every other field takes the value validation would give it, and the
    instance is laid out as ``Signal(...)`` lays it out (the same ``__dict__`` order and
    fields-set). tests/test_signal_fast_path.py proves both paths give equal signals."""
    return PlainText.of(text).signal()


@dataclass(slots=True)
class PlainText:
    """A signal of one string before its Signal is built: the text (checked), the id and time
    (ns since the epoch) it was given when sent, and for a ``send_signal`` dict its type, tag and
    attributes (checked: names to scalars), for a notification also its metadata (names to plain
    scalars, no None: ``signals.stored.plain_text_in`` writes them). A send routes it as it is
    and builds the Signal only when someone asks for it (``receipt.signal``): a burst's sends
    skip the Signal and pydantic (~2 µs each for a text, ~15 µs for a typed dict). Never changed
    once made."""

    id: str
    text: str
    time_ns: int
    type: str = "user"
    tag_name: str = "user"
    attributes: dict[str, Any] = field(default_factory=dict)
    #: The fields-set of its Signal: a message's, a ``send_signal`` dict's (``_SIGNAL_FIELDS_SET``)
    #: or a notification's (``_TYPED_FIELDS_SET``), as the general path leaves each.
    fields_set: frozenset[str] = _PLAIN_FIELDS_SET
    metadata: dict[str, Any] | None = None

    @classmethod
    def of(cls, text: str) -> PlainText:
        """The message of ``text``, checked as ``normalize_message`` checks a string."""
        check_text(text, "contents")
        now_ns = time.time_ns()
        return cls(time_ordered_id(now_ns), text, now_ns)

    @classmethod
    def of_signal_dict(cls, given: dict[Any, Any]) -> PlainText | None:
        """``normalize_signal(given)`` for the common dict (a type of ``SIGNAL_TYPES``, string
        contents, a tag name, attributes of names to plain scalars, nothing else), checked as
        the general path checks it; None for any other dict, which the general path takes (with
        its errors word for word). tests/test_signal_fast_path.py proves both paths agree."""
        if not given.keys() <= _PLAIN_SIGNAL_KEYS:
            return None
        signal_type, contents = given.get("type"), given.get("contents")
        if type(signal_type) is not str or signal_type not in DEFAULT_TAGS:
            return None
        if type(contents) is not str:
            return None
        tag = given.get("tag_name")
        if tag is None:
            tag = DEFAULT_TAGS[signal_type]
        elif type(tag) is not str or not NAME_RE.fullmatch(tag) or (
                signal_type != "user" and tag.lower() in _USER_TAGS):
            return None
        attributes = plain_attributes(given.get("attributes"))
        if attributes is None:
            return None
        check_text(contents, "signal contents")  # the general path's first check of a value
        now_ns = time.time_ns()
        return cls(time_ordered_id(now_ns), contents, now_ns, signal_type, tag, attributes,
                   _SIGNAL_FIELDS_SET)

    @classmethod
    def typed(
        cls, text: str, signal_type: str, tag_name: str, attributes: dict[str, Any],
        metadata: dict[str, Any],
    ) -> PlainText:
        """``checked_signal`` of these fields (checked by the caller: a notification's, whose
        attributes are names to plain scalars or None and metadata names to plain scalars),
        with its Signal built when asked for."""
        now_ns = time.time_ns()
        return cls(time_ordered_id(now_ns), text, now_ns, signal_type, tag_name, attributes,
                   _TYPED_FIELDS_SET, metadata)

    @property
    def created_at(self) -> datetime:
        seconds, micros = divmod(self.time_ns // 1000, 1_000_000)
        return datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)

    @property
    def created_json(self) -> str:
        """``created_at`` as pydantic writes a UTC time in JSON (as ``model_dump(mode="json")``
        gives it), without a datetime: ``2026-01-02T03:04:05.678901Z``."""
        seconds, micros = divmod(self.time_ns // 1000, 1_000_000)
        return _utc_json(seconds, micros)

    def signal(self) -> Signal:
        """The Signal ``normalize_message`` (or ``normalize_signal``, for a dict) gives, with
        this id and time."""
        signal = Signal.__new__(Signal)
        _set_attr(signal, "__dict__", {
            "id": self.id, "type": self.type, "tag_name": self.tag_name, "contents": self.text,
            "attributes": dict(self.attributes),
            "metadata": {} if self.metadata is None else dict(self.metadata),
            "provider_options": {}, "created_at": self.created_at,
        })
        _set_attr(signal, "__pydantic_fields_set__", set(self.fields_set))
        _set_attr(signal, "__pydantic_extra__", None)
        _set_attr(signal, "__pydantic_private__", None)
        return signal


# The keys of a signal dict the fast path takes.
_PLAIN_SIGNAL_KEYS = frozenset({"type", "tag_name", "contents", "attributes"})


_second_json: tuple[int, str] = (-1, "")  # the last second written: a burst shares it


def _utc_json(seconds: int, micros: int) -> str:
    global _second_json
    last, prefix = _second_json
    if seconds != last:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second_json = (seconds, prefix)
    return f"{prefix}.{micros:06d}Z" if micros else f"{prefix}Z"


def build_signal(fields: dict[str, Any], what: str) -> Signal:
    """A Signal from fields not checked yet: pydantic's validation checks each (its errors
    become one SignalError naming ``what``)."""
    try:
        return Signal(**fields)
    except ValidationError as exc:
        raise _from_validation_error(exc, what) from None


def checked_signal(fields: dict[str, Any]) -> Signal:
    """``build_signal(fields)`` for fields the caller has checked already (``normalize_*``):
    each value is checked once, where it was read, not again by pydantic. What is left to
    check is the tag against the type; the instance is laid out as ``Signal(**fields)`` lays
    it out (the same ``__dict__`` order and fields-set: tests/test_signal_model.py,
    test_the_one_pass_signal_is_the_one_pydantic_validates)."""
    signal_type = fields["type"]
    tag = fields.get("tag_name")
    if tag is None:
        tag = DEFAULT_TAGS[signal_type]  # a valid name: nothing to check
    elif signal_type != "user" and tag.lower() in _USER_TAGS:
        raise SignalError(
            f"tag_name {tag!r} is the user's: a {signal_type!r} signal cannot pose as a user "
            "message (use send_message, or another tag name)"
        )
    signal = Signal.__new__(Signal)
    _set_attr(signal, "__dict__", {
        "id": time_ordered_id(), "type": signal_type, "tag_name": tag,
        "contents": fields.get("contents", ""), "attributes": fields.get("attributes") or {},
        "metadata": fields.get("metadata") or {},
        "provider_options": fields.get("provider_options") or {}, "created_at": _now(),
    })
    _set_attr(signal, "__pydantic_fields_set__", {*fields, "tag_name"})
    _set_attr(signal, "__pydantic_extra__", None)
    _set_attr(signal, "__pydantic_private__", None)
    return signal


# -- normalisation --------------------------------------------------------------------------------


def normalize_message(message: object) -> Signal:
    """A user message from a string, a parts list, a ``{"contents", ...}`` dict, or a Signal."""
    if isinstance(message, Signal):
        if message.type != "user":
            raise SignalError(
                f"send_message takes user messages; got a {message.type!r} signal "
                "(use send_signal)"
            )
        return message
    if type(message) is str:  # most of what is sent
        return plain_message(message)
    if isinstance(message, str | list | tuple):
        contents = check_contents(cast(object, message))  # checked there, part by part
        return checked_signal({"type": "user", "contents": contents})
    if isinstance(message, Mapping):
        given = cast("Mapping[Any, Any]", message)  # the caller's: its keys checked next
        keys: set[str] = set(given)
        if keys - _MESSAGE_KEYS:
            extra = keys - _MESSAGE_KEYS
            hint = " (use send_signal for typed signals)" if extra & {"type", "tag_name"} else ""
            err = unknown_keys_error(extra, _MESSAGE_KEYS, "message")
            raise SignalError(f"{err}{hint}")
        if "contents" not in given:
            raise SignalError("message dict needs 'contents' (a string or a list of parts)")
        return checked_signal(_common_fields(given, "message") | {"type": "user"})
    raise SignalError(
        "message must be a string, a list of text/file parts, or a dict with 'contents'; "
        f"got {type(message).__name__}"
    )


def _common_fields(d: Mapping[str, Any], what: str) -> dict[str, Any]:
    return {
        "contents": check_contents(d["contents"], f"{what} contents"),
        "attributes": check_attributes(d.get("attributes"), f"{what} attributes"),
        "metadata": check_json_object(d.get("metadata"), f"{what} metadata"),
        "provider_options": check_json_object(
            d.get("provider_options"), f"{what} provider_options"),
    }


def _resolve_type(raw_type: object, tag_name: object) -> tuple[str, object]:
    """Map legacy types; reject unknown ones with a hint to use tag_name."""
    if isinstance(raw_type, str) and raw_type in SIGNAL_TYPES:
        return raw_type, tag_name
    if isinstance(raw_type, str) and raw_type in LEGACY_TYPES:
        new_type, legacy_tag = LEGACY_TYPES[raw_type]
        return new_type, tag_name if tag_name is not None else legacy_tag
    allowed = ", ".join(repr(t) for t in (*SIGNAL_TYPES, *LEGACY_TYPES))
    if isinstance(raw_type, str) and NAME_RE.fullmatch(raw_type):
        raise SignalError(
            f"unknown signal type {raw_type!r}; use type='reactive' with "
            f"tag_name={raw_type!r} for a custom element (types: {allowed})"
        )
    raise SignalError(
        f"unknown signal type {raw_type!r}; types are {allowed} "
        "(use tag_name to choose the element the model sees)"
    )


def normalize_signal(signal: object) -> Signal:
    """A Signal from a ``{"type", "tag_name", "contents", ...}`` dict or a Signal.

    Legacy ``user-message`` becomes ``user``; ``system-reminder`` becomes ``reactive`` with tag
    ``system-reminder`` (an explicit ``tag_name`` still wins). A stored signal is read back with
    ``Signal.model_validate`` instead (this function does not accept ``id``/``created_at``).
    """
    if isinstance(signal, Signal):
        return signal
    if not isinstance(signal, Mapping):
        raise SignalError(f"signal must be a dict or a Signal, got {type(signal).__name__}")
    signal = cast("Mapping[Any, Any]", signal)  # the caller's: its keys checked next
    keys: set[str] = set(signal)
    if keys - _SIGNAL_KEYS:
        raise unknown_keys_error(keys - _SIGNAL_KEYS, _SIGNAL_KEYS, "signal")
    if "type" not in signal:
        raise SignalError(f"signal needs a 'type' ({', '.join(SIGNAL_TYPES)})")
    if "contents" not in signal:
        raise SignalError("signal needs 'contents' (a string or a list of parts)")
    sig_type, tag_name = _resolve_type(signal["type"], signal.get("tag_name"))
    if tag_name is not None:
        check_name(tag_name, "tag_name")
    fields = _common_fields(signal, "signal") | {"type": sig_type, "tag_name": tag_name}
    return checked_signal(fields)


# -- routing options ------------------------------------------------------------------------------


class IfActive(BaseModel):
    """What to do when the target thread has a running run."""

    model_config = ConfigDict(extra="forbid")

    behavior: Literal["deliver", "persist", "discard"] = "deliver"
    attributes: dict[str, Any] = Field(default_factory=dict)


class IfIdle(BaseModel):
    """What to do when the target thread is idle; ``stream_options`` configure the run a wake
    starts, as ``stream()``'s options do: kept as given (functions, ``Tool`` objects, hooks;
    never turned into JSON, never stored), for the run the sending process starts. A run
    started elsewhere or later (a rescued signal, a queued message, a deferred notification)
    gets its agent's ``default_options`` instead (docs/api.md, "Signals")."""

    model_config = ConfigDict(extra="forbid")

    behavior: Literal["wake", "persist", "discard"] = "wake"
    stream_options: dict[str, Any] = Field(default_factory=dict)
    attributes: dict[str, Any] = Field(default_factory=dict)


def _parse_branch(
    value: Any, model: type[IfActive] | type[IfIdle], name: str, behaviors: tuple[str, ...]
) -> Any:
    if value is None:
        return model()
    given = as_mapping(value)
    if isinstance(value, model):  # its fields as they are (a dump would open up a Tool)
        data: Mapping[str, Any] = {name: getattr(value, name) for name in model.model_fields}
    elif given is not None:
        data = given
    else:
        raise SignalError(f"{name} must be a dict or {model.__name__}, got {type(value).__name__}")
    allowed = frozenset(model.model_fields)
    keys: set[str] = set(data)
    if keys - allowed:
        raise unknown_keys_error(keys - allowed, allowed, name)
    behavior = data.get("behavior")
    if behavior is not None and behavior not in behaviors:
        raise SignalError(
            f"unknown {name}.behavior {behavior!r}; allowed: {', '.join(map(repr, behaviors))}"
        )
    fields = {k: v for k, v in data.items() if v is not None}
    fields["attributes"] = check_attributes(data.get("attributes"), f"{name}.attributes")
    if "stream_options" in fields:
        fields["stream_options"] = check_stream_options(
            fields["stream_options"], f"{name}.stream_options"
        )
    try:
        return model(**fields)
    except ValidationError as exc:
        raise _from_validation_error(exc, name) from None


#: The options a woken run cannot take from its sender: its thread is the one the signal goes
#: to, its id is made when the signal wins the thread.
_WAKE_OWNED = {
    "run_id": "the woken run's id is made when the signal wins the thread (await "
    "receipt.accepted gives it)",
}


def check_stream_options(value: object, what: str) -> dict[str, Any]:
    """``stream_options`` as a new dict of the caller's own values (no JSON check: they stay in
    this process). Refused only what a woken run can never honour: a ``run_id``, or a
    ``memory`` naming a thread (the run is on the signal's own; ``{"options": {...}}`` is
    kept). Option names and forms are checked by the sender against ``stream()``'s."""
    if value is None:
        return {}
    given = as_mapping(value)
    if given is None:
        raise SignalError(f"{what} must be a dict, got {type(value).__name__}")
    for key, why in _WAKE_OWNED.items():
        if given.get(key) is not None:
            raise SignalError(f"{what}[{key!r}] cannot be honoured: {why}")
    memory = as_mapping(given.get("memory"))
    if given.get("memory") is not None and (memory is None or set(memory) - {"options"}):
        raise SignalError(
            f"{what}['memory'] cannot be honoured: a woken run runs on the thread the signal "
            f"goes to; give only memory={{'options': {{...}}}} (e.g. last_messages)"
        )
    return dict(given)


def parse_if_active(value: object) -> IfActive:
    """``if_active`` from None (defaults: deliver), a dict or an IfActive."""
    return _parse_branch(value, IfActive, "if_active", ACTIVE_BEHAVIORS)


def parse_if_idle(value: object) -> IfIdle:
    """``if_idle`` from None (defaults: wake), a dict or an IfIdle."""
    return _parse_branch(value, IfIdle, "if_idle", IDLE_BEHAVIORS)


class Target(BaseModel):
    """Where a signal goes: a run, a thread (resource + thread), or both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str | None = None
    resource_id: str | None = None
    thread_id: str | None = None


def _check_id(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SignalError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise SignalError(f"{name} must not be empty")
    return check_id(value, name)


# Targets already checked, by (run_id, resource_id, thread_id): a burst names one thread again
# and again. Each entry keeps the limits it was checked under (set_input_limits may change them).
_TARGETS: dict[tuple[str | None, str | None, str | None], tuple[InputLimits, Target]] = {}
_MAX_TARGETS = 1024


def parse_target(
    run_id: Any = None, resource_id: Any = None, thread_id: Any = None
) -> Target:
    """Validate a target: ``run_id``, or ``resource_id`` with ``thread_id``, or all three."""
    if (
        type(run_id) in _ID_TYPES and type(resource_id) in _ID_TYPES
        and type(thread_id) in _ID_TYPES
    ):
        key = (run_id, resource_id, thread_id)
        cached = _TARGETS.get(key)
        limits = input_limits()
        if cached is not None and cached[0] is limits:
            return cached[1]
        target = _parse_target(run_id, resource_id, thread_id)
        if len(_TARGETS) >= _MAX_TARGETS:
            _TARGETS.clear()
        _TARGETS[key] = (limits, target)
        return target
    return _parse_target(run_id, resource_id, thread_id)


_ID_TYPES = (str, type(None))  # exactly: a str subclass may hash or compare differently


def _parse_target(run_id: object, resource_id: object, thread_id: object) -> Target:
    run_id = _check_id(run_id, "run_id")
    resource_id = _check_id(resource_id, "resource_id")
    thread_id = _check_id(thread_id, "thread_id")
    if resource_id is not None and thread_id is None:
        raise SignalError("resource_id was given without thread_id; pass both to target a thread")
    if thread_id is not None and resource_id is None:
        raise SignalError("thread_id was given without resource_id; pass both to target a thread")
    if run_id is None and thread_id is None:
        raise SignalError("no target: pass run_id=, or resource_id= with thread_id=")
    return Target(run_id=run_id, resource_id=resource_id, thread_id=thread_id)
