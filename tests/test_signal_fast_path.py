"""The plain-text fast path of a send gives exactly what the general path gives.

``send_message("text")`` builds its Signal without pydantic's validation pass
(``plain_message``) and its stored form without pydantic's dump or the JSON encoder
(``plain_signal_in``). For any text (markup, quotes, backslashes, line separators, emoji, lone
surrogates, over the size limit), any user tag and any UTC time, both paths must give an equal
Signal (same fields, same fields-set, same errors), the same model message, the same echo data
and byte-identical stored rows.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from tui_agent.errors import SignalError
from tui_agent.signals.data import (
    PlainText,
    Signal,
    build_signal,
    normalize_message,
    plain_message,
)
from tui_agent.signals.elements import to_model_message
from tui_agent.signals.limits import NAME_PATTERN, InputLimits, input_limits, set_input_limits
from tui_agent.signals.stored import (
    is_plain_text,
    model_message_of,
    plain_signal_in,
    signal_in,
    signal_in_general,
    signal_in_reference,
    signal_json,
)
from tui_agent.store import txn
from tui_agent.store.codec import dumps
from tui_agent.store.records import SignalIn

# Text the renderer and the JSON encoder treat specially, mixed with anything at all.
TRICKY = st.sampled_from(
    ["<", "</user>", "<user name=\"a\">", "&", ">", '"', "\\", "\n", "\r", "\t", "\x00",
     "\u2028", "\u2029", "é", "😀", "\ud800", "<!--", "<?", "< x", "x<=3", "\x7f", "\ufeff"]
)
TEXT = st.one_of(st.text(), st.lists(st.one_of(TRICKY, st.text(max_size=5))).map("".join))
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIMES = st.datetimes(min_value=datetime(1, 1, 2), timezones=st.just(UTC))


def general_message(text: str) -> Signal:
    """The general path of ``normalize_message`` for a string (pydantic validates it)."""
    return build_signal({"type": "user", "contents": text}, "message")


def outcome(make: Any, text: str) -> Signal | str:
    try:
        return make(text)
    except SignalError as error:
        return f"SignalError: {error}"


def aligned(signal: Signal, like: Signal) -> Signal:
    """``signal`` with ``like``'s fresh id and time (the only fields two sends never share)."""
    signal.__dict__.update(id=like.id, created_at=like.created_at)
    return signal


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_a_plain_message_is_the_signal_validation_builds(text: str) -> None:
    fast, general = outcome(plain_message, text), outcome(general_message, text)
    if isinstance(general, str):
        assert fast == general  # the same refusal, word for word
        return
    assert isinstance(fast, Signal)
    assert fast.model_fields_set == general.model_fields_set
    assert list(fast.__dict__) == list(general.__dict__)
    assert aligned(fast, general) == general
    assert fast.model_dump() == general.model_dump()
    assert normalize_message(text).contents == text  # send_message takes the fast path


def test_the_size_limit_refuses_alike_on_both_paths() -> None:
    before = input_limits()
    set_input_limits(InputLimits(max_text_bytes=10))
    try:
        for text in ("x" * 11, "é" * 6):
            assert outcome(plain_message, text) == outcome(general_message, text)
            assert str(outcome(plain_message, text)).startswith("SignalError: contents is")
    finally:
        set_input_limits(before)


def test_a_fast_id_is_a_fresh_time_ordered_uuid() -> None:
    ids = [plain_message("x").id for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert all(uuid.UUID(i).version == 7 and uuid.UUID(i).hex == i for i in ids)
    assert [i[:12] for i in ids] == sorted(i[:12] for i in ids)  # time prefix never goes back


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=0, max_value=253_402_300_799_999_999_999)  # 1970 to 9999
       | st.integers(min_value=0, max_value=253_402_300_799).map(lambda s: s * 1_000_000_000))
def test_a_sent_text_writes_its_time_as_pydantic_does(time_ns: int) -> None:
    sent = PlainText("0" * 32, "text", time_ns)
    signal = sent.signal()
    assert signal.created_at == EPOCH + timedelta(microseconds=time_ns // 1000)
    assert sent.created_json == signal.model_dump(mode="json")["created_at"]
    assert plain_signal_in(signal).data_json == signal_in(signal, {}).data_json


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_draws_other_random_bits_than_its_parent() -> None:
    """Ids take their random bits from a pool read ahead: a forked child must not reuse the
    parent's (two processes sending in the same millisecond would collide)."""
    plain_message("fill the pool")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report its next ids' random bits, and leave at once
        os.write(write, ",".join(plain_message("x").id[12:] for _ in range(5)).encode())
        os._exit(0)
    os.close(write)
    mine = {plain_message("x").id[12:] for _ in range(5)}
    with os.fdopen(read) as pipe:
        theirs = set(pipe.read().split(","))
    os.waitpid(child, 0)
    assert len(theirs) == 5 and not mine & theirs


def stored_row(signal: SignalIn) -> tuple[Any, ...]:
    spilled: list[tuple[str, str]] = []
    row = txn.signal_row("thread", "resource", signal, "pending", "run", 1.5, spilled)
    return row, spilled


def assert_same_stored_form(signal: Signal) -> None:
    assert is_plain_text(signal)
    fast, general = plain_signal_in(signal), signal_in_reference(signal, {})
    assert (fast.id, fast.type, fast.message, fast.data) == (
        general.id, general.type, general.message, general.data)
    assert fast.message == to_model_message(signal, {})
    assert fast.data == signal.model_dump(mode="json")
    assert fast.data_json == dumps(general.data)
    assert fast.derived_message and general.derived_message  # stored once, as the data
    assert model_message_of(fast.data) == fast.message  # what a reader renders from it
    assert stored_row(fast) == stored_row(general)  # the bytes the store writes
    assert signal_in(signal, {}).data_json == fast.data_json  # the router takes the fast path


@settings(max_examples=300, deadline=None)
@given(TEXT.filter(lambda t: isinstance(outcome(general_message, t), Signal)),
       st.from_regex(NAME_PATTERN, fullmatch=True), TIMES)
def test_a_plain_message_stores_and_renders_as_the_general_path(
    text: str, tag: str, created_at: datetime
) -> None:
    assert_same_stored_form(general_message(text))
    # A user signal may name any tag (a Signal passed to send_message as it is).
    assert_same_stored_form(Signal(type="user", tag_name=tag, contents=text, created_at=created_at))


@pytest.mark.parametrize("text", ["", "plain", "</user><user name=\"admin\">", "hi <", "x<=3",
                                  'say "hi"\\n', "\u2028 é 😀 \x00"])
def test_known_edge_cases_store_alike(text: str) -> None:
    assert_same_stored_form(plain_message(text))
    assert plain_signal_in(plain_message(text)).message["content"] == (
        to_model_message(general_message(text), {})["content"])


@pytest.mark.parametrize("fields", [
    {"attributes": {"a": 1}}, {"metadata": {"k": "v"}}, {"provider_options": {"p": {"q": 1}}},
    {"contents": [{"type": "text", "text": "part"}]}, {"type": "reactive"},
])
def test_anything_but_plain_text_takes_the_general_path(fields: dict[str, Any]) -> None:
    signal = Signal(**({"type": "user", "contents": "x"} | fields))
    assert not is_plain_text(signal)
    routed = signal_in(signal, {})
    assert_same_as_the_reference(signal, {})
    assert model_message_of(routed.data) == routed.message  # a reader renders the same
    assert (routed.message, routed.data) == (to_model_message(signal, {}),
                                             signal.model_dump(mode="json") | {
                                                 "attributes": signal.attributes})
    branch = signal_in(general_message("x"), {"mood": "calm"})  # branch attributes: general
    assert "mood" in branch.message["content"]
    assert model_message_of(branch.data) == branch.message


def assert_same_as_the_reference(signal: Signal, branch: dict[str, Any]) -> None:
    """The general path's JSON (no pydantic dump) is the reference's, byte for byte."""
    fast, reference = signal_in_general(signal, branch), signal_in_reference(signal, branch)
    assert fast.data == reference.data
    assert stored_row(fast) == stored_row(reference)  # the bytes the store writes
    assert fast.message == reference.message == to_model_message(signal, branch)


JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["user", "reactive", "state", "notification"]), TEXT,
       st.dictionaries(st.from_regex(NAME_PATTERN, fullmatch=True),
                       st.text(max_size=8) | st.integers(0, 99), max_size=3),
       st.dictionaries(st.text(max_size=5), JSON_VALUE, max_size=3), TIMES,
       st.dictionaries(st.from_regex(NAME_PATTERN, fullmatch=True), st.text(max_size=8),
                       max_size=2))
def test_a_typed_signal_stores_as_the_reference_path(
    kind: str, text: str, attributes: dict[str, Any], metadata: dict[str, Any],
    created_at: datetime, branch: dict[str, Any],
) -> None:
    try:
        signal = Signal(type=kind, contents=text, attributes=attributes, metadata=metadata,
                        created_at=created_at)
    except Exception:
        return  # not a signal at all: nothing is stored
    assert_same_as_the_reference(signal, branch)


def test_a_time_not_in_utc_takes_the_reference_path() -> None:
    local = Signal(type="user", contents="x", attributes={"a": "b"})
    # Validation turns a time to UTC; one built around it (model_construct) may not be.
    local.__dict__["created_at"] = datetime(2026, 1, 2, tzinfo=timezone(timedelta(hours=1)))
    assert signal_json(local, {}) is None  # pydantic writes its offset: the reference does
    assert_same_as_the_reference(local, {})


async def test_a_sent_text_gets_its_signal_when_asked_with_the_stored_id_and_time(
    tmp_path: Any,
) -> None:
    """A plain text send routes without building its Signal (``PlainText``); the receipt's
    signal, built on first use, is the one validation builds, with the id and time stored."""
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.testing import ScriptedModel

    store = SqliteStore(tmp_path / "lazy.sqlite")
    agent = Agent(name="lazy", instructions="x", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store=store))
    try:
        receipt = agent.send_message("hi <there>", resource_id="r", thread_id="t",
                                     if_idle={"behavior": "persist"})
        assert (await receipt.accepted)["action"] == "persist"
        signal = receipt.signal
        assert receipt.signal is signal  # built once
        assert aligned(general_message("hi <there>"), signal) == signal
        [stored] = await store.list_messages("t")
        assert stored.metadata["signal"] == signal.model_dump(mode="json")
        assert stored.content == to_model_message(signal, {})["content"]
    finally:
        await agent.close()
        await store.close()


# -- a send_signal dict: the fast path (PlainText.of_signal_dict) against normalize_signal -----

SCALAR = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
          | st.sampled_from(["é", "x" * 20, "\ud800"]))
ATTRIBUTE_NAME = st.from_regex(NAME_PATTERN, fullmatch=True) | st.sampled_from(
    ["xmlns", "", "1bad", "a b"]) | st.integers(0, 3)
SIGNAL_DICT = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "reactive", "state", "notification", "system-reminder",
                              "bogus"]) | st.integers(0, 2),
     "contents": TEXT | st.just([{"type": "text", "text": "part"}]) | st.integers(0, 2)},
    optional={
        "tag_name": st.none() | st.from_regex(NAME_PATTERN, fullmatch=True)
        | st.sampled_from(["user", "User", "user-message", "", "1x"]),
        "attributes": st.none() | st.dictionaries(ATTRIBUTE_NAME, SCALAR, max_size=4)
        | st.sampled_from([[], "x", {}]),
        "metadata": st.sampled_from([{}, {"k": 1}]),
        "bogus": st.just(1),
    },
)


def general_signal(given: dict[str, Any]) -> Signal | str:
    from tui_agent.signals.data import normalize_signal

    try:
        return normalize_signal(given)
    except SignalError as error:
        return f"SignalError: {error}"


def fast_signal(given: dict[str, Any]) -> PlainText | str | None:
    try:
        return PlainText.of_signal_dict(given)
    except SignalError as error:
        return f"SignalError: {error}"


@settings(max_examples=500, deadline=None)
@given(SIGNAL_DICT)
def test_a_signal_dict_on_the_fast_path_is_the_signal_normalize_builds(
    given: dict[str, Any],
) -> None:
    """Whatever the dict, the fast path gives the general path's Signal, stored row and model
    message, or its refusal word for word, or declines (None) and leaves it to the general
    path; it takes the common shapes (a typed dict with scalar attributes)."""
    fast, general = fast_signal(given), general_signal(given)
    if fast is None:
        return
    if isinstance(general, str):
        assert fast == general
        return
    assert isinstance(fast, PlainText)
    signal = fast.signal()
    assert signal.model_fields_set == general.model_fields_set
    assert list(signal.__dict__) == list(general.__dict__)
    aligned(general, signal)
    assert signal == general
    from tui_agent.signals.stored import branch_records

    record, _ = branch_records(fast, {}, {})
    assert stored_row(record) == stored_row(signal_in_reference(general, {}))
    assert model_message_of(record.data) == to_model_message(general, {})


@pytest.mark.parametrize("given", [
    {"type": "user", "contents": "hi"},
    {"type": "reactive", "tag_name": "build", "contents": "ok", "attributes": {"n": 1}},
    {"type": "state", "contents": "x", "attributes": {"a": "b", "f": 1.5, "t": True, "z": None}},
    {"type": "notification", "contents": "<b>", "tag_name": None, "attributes": None},
])
def test_the_common_signal_dicts_take_the_fast_path(given: dict[str, Any]) -> None:
    fast = PlainText.of_signal_dict(given)
    assert isinstance(fast, PlainText)
    general = general_signal(given)
    assert isinstance(general, Signal)
    assert aligned(general, fast.signal()) == fast.signal()


def test_a_fast_signal_keeps_its_own_copy_of_the_attributes() -> None:
    attributes = {"n": 1}
    fast = PlainText.of_signal_dict({"type": "reactive", "contents": "x",
                                     "attributes": attributes})
    assert fast is not None
    attributes["n"] = 2  # the caller changes its dict after the send
    assert fast.signal().attributes == {"n": 1}


# -- state signals: the value checked and encoded in one pass, stored without pydantic's dump ---

# Values at and past every check json_text makes: lone surrogates, NaN, integers too long to
# write, non-string keys (the encoder would write them as strings), tuples, nesting, subclasses.
STATE_SCALAR = (
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT
    | st.integers(4290, 4310).map(lambda digits: 10**digits)  # about the 4,300 digit limit
    | st.sampled_from([float("nan"), float("inf"), "\ud800"])
)
STATE_KEY = st.one_of(TEXT, st.integers(-3, 3), st.booleans(), st.none(), st.floats(0, 1))
STATE_VALUE = st.recursive(
    STATE_SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=2).map(tuple)
    | st.dictionaries(STATE_KEY, inner, max_size=4),
    max_leaves=10,
) | st.dictionaries(TEXT, STATE_SCALAR, max_size=6)  # the common shape, often


def json_text_outcome(value: Any) -> str:
    from tui_agent.state.lanes import json_text

    try:
        return json_text(value, "value")
    except (SignalError, RecursionError) as error:
        return f"{type(error).__name__}: {error}"


@settings(max_examples=500, deadline=None)
@given(STATE_VALUE)
def test_a_state_value_checked_in_one_pass_is_the_general_checks_text(value: Any) -> None:
    """For any value, the one-pass check gives the general path's JSON (the store's ``dumps``
    form, which the writer stores as the snapshot's value without encoding it again), or
    declines and leaves the value, and its refusal, to the general path."""
    from tui_agent.signals.limits import flat_json_text

    fast, general = flat_json_text(value), json_text_outcome(value)
    if fast is None:
        return
    assert fast == general
    assert fast == dumps(value)


@settings(max_examples=200, deadline=None)
@given(STATE_VALUE, st.sampled_from([InputLimits(max_depth=0), InputLimits(max_depth=1),
                                     InputLimits(max_int_digits=6)]))
def test_the_one_pass_check_keeps_to_the_limits_set(value: Any, limits: InputLimits) -> None:
    """Under tighter limits (no nesting at all, short integers) the one-pass check still
    gives the general path's text or declines."""
    from tui_agent.signals.limits import flat_json_text

    before = input_limits()
    set_input_limits(limits)
    try:
        fast, general = flat_json_text(value), json_text_outcome(value)
    finally:
        set_input_limits(before)
    assert fast is None or fast == general


@pytest.mark.parametrize("value", [
    {"i": 1}, {"url": "https://x", "title": "é 😀", "n": 1.5, "ok": True, "none": None}, "text",
    3, None, {},
])
def test_the_common_state_values_take_the_one_pass_check(value: Any) -> None:
    from tui_agent.signals.limits import flat_json_text

    assert flat_json_text(value) == json_text_outcome(value) == dumps(value)


@pytest.mark.parametrize("value", [
    {"a": "\ud800"}, {"\ud800": 1}, {1: "int key"}, {"n": float("nan")}, {"n": 10**4299},
    {"nested": {"a": 1}}, [1, 2], (1,),
])
def test_anything_else_takes_the_general_check(value: Any) -> None:
    from tui_agent.signals.limits import flat_json_text

    assert flat_json_text(value) is None


STATE_SIGNAL = st.fixed_dictionaries(
    {"id": st.sampled_from(["lane", "browser", "é"]), "cache_key": st.sampled_from(["k", "2"])},
    optional={
        "value": STATE_VALUE, "mode": st.sampled_from(["snapshot", "delta", None]),
        "delta": STATE_VALUE, "contents": st.one_of(TEXT, st.none()),
        "attributes": st.dictionaries(st.from_regex(NAME_PATTERN, fullmatch=True),
                                      st.text(max_size=8) | st.integers(0, 99), max_size=2),
        "metadata": st.dictionaries(st.text(max_size=5), STATE_SCALAR | JSON_VALUE,
                                    max_size=3),
        "tag_name": st.sampled_from(["state", "browser", "user"]),
    },
)


@settings(max_examples=300, deadline=None)
@given(STATE_SIGNAL, st.integers(1, 10**6), TIMES)
def test_a_state_signal_stores_as_the_reference_path(
    given: dict[str, Any], version: int, created_at: datetime
) -> None:
    """A state signal (its lane and version in its attributes and metadata) is stored, by
    the plain path where it can be, byte for byte as pydantic's dump writes it, and renders
    the same model message."""
    from tui_agent.state.lanes import _StateIn  # pyright: ignore[reportPrivateUsage]

    try:
        signal = _StateIn(given).checked_signal(version)
    except (SignalError, RecursionError):
        return
    signal.__dict__["created_at"] = created_at
    assert_same_as_the_reference(signal, {})
    assert_same_as_the_reference(signal, {"mood": "calm"})


# -- notifications: the record of a checked notification is the one validation builds --

NOTIFICATION = st.fixed_dictionaries(
    {"source": st.sampled_from(["ci", "é", " x "]), "kind": st.sampled_from(["build", "k"]),
     "summary": TEXT},
    optional={
        "priority": st.sampled_from(["low", "medium", "high", "urgent", "nope"]),
        "payload": STATE_VALUE, "dedupe_key": st.one_of(st.none(), TEXT),
        "coalesce_key": st.one_of(st.none(), TEXT),
        "attributes": st.dictionaries(st.from_regex(NAME_PATTERN, fullmatch=True),
                                      st.text(max_size=8) | st.integers(0, 99), max_size=2),
        "metadata": st.dictionaries(st.text(max_size=5), STATE_SCALAR | JSON_VALUE,
                                    max_size=3),
    },
)


@settings(max_examples=300, deadline=None)
@given(NOTIFICATION)
def test_a_new_notification_record_is_the_one_validation_builds(given: dict[str, Any]) -> None:
    from tui_agent.notifications.inbox import (
        _candidate,  # pyright: ignore[reportPrivateUsage]
    )
    from tui_agent.notifications.validation import validate_notification
    from tui_agent.store.records import NotificationRecord

    try:
        item = validate_notification(given)
    except (SignalError, RecursionError):
        return
    fast = _candidate(item, None, "thread", "resource")
    general = NotificationRecord(**fast.model_dump())
    assert fast == general
    assert list(fast.__dict__) == list(general.__dict__)
    assert fast.model_fields_set == NotificationRecord(
        **fast.model_dump(include=fast.model_fields_set)).model_fields_set
    assert fast.model_dump_json() == general.model_dump_json()


# -- a plain notification sent now: checked in one pass, its row written from the fields, its
# signal routed as a PlainText, its record made from what was written (notifications/inbox.py)

ODD = st.sampled_from([None, "", "  ", "\ud800", 3, ["x"], {"a": 1}, "x" * 20, "é"])
ANY_NOTIFICATION = st.fixed_dictionaries(
    {"source": st.sampled_from(["ci", "é", " x "]) | ODD,
     "kind": st.sampled_from(["build", "k"]) | ODD, "summary": TEXT | ODD},
    optional={
        "priority": st.sampled_from(["low", "medium", "high", "urgent", "nope"]) | ODD,
        "payload": STATE_VALUE | st.dictionaries(st.text(max_size=4), SCALAR, max_size=3),
        "dedupe_key": st.one_of(st.none(), TEXT) | ODD, "coalesce_key": st.one_of(st.none(), TEXT),
        "attributes": st.none() | st.dictionaries(ATTRIBUTE_NAME, SCALAR, max_size=3)
        | st.sampled_from([{"id": "x"}, {"priority": 1}, [], "x"]),
        "metadata": st.none() | st.dictionaries(st.text(max_size=5), SCALAR | JSON_VALUE,
                                                max_size=3) | st.sampled_from([[], "x"]),
        "sorce": st.just("typo"),
    },
)


def notification_outcome(given: Any) -> dict[str, Any] | str:
    from tui_agent.notifications.validation import validate_notification

    try:
        return validate_notification(given)
    except (SignalError, RecursionError) as error:
        return f"{type(error).__name__}: {error}"


@settings(max_examples=500, deadline=None)
@given(NOTIFICATION | ANY_NOTIFICATION)
def test_a_plain_notification_is_the_one_validation_checks(given: dict[str, Any]) -> None:
    """For any notification, the one-pass check gives validate_notification's fields (same
    values, same order) and the store's JSON of its payload, attributes and metadata, or
    declines and leaves it, and its refusal word for word, to validate_notification."""
    from tui_agent.notifications.validation import plain_notification

    plain, general = plain_notification(given), notification_outcome(given)
    event("general" if plain is None else "plain")
    if plain is None:
        return
    item, payload_json, attributes_json, metadata_json, plain_metadata = plain
    assert isinstance(general, dict)
    assert item == general and list(item) == list(general)
    assert [type(v) for v in item.values()] == [type(v) for v in general.values()]
    assert (payload_json, attributes_json, metadata_json) == (
        dumps(general["payload"]), dumps(general["attributes"]), dumps(general["metadata"]))
    assert plain_metadata == all(v is not None for v in general["metadata"].values())


@pytest.mark.parametrize("given", [
    {"source": "ci", "kind": "build", "summary": "r0-n1", "priority": "high", "dedupe_key": "d"},
    {"source": "github", "kind": "pr", "summary": "é <b>&\"\n😀", "payload": {"n": 1.5, "ok": True},
     "attributes": {"repo": "x/y", "n": 3, "none": None}, "metadata": {"url": "https://é"}},
    {"source": "s", "kind": "k", "summary": "x", "metadata": {"gone": None}, "payload": "text"},
])
def test_the_common_notifications_take_the_one_pass_check(given: dict[str, Any]) -> None:
    from tui_agent.notifications.validation import plain_notification

    plain = plain_notification(given)
    assert plain is not None and plain[0] == notification_outcome(given)


@pytest.fixture(scope="module")
def inbox_db() -> Any:
    """For each path, a store's schema in an in-memory SQLite database, driven here without
    its writer."""
    import sqlite3

    from tui_agent.store.schema import MIGRATIONS

    made = {path: sqlite3.connect(":memory:", isolation_level=None)
            for path in ("plain", "general")}
    for conn in made.values():
        for migration in MIGRATIONS:
            conn.executescript(migration)
    yield made
    for conn in made.values():
        conn.close()


class _Routing:
    """What a notification's write asks of an agent's signal routing (agent/router.py)."""

    def branches(self, if_active: Any, if_idle: Any) -> tuple[Any, Any]:
        from tui_agent.signals.data import parse_if_active, parse_if_idle

        return parse_if_active(if_active), parse_if_idle(if_idle)

    def options(self, active: Any, idle: Any) -> tuple[str, str, bool, str, float, str | None]:
        return active.behavior, idle.behavior, False, "owner", 3600.0, "agent"


def _written_on(conn: Any, thread: str, call: Any) -> tuple[Any, Any]:
    """``call``'s compound write alone on ``conn`` (``compound.compound``); its value and what
    it stored of its record and its signal."""
    from tui_agent.store.compound import compound
    from tui_agent.store.dialect import SQLITE

    value, _ = _in_transaction(conn, compound(SQLITE, call))
    notification = conn.execute("SELECT * FROM notifications WHERE thread_id=?",
                                (thread,)).fetchall()
    signals = conn.execute(  # large data is kept out of line (signal_data): read it there
        "SELECT s.id, s.type, s.status, s.message, COALESCE(d.data, s.data), d.id IS NOT NULL"
        " FROM signals s LEFT JOIN signal_data d ON d.id = s.id WHERE s.thread_id=? AND"
        " s.type='notification'", (thread,)).fetchall()
    return value, (notification, signals)


@settings(max_examples=300, deadline=None)
@given(NOTIFICATION | ANY_NOTIFICATION, st.sampled_from(["deliver", "persist"]), st.booleans(),
       st.sampled_from([None, datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)]))
@example({"source": "ci", "kind": "build", "summary": "0", "priority": "low",  # data spilled
          "metadata": {"": "x" * 3000}}, "deliver", False, None)
def test_a_plain_notification_writes_the_rows_of_the_general_path(
    inbox_db: Any, given: dict[str, Any], action: str, active: bool, deliver_at: datetime | None,
) -> None:
    """A plain notification sent now stores, byte for byte, the notification and signal rows
    the general path stores (the same ids and times given to both), so the model is given the
    same message; and the record made from what it wrote, with no read, is the record a read
    gives (once delivered into a live run, or left claimed for a woken one)."""
    from tui_agent.notifications.inbox import (
        _candidate,  # pyright: ignore[reportPrivateUsage]
        _NotificationWrite,  # pyright: ignore[reportPrivateUsage]
    )
    from tui_agent.notifications.policy import Decision
    from tui_agent.notifications.validation import plain_notification
    from tui_agent.signals.stored import model_message_of as rendered
    from tui_agent.store.compound import compound
    from tui_agent.store.dialect import SQLITE
    from tui_agent.store.inbox import read_notification
    from tui_agent.store.records import NotificationRecord

    plain = plain_notification(given)
    event("general" if plain is None else "plain")
    if plain is None:
        return
    decision = Decision(action=action, deliver_at=deliver_at)
    rows = []
    for path in ("plain", "general"):
        thread = f"t-{uuid.uuid4().hex}"
        if active:  # a live run on the thread: the notification is delivered into it
            _in_transaction(inbox_db[path], compound(SQLITE, _Starter(thread)))
        if path == "plain":
            call = _NotificationWrite(plain[0], None, decision, thread, "r", _Routing(), {},
                                      plain)
            assert call.new_row is not None
            fast = call
        else:
            fresh = _candidate(plain[0], None, thread, "r").model_copy(
                update={"id": fast.new_row[0]})  # pyright: ignore[reportOptionalSubscript]
            call = _NotificationWrite(plain[0], fresh, decision, thread, "r", _Routing(), {})
            call.now, call.token = fast.now, fast.token
            call.claim_expires_at = fast.claim_expires_at
        value, (notification, signals) = _written_on(inbox_db[path], thread, call)
        record = value if isinstance(value, NotificationRecord) else value.record()
        read = txn.drive(inbox_db[path], read_notification(SQLITE, record.id))
        signal_id = signals[0][0]
        data = json.loads(signals[0][4])
        assert record == read  # what the caller is given is what is stored
        rows.append((
            [tuple("T" if v == thread else None if i in (15, 16) else v  # the delivery's time
                   for i, v in enumerate(row)) for row in notification],
            [(t, s, m, d.replace(signal_id, "ID").replace(data["created_at"], "AT"), spilled)
             for _, t, s, m, d, spilled in signals],
            rendered(data)["content"].replace(signal_id, "ID"),
            read.model_copy(update={"thread_id": "T", "updated_at": None, "delivered_at": None}),
        ))
        if path == "plain" and not fast.plain_signal:
            assert isinstance(fast.signal, Signal)
    plain_rows, general_rows = rows
    assert plain_rows[0] != [] and plain_rows[1] != []
    assert plain_rows == general_rows


def _in_transaction(conn: Any, write: Any) -> Any:
    conn.execute("BEGIN IMMEDIATE")
    try:
        value = txn.drive(conn, write)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return value


class _Starter:
    """A compound that routes one plain message with a wake: the thread gets a live run."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id

    def before(self, d: Any) -> Any:
        from tui_agent.store.compound import nothing_after

        return nothing_after(d, None, None)

    def route(self, value: Any) -> Any:
        signal = plain_signal_in(plain_message("start"))
        return (self.thread_id, "r", signal, signal, *_Routing().options(
            *_Routing().branches(None, None)))

    def after(self, d: Any, value: Any, routed: Any) -> Any:
        from tui_agent.store.compound import nothing_after

        return nothing_after(d, value, routed)


@settings(max_examples=300, deadline=None)
@given(STATE_SIGNAL, st.integers(1, 10**6))
def test_a_state_signal_routed_as_plain_text_is_the_checked_signal(
    given: dict[str, Any], version: int
) -> None:
    """A state signal of string contents and plain attributes and metadata is routed as a
    ``PlainText``: stored byte for byte as the Signal the general path checks (given the same
    id and time), and that Signal is what it builds when asked for."""
    from tui_agent.signals.stored import branch_records
    from tui_agent.state.lanes import _StateIn  # pyright: ignore[reportPrivateUsage]

    try:
        parsed = _StateIn(given)
        general = parsed.checked_signal(version)
    except (SignalError, RecursionError):
        return
    plain = parsed.plain_signal(version)
    event("general" if plain is None else "plain")
    if plain is None:
        return
    general.__dict__.update(id=plain.id, created_at=plain.created_at)
    built = plain.signal()
    assert built == general and list(built.__dict__) == list(general.__dict__)
    assert built.model_fields_set == general.model_fields_set
    fast_record, _ = branch_records(plain, {}, {})
    general_record, _ = branch_records(general, {}, {})
    assert stored_row(fast_record) == stored_row(general_record)
    assert model_message_of(fast_record.data) == model_message_of(general_record.data)
