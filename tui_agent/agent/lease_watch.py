"""The lease watch of a run with memory: it renews the thread's lease every ``lease_renew_s``
and notices an abort asked from another process (every ``ABORT_POLL_S``). A renewal refused
(the run stalled past its TTL and another took the thread over) stops the run with
``LeaseLostError`` (tests/test_fencing.py, tests/test_lease.py).

While the run rests (``Rest``: it waits for a person's approval, maybe for hours) the watch only
renews: the waiting run looks for an abort itself each time the store's change feed tells it
of a commit (an abort is one), so a waiting run costs no query between renewals
(tests/test_approvals.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tui_agent.agent.ports import RunMemory
from tui_agent.errors import LeaseLostError

ABORT_POLL_S = 0.1  # how often a run looks for an abort requested from another process


class Rest:
    """Whether the run rests (waits for a person): the lease watch then only renews."""

    def __init__(self) -> None:
        self.active = False
        self.ended = asyncio.Event()  # set when the rest ends: the watch polls again at once

    def begin(self) -> None:
        self.active = True
        self.ended.clear()

    def end(self) -> None:
        self.active = False
        self.ended.set()


async def watch_lease(
    memory: RunMemory,
    thread_id: str,
    run_id: str,
    owner: str,
    abort_event: asyncio.Event,
    *,
    finished: Callable[[], bool],
    on_lost: Callable[[Exception], None],
    rest: Rest | None = None,
) -> None:
    """Until ``abort_event`` is set: renew, or look for an abort, and set it when asked.
    ``on_lost`` gets the ``LeaseLostError`` of a renewal refused before ``finished()``.
    During a ``rest``, only renew (the resting run looks for an abort itself)."""
    store, ttl = memory.store, memory.lease_ttl_s
    renew_every = memory.lease_renew_s
    last_renewal = time.monotonic()
    while not abort_event.is_set():
        if rest is not None and rest.active:
            await _rest(rest, last_renewal + renew_every - time.monotonic())
            if rest.active or time.monotonic() - last_renewal >= renew_every:
                ours, _ = await store.renew_lease(thread_id, run_id, owner, ttl)
                last_renewal = time.monotonic()
                if not ours:
                    if not finished():
                        on_lost(LeaseLostError(
                            f"run {run_id} lost the lease of thread {thread_id!r}"
                            " (it was taken over while it waited for approval)"
                        ))
                    return
            continue
        await asyncio.sleep(ABORT_POLL_S)
        if time.monotonic() - last_renewal >= renew_every:
            ours, abort = await store.renew_lease(thread_id, run_id, owner, ttl)
            last_renewal = time.monotonic()
            if not ours:
                if not finished():  # declared dead while still going: stop now
                    on_lost(LeaseLostError(
                        f"run {run_id} lost the lease of thread {thread_id!r}"
                        " (it stalled past its TTL and was interrupted)"
                    ))
                return
        else:
            abort = await store.abort_requested(thread_id, run_id)
        if abort:
            abort_event.set()


async def _rest(rest: Rest, seconds: float) -> None:
    """Until the rest ends or ``seconds`` pass. Not ``wait_for``: on Python 3.11 it can take
    a cancellation that meets the rest's end for a normal return, and the watch would outlive
    its run."""
    ended = asyncio.ensure_future(rest.ended.wait())
    try:
        await asyncio.wait({ended}, timeout=max(seconds, 0.0))
    finally:
        ended.cancel()
