"""The helpers that existed twice with different behaviour, now one each: ``signal_text``
(signals/data.py) and the JSON helpers of ``tui_agent._util``."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel

from tui_agent._util import dump_if_model, dumps, json_round_trip, loads
from tui_agent.signals import Signal, signal_text


class Point(BaseModel):
    x: int
    when: datetime


WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_signal_text_is_what_the_model_sees_and_what_a_transcript_shows() -> None:
    parts = [{"type": "text", "text": "look"}, {"type": "file", "url": "https://x/a.png",
                                                 "media_type": "image/png"},
             {"type": "text", "text": "here"}]
    assert signal_text("plain") == "plain"
    assert signal_text(parts) == "look\nhere"  # file parts left out
    assert Signal(type="user", contents=parts).text == "look\nhere"


def test_signal_text_shows_contents_of_any_shape_read_back_from_a_log() -> None:
    assert signal_text(["stray", {"type": "text", "text": "kept"}]) == "kept"
    assert signal_text({"odd": 1}) == "{'odd': 1}"
    assert signal_text(None) == "None"


def test_dumps_is_compact_utf8_and_never_fails_a_write() -> None:
    assert dumps({"a": [1, 2], "é": "ü"}) == '{"a":[1,2],"é":"ü"}'
    assert dumps({"at": WHEN}) == '{"at":"2026-01-02 03:04:05+00:00"}'
    assert loads(None) is None
    assert loads(dumps({"a": (1, 2)})) == {"a": [1, 2]}


def test_json_round_trip_gives_what_another_process_reads() -> None:
    """Scores are stored this way: the value equals what the store gives back."""
    value = {"n": (1, 2), 3: "int key", "at": WHEN}
    assert json_round_trip(value) == {"n": [1, 2], "3": "int key", "at": str(WHEN)}


def test_dump_if_model_opens_a_model_and_leaves_anything_else_as_given() -> None:
    """A tool's output: a pydantic model streams as its JSON dict; other values are the
    tool's own (a tuple stays a tuple for the caller's ``tool_results``)."""
    assert dump_if_model(Point(x=1, when=WHEN)) == {"x": 1, "when": "2026-01-02T03:04:05Z"}
    output = (1, WHEN)
    assert dump_if_model(output) is output
