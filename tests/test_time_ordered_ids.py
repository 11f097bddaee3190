"""Ids of rows written in bursts (signals, messages, notification records) are UUIDv7s as 32
hex digits: their creation's millisecond first, so a burst's rows land at the end of their
table's unique index (``store.codec.time_ordered_id``)."""

from __future__ import annotations

import time

from tui_agent.signals.data import Signal
from tui_agent.store.codec import time_ordered_id
from tui_agent.store.records import MessageIn


def test_an_id_is_a_uuid7_of_its_millisecond() -> None:
    before = time.time_ns() // 1_000_000
    made = time_ordered_id()
    after = time.time_ns() // 1_000_000
    assert len(made) == 32 and int(made, 16) >= 0
    assert before <= int(made[:12], 16) <= after
    assert made[12] == "7" and made[16] in "89ab"  # the version, then RFC 9562's variant


def test_ids_sort_by_time_and_never_repeat() -> None:
    made = [time_ordered_id() for _ in range(20_000)]  # several refills of the random pool
    assert len(set(made)) == len(made)
    millis = [int(one[:12], 16) for one in made]
    assert millis == sorted(millis)


def test_messages_and_signals_are_given_one_by_default() -> None:
    for made in (MessageIn("user", "hi").id, Signal(type="user", contents="hi").id):
        assert made[12] == "7" and abs(int(made[:12], 16) - time.time_ns() // 1_000_000) < 1000
