"""The end of a run: finished, aborted or failed, written with the run's last messages and
events and the lease released in one store transaction, then its last chunk emitted.

A run that would finish while signals arrived is not ended (it goes on to answer them). The
store may hand the lease on to the run of a queued message, which is started here, behind a
finished, aborted or failed run alike (tests/test_run_end.py). A run cancelled as its process
exits leaves what waits for the thread waiting, for a live process to take over
(``ThreadRuntime.rescue_stranded``, tests/test_rescue.py). A failed run whose full end cannot
be written (a full disk) writes the smallest end it can, so the thread is released at once
(tests/test_write_failures.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from tui_agent.agent.output import AgentOutput
from tui_agent.agent.ports import RunHost, RunMemory
from tui_agent.agent.run_log import RunLog
from tui_agent.errors import LeaseLostError
from tui_agent.events import ABORT, ERROR, FINISH, FROM_AGENT
from tui_agent.store.records import EventIn, FinishOutcome, MessageIn

_FINAL_TYPES = {"finished": FINISH, "aborted": ABORT, "failed": ERROR}


class RunEnd:
    """Writes one run's end. ``memory`` and ``log`` are None for a run without memory (its end
    is only its last chunk)."""

    def __init__(
        self,
        run_id: str,
        output: AgentOutput,
        host: RunHost,
        memory: RunMemory | None,
        log: RunLog | None,
    ) -> None:
        self._run_id = run_id
        self._output = output
        self._host = host
        self._memory = memory
        self._log = log

    def _push(self, type_: str, payload: dict[str, Any]) -> None:
        self._output.push(
            {"type": type_, "run_id": self._run_id, "from": FROM_AGENT, "payload": payload}
        )

    async def finished(self, payload: dict[str, Any], *, force: bool) -> bool:
        """Write the run's end (with memory), emit ``finish``, and start the queued run the
        store handed us. False if signals arrived meanwhile and ``force`` was not given."""
        outcome = await self._write("finished", payload["finish_reason"], payload, force=force)
        if outcome is not None and not outcome.finished:
            return False
        self._push(FINISH, payload)
        self._start_next(outcome)
        return True

    async def aborted(self, partial: str) -> None:
        """End aborted, the partial answer kept."""
        messages = [] if not partial else [
            MessageIn("assistant", partial, self._run_id, metadata={"aborted": True})
        ]
        payload = {"finish_reason": "abort", "text": partial}
        outcome = await asyncio.shield(
            self._write("aborted", "abort", payload, force=True, messages=messages)
        )
        self._push(ABORT, payload)
        self._start_next(outcome)  # a message queued behind an aborted run still runs

    async def failed(self, error: BaseException, partial: str, *, answer_owed: bool) -> None:
        """End failed with ``error``; what was already said stays said (the partial answer is
        stored, marked failed)."""
        # Cancelled (its process is exiting): what waits for the thread is left waiting, for
        # a live process to take over (Runtime.rescue_stranded), not stored as answered.
        cancelled = isinstance(error, asyncio.CancelledError)
        message = f"{type(error).__name__}: {error or 'the run was cancelled'}"
        payload = {"error": message, "finish_reason": "error"}
        self._push(ERROR, payload)
        if isinstance(error, LeaseLostError):
            return  # the thread is another run's now: this run's end stays "interrupted"
        said = [] if not partial else [
            MessageIn("assistant", partial, self._run_id, metadata={"failed": True})
        ]
        try:
            outcome = await asyncio.shield(
                self._write(
                    "failed", "error", payload, force=True, error=message, messages=said,
                    keep_pending=cancelled, resume=cancelled and answer_owed,
                )
            )
        except Exception:
            # The store refused the full end (a disk too full for the partial text and the log
            # still pending): end it with nothing else, so the thread is released at once.
            outcome = await self._write_bare(message, payload, keep_pending=cancelled)
        self._start_next(outcome)  # and behind a failed one

    def _start_next(self, outcome: FinishOutcome | None) -> None:
        """The store handed this run's lease to the run of a queued message: start it here."""
        if outcome is not None and outcome.next_run_id and self._log is not None:
            log = self._log
            self._host.start_queued_run(log.thread_id, log.resource_id, outcome.next_run_id)

    async def _write(
        self,
        status: str,
        finish_reason: str,
        payload: dict[str, Any],
        *,
        force: bool,
        error: str | None = None,
        messages: Sequence[MessageIn] = (),
        keep_pending: bool = False,
        resume: bool = False,
    ) -> FinishOutcome | None:
        if self._memory is None or self._log is None:
            return None
        log = self._log
        await log.settle()
        pending = log.take()
        events = [*pending, EventIn(_FINAL_TYPES[status], payload, self._run_id)]
        outcome = await self._memory.store.finish_run(
            log.thread_id,
            log.resource_id,
            self._run_id,
            owner=self._host.owner,
            status=status,
            finish_reason=finish_reason,
            error=error,
            messages=messages,
            events=events,
            force=force,
            keep_pending=keep_pending,
            resume=resume,
        )
        if not outcome.finished:
            log.put_back(pending)  # the run goes on: nothing was written, keep its events
        return outcome

    async def _write_bare(
        self, message: str, payload: dict[str, Any], *, keep_pending: bool
    ) -> FinishOutcome | None:
        """The smallest end a failed run can write: its status and error event, the lease
        released. If even that fails, the run's own error is what matters: its lease expires
        after the TTL and another process takes the thread over."""
        if self._memory is None or self._log is None:
            return None
        log = self._log
        with contextlib.suppress(Exception):
            return await asyncio.shield(self._memory.store.finish_run(
                log.thread_id,
                log.resource_id,
                self._run_id,
                owner=self._host.owner,
                status="failed",
                finish_reason="error",
                error=message,
                events=[EventIn(ERROR, payload, self._run_id)],
                force=True,
                keep_pending=keep_pending,
            ))
        return None
