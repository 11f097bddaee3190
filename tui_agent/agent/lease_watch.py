"""The lease watch of a run with memory: it renews the thread's lease every ``lease_renew_s``
and notices an abort asked from another process (every ``ABORT_POLL_S``). A renewal refused
(the run stalled past its TTL and another took the thread over) stops the run with
``LeaseLostError`` (tests/test_fencing.py, tests/test_lease.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from tui_agent.agent.ports import RunMemory
from tui_agent.errors import LeaseLostError

ABORT_POLL_S = 0.1  # how often a run looks for an abort requested from another process


async def watch_lease(
    memory: RunMemory,
    thread_id: str,
    run_id: str,
    owner: str,
    abort_event: asyncio.Event,
    *,
    finished: Callable[[], bool],
    on_lost: Callable[[Exception], None],
) -> None:
    """Until ``abort_event`` is set: renew, or look for an abort, and set it when asked.
    ``on_lost`` gets the ``LeaseLostError`` of a renewal refused before ``finished()``."""
    store, ttl = memory.store, memory.lease_ttl_s
    renew_every = memory.lease_renew_s
    last_renewal = time.monotonic()
    while not abort_event.is_set():
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
