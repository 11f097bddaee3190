"""A send's result dict with values made when first read (tui_agent/lazy.py): every way of
reading a dict sees the made value, never the placeholder, and each is made once."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

from tui_agent.lazy import Later, LazyDict


def made() -> tuple[LazyDict, list[str]]:
    calls: list[str] = []

    def make(value: str) -> Any:
        calls.append(value)
        return value.upper()

    result = LazyDict(record=Later(lambda: make("record")), accepted={"action": "deliver"},
                      signal=Later(lambda: make("signal")))
    return result, calls


def test_a_value_is_made_when_first_read_and_once() -> None:
    result, calls = made()
    assert result["accepted"] == {"action": "deliver"} and calls == []
    assert result.get("accepted") == {"action": "deliver"} and calls == []
    assert "record" in result and len(result) == 3 and list(result) == [
        "record", "accepted", "signal"] and calls == []
    assert result["record"] == "RECORD" and result["record"] == "RECORD"
    assert calls == ["record"]
    assert result.get("signal") == "SIGNAL" and result.get("missing", 1) == 1
    assert calls == ["record", "signal"]


def test_every_way_of_reading_it_sees_the_made_values() -> None:
    expected = {"record": "RECORD", "accepted": {"action": "deliver"}, "signal": "SIGNAL"}
    readers: list[Any] = [
        dict, lambda r: {**r}, lambda r: dict(r.items()), lambda r: dict(zip(r, r.values(),
                                                                              strict=True)),
        lambda r: r.copy(), lambda r: {} | r, lambda r: r | {}, copy.copy, copy.deepcopy,
        lambda r: pickle.loads(pickle.dumps(r)), lambda r: json.loads(json.dumps(r)),
        lambda r: eval(repr(r)),
        lambda r: {k: r[k] for k in r}, lambda r: dict(**r),
    ]
    for read in readers:
        result, _ = made()
        assert read(result) == expected, read
    result, _ = made()
    assert result == expected and expected == result
    result, _ = made()
    assert (result != expected) is False
    result, _ = made()
    match result:
        case {"record": record, "signal": signal}:
            assert (record, signal) == ("RECORD", "SIGNAL")
        case _:
            raise AssertionError("a mapping pattern reads it")
    result, _ = made()
    assert result.pop("record") == "RECORD" and "record" not in result
    assert result.setdefault("signal") == "SIGNAL"
    assert result.popitem() == ("signal", "SIGNAL")
    result, _ = made()
    other, _ = made()
    assert result == other
