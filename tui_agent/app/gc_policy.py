"""The garbage collector's settings for the running app.

A Textual frame makes many short-lived container objects (every ``Strip`` carries seven
caches), and Python's default young-generation threshold (700 allocations) collects so often
that thousands of them are caught alive and promoted each second; the full collections that
follow walk every object the process holds, the imported modules included. With four panes
streaming that made pauses of 100-280 ms every second (``benchmarks/bench_app.py`` prints the
collector's pauses of the streaming run beside its lag figures).

So the app, once its modules are imported, freezes what exists (``gc.freeze``: the modules,
classes and functions are never garbage, and are no longer walked) and raises the young
threshold, so objects die by reference counting before a collection sees them. Cycles are
still collected, only later. The cost: an object alive at a freeze that later becomes cyclic
garbage is never freed — a few objects of start-up, once.

Later is too late for removed widgets: a widget and its children point at each other, so a
transcript that prunes its top as it goes (and panes compacting) leaves cyclic garbage that only
a full collection frees, and those come seldom once the heap is large (the oldest generation is
collected when it grew by a quarter). Four panes streaming grew by their dead widgets, +24% RSS
in ten minutes (``benchmarks/bench_app_hours.py``); a full collection every 15 s held it at +2%.
So ``SWEEPER`` runs one full collection ``SWEEP_AFTER_S`` after widgets were removed: one for
any number of removals, none while nothing is removed (idle stays idle), and never more than
1% of the time (a sweep walks every live object: ~0.1-0.5 s with four panes on a busy 2-core
machine, as long as the full collection Python itself would make, later and over more).

What the app imports late (litellm, when the model warms up or a priced model's cost map
loads: ~240k objects, 171 ms of a full collection) is frozen then too, so a sweep walks the
app's own objects, not litellm's.
"""

from __future__ import annotations

import asyncio
import gc
import time

YOUNG_THRESHOLD = 20_000  # allocations between two young collections (Python's default: 700)
SWEEP_AFTER_S = 10.0  # removed widgets are collected within this long
SWEEP_SHARE = 0.01  # at most this share of the time goes to sweeping


def settle_garbage_collector() -> None:
    """Freeze what start-up made and collect the young generation less often. Idempotent
    (calling it again after more imports freezes those too); checked by
    tests/app/test_gc_policy.py."""
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)


def freeze_late_imports() -> None:
    """Freeze what a late import brought (litellm's modules), where the collector was settled
    for the app (``tui-agent``, the benchmarks); a test run or an embedding program keeps its
    own collector as it is."""
    if gc.get_threshold()[0] == YOUNG_THRESHOLD:
        gc.freeze()


def release_textual_styles_caches() -> None:
    """Let go of the paint caches Textual keeps of removed widgets.

    Textual (8.2) memoises ``StylesCache.get_inner_outer`` with an ``lru_cache`` on an instance
    method, so the cache's keys hold every widget's ``StylesCache`` (each line the widget
    painted, and the set of its lines waiting to be painted) for as long as 1,024 later calls
    leave it there, long after the widget was removed (Textualize/textual#6665, open). With
    four panes streaming, that was ~180 orphans in four minutes, most of the RSS growth over
    half an hour and a live heap that made each sweep longer. Clearing it before each sweep
    frees them; what it memoises (two ``Style``s from two colours) is rebuilt at the next
    paint. The one place the app reaches into Textual's private parts, on purpose and
    guarded: a Textual that fixes it (no ``cache_clear`` there) makes this a no-op
    (tests/app/test_gc_policy.py)."""
    from textual import _styles_cache

    memoised = getattr(_styles_cache.StylesCache, "get_inner_outer", None)
    clear = getattr(memoised, "cache_clear", None)
    if clear is not None:
        clear()


class GarbageSweeper:
    """One full collection soon after widgets were removed, at most ``SWEEP_SHARE`` of the
    time spent sweeping: a sweep that held the loop P seconds waits ``P / SWEEP_SHARE`` before
    the next (tests/app/test_gc_policy.py)."""

    def __init__(self) -> None:
        self._pending: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop ``_pending`` is on
        self._next_at = 0.0  # monotonic time before which no sweep starts
        self.sweeps = 0
        self.longest_pause_s = 0.0  # the longest a sweep held the event loop

    def released(self) -> None:
        """Widgets were removed: they are collected within ``SWEEP_AFTER_S`` (or, after a long
        sweep, when its share of the time allows)."""
        loop = asyncio.get_running_loop()
        if self._pending is not None and self._loop is loop:
            return  # one sweep for any number of removals (a closed loop's never comes)
        wait = max(SWEEP_AFTER_S, self._next_at - time.monotonic())
        self._loop = loop
        self._pending = loop.call_later(wait, self._sweep)

    def _sweep(self) -> None:
        self._pending = None
        started = time.monotonic()
        release_textual_styles_caches()
        gc.collect()
        pause = time.monotonic() - started
        self._next_at = started + pause / SWEEP_SHARE
        self.longest_pause_s = max(self.longest_pause_s, pause)
        self.sweeps += 1


SWEEPER = GarbageSweeper()
