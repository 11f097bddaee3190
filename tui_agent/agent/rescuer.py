"""The stranded-signal rescuer: told, not polling.

Signals stranded by a dead run (its owner was killed, or exited with a message queued) are
taken over by a new run in any live process with the agent open (``ThreadRuntime.
rescue_stranded``). The rescuer decides *when* to look without a timer of its own:

- it reads the store's rescue outlook (``Store.rescue_outlook``: whether signals wait with no
  live lease now, and in how many seconds the first lease that signals wait behind runs out);
- signals stranded now are rescued at once;
- else it sleeps until that lease's expiry (plus ``MARGIN_S``), or until it is told something
  changed: this process delivered a signal into a run it does not run (``poke``: that run's
  owner may be dead), or, in a process that watches threads, another process committed (a
  passive watch on the store's change feed, which on Linux hears the file's writes and on
  PostgreSQL is pushed by ``NOTIFY``: it is woken while the subscriptions keep the feed
  running and never keeps it running by itself, so a process that only sends pays no change
  poller for it);
- a thread it was poked for is *minded* until the run there ends: it also wakes at that
  run's lease expiry. A signal the run took is no longer waiting, and the outlook does not
  count that run's lease. But a run cancelled as its process exits hands the signals it took
  and never answered back, with its lease released. A process that only sends would not hear
  of that commit, so it looks again when the old lease would have run out. The minded leases
  are read before the outlook: a lease found gone was released in the transaction that left
  the signals, so the outlook read after it sees them
  (tests/test_rescue.py::test_a_signal_taken_before_the_rescuer_looks_is_answered_after_its_run_is_cancelled).

With nothing waiting there is no deadline: the task sleeps on an event and costs no CPU (a
process watching 20 idle threads, measured by benchmarks/bench_signal_speed.py). A stranded
message is answered within the lease's expiry plus a few milliseconds
(tests/test_rescue.py::test_a_stranded_message_is_answered_within_the_lease_expiry_plus_100_ms).
Stranded signals it may not take (another agent ran the thread last) are left alone until the
next change, so they never make it spin.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from tui_agent.store.changes import ChangeFeed
from tui_agent.store.contract import Store

MARGIN_S = 0.002  # past a lease's expiry: the store's "expires_at > now" is false by then
ERROR_BACKOFF_S = 1.0  # after a failed look or pass (the store unreachable): try again then

log = logging.getLogger(__name__)


class Rescuer:
    """One agent's rescuer in one event loop. ``rescue`` is the runtime's pass (the ids of the
    runs it started); ``runs_here(run_id)`` tells a run of its own runtime (a thread whose run
    is one is not minded); :meth:`run` is the task's body."""

    def __init__(
        self, store: Store, rescue: Callable[[], Awaitable[list[str]]],
        runs_here: Callable[[str], bool],
    ) -> None:
        self._store = store
        self._rescue = rescue
        self._runs_here = runs_here
        self._told = asyncio.Event()  # a change, a poke: look again
        self._minding: set[str] = set()  # threads poked for whose run may still be live
        self.looks = 0  # outlooks read (a test and the benchmark count them)
        self.pokes = 0  # times told to look by this process's sends (a test counts them)

    def poke(self, thread_id: str) -> None:
        """Something this process did may strand signals (it delivered into a run of another
        process, on ``thread_id``): look again now, and mind the thread until its run ends."""
        self.pokes += 1
        self._minding.add(thread_id)
        self._told.set()

    @property
    def minding(self) -> frozenset[str]:
        """The threads minded now (see the module docstring)."""
        return frozenset(self._minding)

    async def run(self) -> None:
        watch = ChangeFeed.of(self._store).watch(self._told, local=False, passive=True)
        try:
            await self._serve()
        finally:
            watch.close()

    async def _serve(self) -> None:
        fruitless = False  # the last pass found stranded signals and could take none of them
        while True:
            self._told.clear()  # before the look: a change after it sets the event again
            try:
                minded_in = await self._minded_due_in()  # first: see the module docstring
                stranded, due_in = await self._store.rescue_outlook()
                self.looks += 1
                due_in = _sooner(due_in, minded_in)
                if stranded and not fruitless:
                    fruitless = not await self._rescue()
                    continue  # look again: a rescue changed the outlook
            except asyncio.CancelledError:
                raise
            except Exception:  # a bad look or pass must not end the rescuer
                log.exception("rescuing stranded signals failed")
                due_in = ERROR_BACKOFF_S
            timeout = None if due_in is None else max(due_in, 0.0) + MARGIN_S
            await _wait(self._told, timeout)
            fruitless = False  # told of a change, or a lease ran out: try the stranded again

    async def _minded_due_in(self) -> float | None:
        """Seconds until the first minded thread's live lease runs out (None: none is live).
        A thread whose lease is gone (its run ended) or whose run is this runtime's own (a
        rescue took it over) is minded no more."""
        due_in: float | None = None
        for thread_id in list(self._minding):
            live = await self._store.active_run(thread_id)
            if live is None or self._runs_here(live.run_id):
                self._minding.discard(thread_id)
                continue
            due_in = _sooner(due_in, live.expires_at.timestamp() - time.time())
        return due_in


def _sooner(first: float | None, second: float | None) -> float | None:
    if first is None:
        return second
    return first if second is None else min(first, second)


async def _wait(event: asyncio.Event, timeout: float | None) -> None:
    with contextlib.suppress(TimeoutError):  # a lease ran out: look again
        # asyncio.timeout, not wait_for: on 3.11 wait_for can lose a cancellation that
        # arrives as the event is set (a close that then waits for ever).
        async with asyncio.timeout(timeout):
            await event.wait()
