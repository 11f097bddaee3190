"""Waiting on an abort without a task per wait.

A run's step used to wait for its abort as ``asyncio.wait`` on two tasks (the work, and
``abort.wait()``), and the direct model path's opening of a request did the same again, then
watched the open response with a third task: six tasks a model step, each a loop turn or two on
the path from an idle thread's wake to its first delta (issue 22). Here the abort calls back
instead: :class:`AbortEvent` is an ``asyncio.Event`` that also calls its callbacks when set,
and :class:`CancelOnAbort` cancels what the current task awaits the moment the abort is set,
as ``asyncio.timeout`` cancels it at its deadline, telling its own cancellation from anyone
else's. A plain ``asyncio.Event`` (a model called by outside code with its own) still works:
waiting on it takes one task. Tested by tests/test_abort.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType

__all__ = ["AbortEvent", "CancelOnAbort", "on_abort"]


class AbortEvent(asyncio.Event):
    """An ``asyncio.Event`` that calls back, once, when it is set (:func:`on_abort`)."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], object]] = []

    def set(self) -> None:
        if self.is_set():
            return
        super().set()  # the waiters of wait() wake as ever
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception as error:  # the others still hear of it, and so does set()'s caller
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "an abort callback failed", "exception": error})

    def add_callback(self, callback: Callable[[], object]) -> None:
        self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], object]) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)


def on_abort(abort: asyncio.Event, callback: Callable[[], object]) -> Callable[[], object]:
    """Call ``callback()`` once when ``abort`` is set (soon, if it is set already); the function
    returned cancels that. No task for an :class:`AbortEvent`; one for a plain event."""
    if isinstance(abort, AbortEvent):
        if abort.is_set():
            handle = asyncio.get_running_loop().call_soon(callback)
            return handle.cancel
        abort.add_callback(callback)
        return lambda: abort.remove_callback(callback)
    waiter = asyncio.ensure_future(abort.wait())
    waiter.add_done_callback(lambda done: None if done.cancelled() else callback())
    return waiter.cancel


class CancelOnAbort:
    """``with CancelOnAbort(abort) as scope:`` — what the block awaits is cancelled the moment
    ``abort`` is set, and the block's ``CancelledError`` ends there (``scope.aborted`` is then
    True). Anyone else's cancellation of the task (its caller's, ``close()``'s) goes on out as
    ever: the task's count of cancel requests tells them apart, as in ``asyncio.timeout``. The
    cancel is made from the loop, never inside the task's own step (an abort set by the task
    itself cancels its next await): a cancel requested from inside a step that then leaves the
    block without awaiting would hit whatever the task awaited next."""

    __slots__ = ("_abort", "_cancelling", "_fired", "_inside", "_stop", "_task", "aborted")

    def __init__(self, abort: asyncio.Event) -> None:
        self._abort = abort
        self._fired = False  # this scope asked for the task's cancellation
        self._inside = False
        self.aborted = False

    def __enter__(self) -> CancelOnAbort:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("CancelOnAbort is used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._inside = True
        self._stop: Callable[[], object] = on_abort(self._abort, self._on_set)
        return self

    def _on_set(self) -> None:
        asyncio.get_running_loop().call_soon(self._cancel)

    def _cancel(self) -> None:
        if self._inside and not self._task.done():
            self._fired = True
            self._task.cancel()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._inside = False
        self._stop()
        if not self._fired:
            return False
        self.aborted = True
        # Ours alone (no one else asked meanwhile): the cancellation ends here.
        return self._task.uncancel() <= self._cancelling and kind is asyncio.CancelledError
