"""The approvals queue's connection to the core (a half of the app's door, like
``inbox_feed.py``): the tool calls of every thread that wait for a person, kept current, and
the answers the queue gives.

Guarantees:

- **Live across terminals**: it holds a watch on the store's one shared poller
  (``Memory.changes``: no loop of its own) and re-reads the pending calls (one indexed read)
  when any process committed, at most once per ``POLL_S``. A call parked or answered anywhere
  is shown or gone within the poller's interval plus ``POLL_S`` plus one read.
- ``Changed`` is posted at most once until ``acknowledge()``; ``Arrived`` for each call that
  starts waiting after the first read (a toast), not for those there at start.
- **Answers as any terminal's**: approve (an edited input checked against the tool's schema)
  and deny go through ``tui_agent.agent.approvals.answer``: the run goes on in its owner, or
  here if its owner died. A refused answer (answered elsewhere meanwhile, a bad input) comes
  back as one line and changes nothing.
- Cancelled, it ends: a cancellation is never taken for a failed read (re-raised whenever the
  task is being cancelled).
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.message import Message
from textual.message_pump import MessagePump

from tui_agent.agent.approvals import answer
from tui_agent.errors import TuiAgentError
from tui_agent.store.records import ApprovalRecord

POLL_S = 0.1  # the least time between two reads of the pending calls
RETRY_S = 2.0  # after a failed read


class ApprovalFeed:
    """The pending calls of one store, kept current. ``run()`` once (in a worker)."""

    class Changed(Message):
        def __init__(self, feed: ApprovalFeed) -> None:
            super().__init__()
            self.feed = feed

    class Arrived(Message):
        """Calls that started waiting since the last read."""

        def __init__(self, records: list[ApprovalRecord]) -> None:
            super().__init__()
            self.records = records

    class Failed(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, agent: Any, target: MessagePump, *, poll_s: float = POLL_S) -> None:
        self.agent = agent
        self.memory = agent.memory
        self.records: list[ApprovalRecord] = []
        self.loaded = False
        self.version = 0
        self.poll_s = poll_s
        self._target = target
        self._posted = False

    async def run(self) -> None:
        """Read the pending calls, then again after each commit, until cancelled."""
        with self.memory.changes.watch() as changes:
            while True:
                changes.event.clear()  # before the read: a commit after it wakes the next
                try:
                    await self.read()
                except Exception as error:  # the store unreadable: say so, try again
                    _unless_cancelling()
                    self._target.post_message(self.Failed(_one_line(error)))
                    await asyncio.sleep(RETRY_S)
                    continue
                await changes.event.wait()
                await asyncio.sleep(self.poll_s)  # a burst of commits: one read
                _unless_cancelling()

    async def read(self) -> bool:
        """Read the pending calls; True (and ``Changed`` posted) if they differ."""
        fresh = await self.memory.list_approvals()
        known = {r.id for r in self.records}
        arrived = [r for r in fresh if r.id not in known] if self.loaded else []
        changed = [r.id for r in fresh] != [r.id for r in self.records] or not self.loaded
        self.records, self.loaded = fresh, True
        if changed:
            self.version += 1
            self._changed()
        if arrived:
            self._target.post_message(self.Arrived(arrived))
        return changed

    async def approve(self, approval_id: str, args: Any = None) -> str | None:
        """Approve (``args``: an edited input); None, or the line saying why not."""
        return await self._answer(approval_id, approved=True, args=args, reason=None)

    async def deny(self, approval_id: str, reason: str) -> str | None:
        """Decline with ``reason`` (the model reads it); None, or the line saying why not."""
        return await self._answer(approval_id, approved=False, args=None, reason=reason)

    async def _answer(
        self, approval_id: str, *, approved: bool, args: Any, reason: str | None
    ) -> str | None:
        try:
            await answer(self.agent, approval_id, approved=approved, args=args, reason=reason)
        except TuiAgentError as error:
            return _one_line(error)
        await self.read()
        return None

    def _changed(self) -> None:
        if not self._posted:
            self._posted = True
            self._target.post_message(self.Changed(self))

    def acknowledge(self) -> None:
        """The queue has taken the changes; the next change posts again."""
        self._posted = False


def _unless_cancelling() -> None:
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _one_line(error: BaseException) -> str:
    text = str(error) if isinstance(error, TuiAgentError) else f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:300]
