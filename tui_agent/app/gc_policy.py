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
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000  # allocations between two young collections (Python's default: 700)


def settle_garbage_collector() -> None:
    """Freeze what start-up made and collect the young generation less often. Idempotent
    (calling it again after more imports freezes those too); checked by
    tests/app/test_gc_policy.py."""
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)
