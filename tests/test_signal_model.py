"""Signals as data: normalisation, validation, routing options and targets."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_agent.errors import SignalError
from tui_agent.signals import (
    IfActive,
    IfIdle,
    Signal,
    Target,
    normalize_message,
    normalize_signal,
    parse_if_active,
    parse_if_idle,
    parse_target,
)
from tui_agent.signals.data import build_signal

# -- normalize_message ----------------------------------------------------------------------------


def test_message_from_string_is_a_user_signal_with_fresh_id_and_utc_time() -> None:
    before = datetime.now(UTC)
    a, b = normalize_message("hello"), normalize_message("hello")
    assert (a.type, a.tag_name, a.contents, a.attributes) == ("user", "user", "hello", {})
    assert a.id != b.id
    assert all(re.fullmatch("[0-9a-f]{32}", s.id) for s in (a, b)), (a.id, b.id)  # uuid4 hex
    assert len({normalize_message("x").id for _ in range(1000)}) == 1000
    assert a.created_at.tzinfo is not None and a.created_at.utcoffset() == timedelta(0)
    assert before <= a.created_at <= datetime.now(UTC)


def test_message_from_parts_list() -> None:
    parts = [
        {"type": "text", "text": "look"},
        {"type": "file", "url": "https://x.test/a.png", "media_type": "image/png"},
    ]
    sig = normalize_message(parts)
    assert sig.contents == parts
    assert sig.text == "look"


def test_message_from_dict_keeps_every_field() -> None:
    sig = normalize_message({
        "contents": "Can we simplify?",
        "attributes": {"name": "Devin", "from": "slack"},
        "metadata": {"avatar": "d.png"},
        "provider_options": {"anthropic": {"cache_control": {"type": "ephemeral"}}},
    })
    assert sig.type == "user"
    assert list(sig.attributes) == ["name", "from"]
    assert sig.metadata == {"avatar": "d.png"}
    assert sig.provider_options["anthropic"]["cache_control"] == {"type": "ephemeral"}


def test_message_signal_passes_through_but_only_user_type() -> None:
    sig = normalize_message("x")
    assert normalize_message(sig) is sig
    with pytest.raises(SignalError, match="send_signal"):
        normalize_message(normalize_signal({"type": "state", "contents": "x"}))


@pytest.mark.parametrize(
    ("message", "match"),
    [
        ({"contents": "x", "type": "state"}, "'type'.*send_signal"),
        ({"contents": "x", "providerOptions": {}}, "providerOptions.*provider_options"),
        ({"attributes": {"a": 1}}, "needs 'contents'"),
        ({"contents": 42}, "contents must be a string or a list"),
        (42, "message must be a string"),
        (None, "message must be a string"),
        (["plain string part"], r"contents\[0\] must be a dict part"),
        ([{"type": "image", "image": "x"}], "parts are 'text' or 'file'"),
        ([{"type": "text"}], "needs 'text'"),
        ([{"type": "file", "media_type": "image/png"}], "exactly one of 'data' or 'url'"),
        ([{"type": "file", "url": "u", "data": "d", "media_type": "a/b"}], "exactly one"),
        ([{"type": "file", "url": "https://x.test/a"}], "needs 'media_type'"),
        ([{"type": "file", "url": "u", "mediaType": "a/b"}], "mediaType.*media_type"),
        ({"contents": "x", "attributes": ["a"]}, "attributes must be a dict"),
        ({"contents": "x", "metadata": "m"}, "metadata must be a dict"),
    ],
)
def test_bad_messages_raise_a_clear_signal_error(message: object, match: str) -> None:
    with pytest.raises(SignalError, match=match):
        normalize_message(message)


def test_file_bytes_are_stored_as_base64_text() -> None:
    sig = normalize_message([{"type": "file", "data": b"\x89PNG", "media_type": "image/png"}])
    assert sig.contents[0]["data"] == "iVBORw=="
    assert json.loads(sig.model_dump_json())["contents"][0]["data"] == "iVBORw=="


# -- normalize_signal -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "type_", "tag"),
    [
        ({"type": "user"}, "user", "user"),
        ({"type": "state"}, "state", "state"),
        ({"type": "notification"}, "notification", "notification"),
        ({"type": "reactive"}, "reactive", "system-reminder"),
        ({"type": "user-message"}, "user", "user"),
        ({"type": "system-reminder"}, "reactive", "system-reminder"),
        ({"type": "notification", "tag_name": "github-review"}, "notification", "github-review"),
        ({"type": "reactive", "tag_name": "ci.status"}, "reactive", "ci.status"),
        ({"type": "system-reminder", "tag_name": "hint"}, "reactive", "hint"),
    ],
)
def test_types_normalise_and_tags_default(raw: dict, type_: str, tag: str) -> None:
    sig = normalize_signal({**raw, "contents": "x"})
    assert (sig.type, sig.tag_name) == (type_, tag)


def test_unknown_type_suggests_tag_name() -> None:
    with pytest.raises(SignalError) as info:
        normalize_signal({"type": "foo", "contents": "x"})
    message = str(info.value)
    assert "unknown signal type 'foo'" in message
    assert "type='reactive' with tag_name='foo'" in message


def test_unknown_type_that_is_no_valid_tag_still_mentions_tag_name() -> None:
    with pytest.raises(SignalError, match=r"unknown signal type 'bad type'.*tag_name"):
        normalize_signal({"type": "bad type", "contents": "x"})


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ({"type": "state", "tag_name": "", "contents": "x"}, "tag_name must not be empty"),
        ({"type": "state", "tag_name": "1abc", "contents": "x"}, "invalid tag_name '1abc'"),
        ({"type": "state", "tag_name": "a b", "contents": "x"}, "invalid tag_name 'a b'"),
        ({"type": "state", "tag_name": "ns:tag", "contents": "x"}, "invalid tag_name 'ns:tag'"),
        ({"type": "state", "tag_name": "x>", "contents": "x"}, "invalid tag_name 'x>'"),
        ({"type": "state", "tag_name": "abc\n", "contents": "x"}, "invalid tag_name"),
        ({"type": "state", "tag_name": 3, "contents": "x"}, "tag_name must be a string"),
        (
            {"type": "state", "contents": "x", "attributes": {"ok": 1, "bad name": 2}},
            "invalid attribute name 'bad name'",
        ),
        ({"type": "state", "contents": "x", "attributes": {"-x": 1}}, "attribute name '-x'"),
        ({"type": "state", "contents": "x", "attributes": {'a"': 1}}, "attribute name 'a\"'"),
        ({"type": "state", "contents": "x", "attributes": {"xmlns": "u"}}, "'xmlns'.*reserved"),
        ({"type": "state", "contents": "x", "attributes": {"t": object()}}, "unsupported type"),
        ({"type": "state", "contents": "x", "attributes": {"n": float("nan")}}, "finite"),
        ({"type": "state", "contents": "x", "extra": 1}, "unknown key.*'extra'"),
        ({"type": "state", "contents": "x", "tagName": "t"}, "'tagName' → 'tag_name'"),
        ({"type": "state", "contents": "x", "id": "mine"}, "unknown key.*'id'"),
        ({"contents": "x"}, "needs a 'type'"),
        ({"type": ["user"], "contents": "x"}, r"unknown signal type \['user'\]"),
        ({"type": "state"}, "needs 'contents'"),
        ({"type": "state", "contents": {"text": "x"}}, "contents must be a string or a list"),
        ("just text", "signal must be a dict or a Signal"),
    ],
)
def test_bad_signals_raise_signal_error_naming_the_problem(raw: object, match: str) -> None:
    with pytest.raises(SignalError, match=match):
        normalize_signal(raw)


def test_valid_names_pass() -> None:
    attrs = {"_a": 1, "a.b-c_9": 2, "Z": 3}
    raw = {"type": "state", "tag_name": "_x.y-z9", "contents": "", "attributes": attrs}
    sig = normalize_signal(raw)
    assert sig.tag_name == "_x.y-z9" and sig.attributes == attrs


def test_json_values_allowed_as_signal_attributes() -> None:
    attrs = {"s": "x", "i": 1, "f": 1.5, "b": False, "n": None, "l": [1, "a"], "o": {"k": [True]}}
    sig = normalize_signal({"type": "state", "contents": "", "attributes": attrs})
    assert sig.attributes == attrs


def test_signal_round_trips_through_json() -> None:
    sig = normalize_signal({
        "type": "notification",
        "tag_name": "github-review",
        "contents": [{"type": "text", "text": "a"}, {"type": "file", "data": "QQ==",
                                                      "media_type": "application/pdf",
                                                      "filename": "a.pdf"}],
        "attributes": {"pr": 12, "draft": False, "who": None},
        "metadata": {"k": [1, 2]},
        "provider_options": {"openai": {"x": 1}},
    })
    dumped = json.loads(json.dumps(sig.model_dump(mode="json")))
    back = Signal.model_validate(dumped)
    assert back == sig
    assert back.created_at.tzinfo is not None


def test_direct_construction_validates_too() -> None:
    with pytest.raises(ValueError, match="tag_name must not be empty"):
        Signal(type="state", tag_name="")
    with pytest.raises(ValueError, match="invalid attribute name"):
        Signal(type="state", attributes={"no way": 1})


def test_created_at_is_converted_to_utc() -> None:
    paris = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=1)))
    assert Signal(type="user", created_at=paris).created_at == datetime(2026, 1, 1, 11, tzinfo=UTC)
    naive = Signal(type="user", created_at=datetime(2026, 1, 1, 12))
    assert naive.created_at.tzinfo is UTC


def test_signal_passes_through_normalize_signal() -> None:
    sig = normalize_message("x")
    assert normalize_signal(sig) is sig


# -- if_active / if_idle --------------------------------------------------------------------------


def test_branch_defaults() -> None:
    assert parse_if_active(None) == IfActive(behavior="deliver", attributes={})
    idle = parse_if_idle(None)
    assert (idle.behavior, idle.stream_options, idle.attributes) == ("wake", {}, {})


def test_branch_from_dict_and_from_model() -> None:
    active = parse_if_active({"behavior": "persist", "attributes": {"delivery": "while-active"}})
    assert active.behavior == "persist" and active.attributes == {"delivery": "while-active"}
    assert parse_if_active(active) == active
    idle = parse_if_idle({"behavior": "discard", "stream_options": {"max_steps": 3}})
    assert idle.behavior == "discard" and idle.stream_options == {"max_steps": 3}
    assert parse_if_idle(IfIdle(stream_options={"max_steps": 1})).stream_options == {"max_steps": 1}
    assert parse_if_idle({"behavior": None}).behavior == "wake"


@pytest.mark.parametrize(
    ("parse", "value", "match"),
    [
        (parse_if_active, {"behavior": "wake"}, "'deliver', 'persist', 'discard'"),
        (parse_if_idle, {"behavior": "deliver"}, "'wake', 'persist', 'discard'"),
        (parse_if_idle, {"behavior": "WAKE"}, "unknown if_idle.behavior 'WAKE'"),
        (parse_if_active, {"attributes": {"bad name": 1}}, "attribute name 'bad name'"),
        (parse_if_idle, {"attributes": {"9": 1}}, "attribute name '9'.*if_idle"),
        (parse_if_idle, {"streamOptions": {}}, "'streamOptions' → 'stream_options'"),
        (parse_if_active, {"stream_options": {}}, "unknown key.*'stream_options'.*if_active"),
        (parse_if_idle, {"stream_options": "fast"}, "if_idle.stream_options must be a dict"),
        (parse_if_active, "deliver", "if_active must be a dict or IfActive"),
        (parse_if_active, IfIdle(), "if_active must be a dict or IfActive"),
    ],
)
def test_bad_branches_raise_signal_error(parse: Any, value: Any, match: str) -> None:
    with pytest.raises(SignalError, match=match):
        parse(value)


def test_branch_error_is_never_a_raw_pydantic_error() -> None:
    try:
        parse_if_active({"behavior": 3})
    except SignalError as exc:
        assert "validation error" not in str(exc).lower()
        assert "3" in str(exc)
    else:
        pytest.fail("behavior 3 was accepted")


# -- targets --------------------------------------------------------------------------------------


def test_targets() -> None:
    assert parse_target(run_id="r1") == Target(run_id="r1")
    assert parse_target(resource_id="u", thread_id="t") == Target(resource_id="u", thread_id="t")
    both = parse_target(run_id="r", resource_id="u", thread_id="t")
    assert (both.run_id, both.resource_id, both.thread_id) == ("r", "u", "t")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "no target"),
        ({"resource_id": "u"}, "resource_id was given without thread_id"),
        ({"thread_id": "t"}, "thread_id was given without resource_id"),
        ({"run_id": "r", "thread_id": "t"}, "without resource_id"),
        ({"run_id": ""}, "run_id must not be empty"),
        ({"resource_id": "u", "thread_id": 5}, "thread_id must be a string"),
    ],
)
def test_bad_targets(kwargs: dict, match: str) -> None:
    with pytest.raises(SignalError, match=match):
        parse_target(**kwargs)


# -- one pass: normalize_* check each value once, then build without a second validation --------

_ATTRS = st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True),
                         st.one_of(st.integers(), st.text(max_size=8), st.booleans()), max_size=3)
_PARTS = st.lists(st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=8)),
                  min_size=1, max_size=3)


@settings(max_examples=200, deadline=None)
@given(
    contents=st.one_of(st.text(max_size=12), _PARTS),
    attributes=_ATTRS,
    metadata=st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    signal_type=st.sampled_from(["user", "state", "reactive", "notification"]),
    tag=st.one_of(st.none(), st.sampled_from(["note", "user", "x.y-z"])),
)
def test_the_one_pass_signal_is_the_one_pydantic_validates(
    contents: Any, attributes: dict[str, Any], metadata: dict[str, Any], signal_type: str,
    tag: str | None,
) -> None:
    """``normalize_signal`` checks each value where it reads it and builds the Signal without
    pydantic's second pass: the result (or the refusal) is the validated build's, laid out the
    same way."""
    given_fields = {"type": signal_type, "contents": contents, "attributes": attributes,
                    "metadata": metadata, "provider_options": {}, "tag_name": tag}

    def result(make: Any) -> Any:
        try:
            return make()
        except SignalError as error:
            return f"SignalError: {error}"

    one_pass = result(lambda: normalize_signal(given_fields))
    validated = result(lambda: build_signal(dict(given_fields), "signal"))
    if isinstance(validated, str):
        assert one_pass == validated  # the same refusal, word for word
        return
    assert isinstance(one_pass, Signal)
    assert one_pass.model_fields_set == validated.model_fields_set
    assert list(one_pass.__dict__) == list(validated.__dict__)
    one_pass.__dict__.update(id=validated.id, created_at=validated.created_at)
    assert one_pass == validated
