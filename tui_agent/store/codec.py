"""How the stores write JSON values and make ids: one encoder for every store, so a value
round-trips the same whichever store keeps it (``tests/test_store_contract.py``)."""

from __future__ import annotations

import os
import time

from tui_agent._util import dumps, loads

__all__ = ["dumps", "loads", "new_id", "time_ordered_id"]


def new_id() -> str:
    """32 random hex digits (uuid4().hex's form and randomness without the UUID object: a
    burst of queued messages makes one per signal)."""
    return os.urandom(16).hex()


def time_ordered_id(now_ns: int | None = None) -> str:
    """A UUIDv7 as 32 hex digits: Unix time in milliseconds (``now_ns``, or now), then 74
    random bits. Time-ordered, so a burst's rows land at the end of their table's unique index
    (signals, messages, notification records) instead of on one random index page each (every
    such page is rewritten at COMMIT: ~2 µs a signal, and more as the table grows); as unique
    as uuid4 in practice. No uuid.UUID object and no 128-bit arithmetic: this runs once per
    signal sent and message stored (the time's 12 digits are written once a millisecond, the
    rest come from the pool). tests/test_notifications.py checks the order."""
    global _last_ms
    ms = (time.time_ns() if now_ns is None else now_ns) // 1_000_000
    last = _last_ms
    if last[0] != ms:
        last = _last_ms = (ms, f"{ms & 0xFFFF_FFFF_FFFF:012x}")
    return last[1] + _random_tail()


_last_ms: tuple[int, str] = (-1, "")  # the millisecond last written, and its 12 hex digits
# Any hex digit → the digit of RFC 9562's variant (10xx) keeping the digit's low two bits.
_VARIANT = str.maketrans("0123456789abcdef", "89ab89ab89ab89ab")


class _RandomPool:
    """The 20 hex digits after a UUIDv7's time: the version (7), then 74 random bits with the
    variant set, from ``os.urandom`` read 4 KB at a time and written as hex in one call: one
    system call per 409 ids instead of one each (~1 µs a send). A forked child starts a pool
    of its own (it must not hand out its parent's numbers)."""

    def __init__(self) -> None:
        self.tails: list[str] = []

    def take(self) -> str:
        tails = self.tails
        if not tails:
            digits = os.urandom(4090).hex()
            tails = [
                f"7{digits[i + 1:i + 4]}{digits[i + 4].translate(_VARIANT)}{digits[i + 5:i + 20]}"
                for i in range(0, 8180, 20)
            ]
            self.tails = tails
        return tails.pop()  # atomic under the GIL: two threads never take the same tail

    def forget(self) -> None:
        self.tails = []


_POOL = _RandomPool()
_random_tail = _POOL.take
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.forget)
