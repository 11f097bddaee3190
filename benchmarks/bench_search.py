"""Full-text search over 100,000 messages (issue 23): each query answered by the store's index
(``Store.search_messages``: SQLite FTS5) beside a plain ``LIKE '%word%'`` scan of the same
messages in the same file and run, the anchor. The bound: every search answers in at most
50 ms.

The messages: 200 threads, user and assistant turns of 12-40 words drawn from a 5,000-word
vocabulary (Zipf-like: a few words are everywhere, most are rare), stored through
``Store.append`` in batches of 500; the index trails the log (``store/search.py``): the store
indexes what its writes stored 0.2 s after them, in transactions of its own, so the time to
store them is printed with what those took meanwhile, then the time the last catch-up took
(what a search right after the last write pays first).

    .venv/bin/python benchmarks/bench_search.py [--messages 100000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from tui_agent.store import SqliteStore
from tui_agent.store.records import MessageIn

BOUND_MS = 50.0
THREADS = 200
VOCABULARY = [f"w{n}" for n in range(5000)]
WEIGHTS = [1 / (n + 1) for n in range(len(VOCABULARY))]


def text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCABULARY, WEIGHTS, k=rng.randint(12, 40)))


async def fill(store: SqliteStore, count: int, rng: random.Random) -> float:
    """Seconds to store ``count`` messages through the store (the index written alongside)."""
    for t in range(THREADS):
        await store.ensure_thread(f"t{t}", "bench", title=f"thread {t}")
    start = time.perf_counter()
    batch = 500
    for first in range(0, count, batch):
        thread = f"t{(first // batch) % THREADS}"
        messages = [MessageIn("user" if i % 2 == 0 else "assistant", text(rng))
                    for i in range(first, min(count, first + batch))]
        await store.append(thread, "bench", messages=messages)
    return time.perf_counter() - start


async def timed(call: object, repeat: int) -> tuple[float, int]:
    """Median milliseconds of ``repeat`` awaits of ``call()``, and how many it found."""
    times, found = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        found = len(await call())  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), found


async def like_scan(store: SqliteStore, word: str, thread: str | None) -> list[object]:
    where = " AND thread_id = ?" if thread else ""
    args: tuple[object, ...] = (f"%{word}%", thread) if thread else (f"%{word}%",)
    return list(await store.fetchall(
        "SELECT seq, id, content FROM messages WHERE role IN ('user', 'assistant')"
        f" AND content LIKE ?{where} ORDER BY seq DESC LIMIT 50", args))


async def main(count: int, repeat: int) -> None:
    rng = random.Random(23)
    queries = [  # (label, query, the LIKE anchor's word, thread)
        ("a common word", "w1", "w1 ", None),
        ("a mid word", "w200", "w200 ", None),
        ("a rare word", "w4999", "w4999", None),
        ("no match", "zzz", "zzz", None),
        ("two words", "w3 w77", "w77", None),
        ('a phrase "w0 w1"', '"w0 w1"', "w0 w1 ", None),
        ("a rare word, one thread", "w4000", "w4000", "t7"),
        ("a common word, one thread", "w2", "w2 ", "t7"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "bench.sqlite")
        stored_s = await fill(store, count, rng)
        started = time.perf_counter()
        await store.index_trailing_messages()
        caught_up_s = time.perf_counter() - started
        print(f"messages stored:     {count:,} in {THREADS} threads through Store.append, "
              f"{stored_s / count * 1e6:.0f} µs each (the index steps meanwhile included)")
        print(f"  the last catch-up: {caught_up_s * 1e3:.1f} ms (what trailed the last write)")
        print(f"{'query':<28}{'search (FTS5)':>16}{'found':>7}{'LIKE scan':>14}{'ratio':>8}")
        worst = 0.0
        for label, query, word, thread in queries:
            searched, found = await timed(
                lambda q=query, t=thread: store.search_messages(q, thread_id=t), repeat)
            scanned, _ = await timed(lambda w=word, t=thread: like_scan(store, w, t), repeat)
            worst = max(worst, searched)
            print(f"{label:<28}{searched:>13.2f} ms{found:>7}{scanned:>11.2f} ms"
                  f"{scanned / searched:>7.1f}x")
        await store.close()
    verdict = "PASS" if worst <= BOUND_MS else "FAIL"
    print(f"slowest search:      {worst:.2f} ms (bound {BOUND_MS:.0f} ms): {verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(main(args.messages, args.repeat))
