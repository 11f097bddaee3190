"""Waiting on an abort without a task per wait (``tui_agent/abort.py``): the event calls back,
the scope cancels only what its block awaits, and never swallows anyone else's cancel."""

from __future__ import annotations

import asyncio

import pytest

from tui_agent.abort import AbortEvent, CancelOnAbort, on_abort


async def test_an_abort_event_calls_each_callback_once_and_still_wakes_its_waiters() -> None:
    abort = AbortEvent()
    heard: list[str] = []
    on_abort(abort, lambda: heard.append("first"))
    stop = on_abort(abort, lambda: heard.append("stopped"))
    on_abort(abort, lambda: heard.append("last"))
    stop()
    waiter = asyncio.ensure_future(abort.wait())
    abort.set()
    abort.set()
    await asyncio.wait_for(waiter, 5)
    assert heard == ["first", "last"]
    late: list[str] = []
    on_abort(abort, lambda: late.append("late"))  # set already: called soon, not at once
    assert late == []
    await asyncio.sleep(0)
    assert late == ["late"]


@pytest.mark.parametrize("event", [AbortEvent, asyncio.Event])
async def test_an_abort_ends_the_block_where_it_waits_and_the_task_goes_on(
    event: type[asyncio.Event],
) -> None:
    abort, waiting = event(), asyncio.Event()

    async def work() -> str:
        with CancelOnAbort(abort) as scope:
            waiting.set()
            await asyncio.Event().wait()  # never answers: only the abort ends it
        await asyncio.sleep(0)  # the task is not cancelled past the block
        return f"aborted={scope.aborted}"

    task = asyncio.create_task(work())
    await waiting.wait()
    abort.set()
    assert await asyncio.wait_for(task, 5) == "aborted=True"


async def test_a_block_that_ends_unaborted_leaves_nothing_behind() -> None:
    abort = AbortEvent()
    with CancelOnAbort(abort) as scope:
        await asyncio.sleep(0)
    abort.set()  # after the block: nothing of the scope listens any more
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not scope.aborted


async def test_an_abort_set_by_the_task_itself_cancels_its_next_wait_only_inside_the_block(
) -> None:
    abort = AbortEvent()
    with CancelOnAbort(abort) as scope:
        abort.set()  # e.g. a run stopping on its own write error, mid-step
    # The block ended without awaiting: no cancellation is left to hit this await.
    await asyncio.sleep(0)
    assert not scope.aborted

    again = AbortEvent()
    with CancelOnAbort(again) as inner:
        again.set()
        await asyncio.Event().wait()  # cancelled here, from the loop
    assert inner.aborted


async def test_the_callers_cancel_goes_through_the_scope() -> None:
    abort, waiting = AbortEvent(), asyncio.Event()

    async def work() -> None:
        with CancelOnAbort(abort):
            waiting.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(work())
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancel_during_the_aborts_cleanup_is_not_swallowed() -> None:
    """The abort cancels the block; its cleanup awaits; the caller cancels meanwhile: that
    cancel reaches the caller (the scope swallows its own alone)."""
    abort, cleaning, release = AbortEvent(), asyncio.Event(), asyncio.Event()

    async def work() -> None:
        with CancelOnAbort(abort):
            try:
                await asyncio.Event().wait()
            finally:
                cleaning.set()
                await release.wait()

    task = asyncio.create_task(work())
    await asyncio.sleep(0)
    abort.set()
    await asyncio.wait_for(cleaning.wait(), 5)
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
