"""The object ``agent.stream()`` returns: the run's chunks as they happen, and its result.

The run itself is an asyncio task that pushes chunks into an unbounded queue, so it progresses
even when nobody reads the output (a woken run), and reading never slows the model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from tui_agent.agent.result import GenerateResult
from tui_agent.events import TEXT_DELTA

_END = object()


class AgentOutput:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task: asyncio.Task[GenerateResult] | None = None
        self._iterated = False
        self._abort: asyncio.Event | None = None

    # -- producer side (the run loop) ---------------------------------------------------------

    def push(self, chunk: dict[str, Any]) -> None:
        self._queue.put_nowait(chunk)

    def close(self) -> None:
        self._queue.put_nowait(_END)

    def attach(self, task: asyncio.Task[GenerateResult], abort: asyncio.Event) -> None:
        self._task = task
        self._abort = abort

    # -- consumer side ------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        if self._iterated:
            raise RuntimeError("an agent stream can be iterated once")
        self._iterated = True
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[dict[str, Any]]:
        queue = self._queue
        while True:
            # What is queued already is taken without an await (a coalesced read pushes several).
            chunk = queue.get_nowait() if queue.qsize() else await queue.get()
            if chunk is _END:
                return
            yield chunk

    @property
    def full_stream(self) -> AsyncIterator[dict[str, Any]]:
        return self.__aiter__()

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The text of the answer, delta by delta."""

        async def texts() -> AsyncIterator[str]:
            async for chunk in self:
                if chunk["type"] == TEXT_DELTA:
                    yield chunk["payload"]["text"]

        return texts()

    async def consume_stream(self) -> None:
        """Read the stream to its end (the run's errors surface from ``result()``)."""
        if not self._iterated:
            async for _ in self:
                pass

    async def result(self) -> GenerateResult:
        """What ``generate()`` returns; raises if the run failed."""
        assert self._task is not None
        return await asyncio.shield(self._task)

    @property
    def text(self) -> Any:
        return _ResultField(self, "text")

    def abort(self) -> bool:
        """Stop this run (in this process). True if it was still running."""
        if self._task is None or self._task.done() or self._abort is None:
            return False
        self._abort.set()
        return True

    def done(self) -> bool:
        return self._task is not None and self._task.done()

    @property
    def task(self) -> asyncio.Task[GenerateResult] | None:
        """The run's task (None until the run is launched); awaiting ``result()`` is the way
        to its outcome, this is for waiting on many runs at once."""
        return self._task


class _ResultField:
    """``await output.text`` and friends, as in the reference."""

    def __init__(self, output: AgentOutput, name: str) -> None:
        self._output, self._name = output, name

    def __await__(self) -> Any:
        async def get() -> Any:
            await self._output.consume_stream()
            return getattr(await self._output.result(), self._name)

        return get().__await__()
