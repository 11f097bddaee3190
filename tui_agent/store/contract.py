"""The store contract: every query the core makes, as the roles a reader thinks in.

``Memory``, the run loop, signal routing, subscriptions, state lanes and the notification inbox
talk to a store only through these methods, so any store that implements them (SQLite and
PostgreSQL today) runs the whole core. Each role is a small ``typing.Protocol``:

- :class:`StoreHandle`: the store itself, and how a reader learns of commits;
- :class:`ThreadLog`: threads, their messages (and their full-text search) and each thread's
  ordered event log;
- :class:`RunsAndLeases`: runs, the lease one live run holds, stranded signals' rescue, and
  what is kept of a run (scores) and of an agent (the editor's overrides);
- :class:`SignalRouting`: where a signal goes, and a run taking its pending signals;
- :class:`StateLaneStore`: state lanes and their history;
- :class:`InboxStore`: the notification inbox (its search included).

:class:`Store` is all of them: what ``Memory(store=...)`` takes. Code that needs one role can
ask for that Protocol alone. Nothing here names an engine: values are plain Python
(``str``, ``int``, ``float`` epoch seconds, dicts and lists that JSON can hold) and the records
of ``tui_agent.store.records``.

Guarantees every store gives, unless a method says otherwise:

- **Atomic writes.** A write method is one transaction: all of it is committed or none of it,
  and a decision it takes (who holds a thread's lease, where a signal goes, which records a
  dispatcher claims) holds across every process and machine sharing the store.
- **Durable on return.** When a write method returns, its effect is committed.
- **Ordered log.** A thread's events get increasing ``seq`` numbers in commit order; messages
  are kept in the order appended.
- **Reads see commits.** A read started after a write returned sees that write.
- **Fenced run writes.** Every write a run makes (``append``/``append_soon`` with ``fence``,
  ``claim_signals``, ``finish_run``) first checks, *in the same transaction*, that the run
  still holds its thread's lease (the lease row names that run id; the run id is the fencing
  token, minted once per grant). If not (the lease was reaped as expired, or handed to another
  run), the write raises ``LeaseLostError`` and stores nothing: a stalled run that wakes
  (SIGSTOP, a laptop asleep, a blocked event loop) never writes after its successor, never
  claims its successor's signals, and its status stays ``interrupted``.

``tests/store_contract.py`` checks these for every store factory in
``tests/test_store_contract.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from tui_agent.store.records import (
    ActiveRun,
    ApprovalRecord,
    EventIn,
    FinishOutcome,
    MessageHit,
    MessageIn,
    MessageRecord,
    NotificationRecord,
    RouteResult,
    RunRecord,
    SignalIn,
    StateLane,
    StateLaneVersion,
    ThreadArchive,
    ThreadRecord,
    WakeStart,
)

NotificationCursor = tuple[float, int]  # opaque to callers: pass back what the store returned


@runtime_checkable
class StoreHandle(Protocol):
    """The store itself: where it is, closing it, and learning of commits."""

    @property
    def location(self) -> str:
        """Where the store lives, for people to read (a path or a URL without its password)."""
        ...

    async def close(self) -> None:
        """Release connections. Idempotent; the store reopens on its next use."""
        ...

    # -- change notification --------------------------------------------------------------------

    def add_listener(self, thread_id: str, event: asyncio.Event | None = None) -> asyncio.Event:
        """An event (``event``, or a new one) set whenever this store object appends to
        ``thread_id``'s log; the listener clears it. Other processes' writes are learnt from
        :meth:`data_version`."""
        ...

    def remove_listener(self, thread_id: str, event: asyncio.Event) -> None:
        """Forget a listener (unknown ones are ignored)."""
        ...

    async def data_version(self) -> int:
        """A number that changes when another connection (process) commits; cheap: it reads
        no table. Together with :attr:`local_commits` a reader learns of every commit."""
        ...

    @property
    def local_commits(self) -> int:
        """How many write transactions this store object committed (monotonic)."""
        ...



@runtime_checkable
class ThreadLog(Protocol):
    """Threads, their messages and each thread's ordered event log."""

    async def ensure_thread(
        self, thread_id: str, resource_id: str, *, title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ThreadRecord:
        """Create the thread, or update the title/metadata given (atomic). A thread belongs to
        one resource: asking for it under another raises ``StoreError``."""
        ...

    async def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        unset: Iterable[str] = (),
    ) -> ThreadRecord:
        """Set the title given and ``updated_at``; merge ``metadata`` into the thread's (its
        keys replace theirs, the others stay: the reference's updateThread), then drop the
        keys ``unset``, in one transaction; ``StoreError`` for an unknown thread."""
        ...

    async def get_thread(self, thread_id: str) -> ThreadRecord | None: ...

    async def list_threads(self, resource_id: str | None = None) -> list[ThreadRecord]:
        """Every thread (of ``resource_id``), most recently updated first."""
        ...


    async def append(
        self, thread_id: str, resource_id: str, *, messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (),
        fence: str | None = None,
    ) -> None:
        """Append messages and events in one transaction, in the order given; wakes this
        store's listeners of the thread. ``fence`` (a run id): refused with
        ``LeaseLostError``, nothing stored, unless that run holds the thread's lease."""
        ...

    async def append_events(self, thread_id: str, events: Iterable[EventIn]) -> None:
        """:meth:`append` with events only."""
        ...

    async def supersede_messages(
        self, thread_id: str, message_ids: Sequence[str], *, by: str
    ) -> list[str]:
        """In one transaction, mark the thread's messages ``message_ids`` superseded
        (``metadata["superseded"] = {"by": by, "at": epoch seconds}``; a retried answer, an
        edited message: kept in the history, left out of what a model is given) and append a
        ``data-superseded`` event ``{"message_ids", "by"}`` (run id None) to its log; wakes the
        thread's listeners. Unknown ids, other threads' messages and ones marked before are
        left alone; nothing is written when none is left. Returns the ids marked."""
        ...

    def append_soon(
        self, thread_id: str, resource_id: str, *, messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (),
        fence: str | None = None,
    ) -> asyncio.Future[None]:
        """:meth:`append`, queued at once without waiting: appends made close together (the
        delta flushes of several runs) may share one transaction (group commit). The future
        resolves once the append is committed; appends keep the order they were queued in.
        ``fence`` as for :meth:`append` (a refused append fails only its own future)."""
        ...

    async def list_messages(
        self, thread_id: str, *, limit: int = 50, before: str | None = None
    ) -> list[MessageRecord]:
        """The ``limit`` messages just older than message ``before`` (or the newest), oldest
        first."""
        ...

    async def search_messages(
        self, query: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[MessageHit]:
        """User and assistant messages (of ``thread_id``, or of every thread) whose text holds
        every term of ``query`` (a word matches the words it begins, case folded; a
        ``"quoted phrase"`` its words in a row), newest first, at most ``limit``. A message is
        found from the commit that stored it (its index is written in the same transaction)."""
        ...

    async def export_thread(self, thread_id: str) -> ThreadArchive | None:
        """The thread whole as stored: its messages in order (a signal's history message as
        its reference), signals, runs, state lanes with every version, notifications; no row
        numbers of the store's own. None: no such thread."""
        ...

    async def import_thread(self, archive: ThreadArchive, *, replace: bool = False) -> None:
        """Write an exported thread in one transaction, so that :meth:`export_thread` gives
        ``archive`` back. A thread of its id in the store is refused (``StoreError``, nothing
        written) unless ``replace``: then its every row goes first, in the same transaction
        (never while a run is live on it: ``StoreError``)."""
        ...

    async def read_events(
        self, thread_id: str, after_seq: int, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Stream chunks ``{type, run_id, from, payload, seq}`` with ``seq > after_seq``, in
        ``seq`` order. Reading on from the last ``seq`` returned misses nothing committed."""
        ...

    async def last_event_seq(self, thread_id: str) -> int:
        """The thread's highest ``seq`` (0 for an empty log)."""
        ...

    async def thread_activity(self) -> dict[str, tuple[int, bool]]:
        """``{thread_id: (message count, a live lease)}`` for every thread with either."""
        ...

    async def thread_usage(self, thread_id: str) -> dict[str, int]:
        """``{"input_tokens", "output_tokens"}`` summed over the thread's ended runs (their
        ``finish``/``abort``/``error`` events' ``usage``)."""
        ...



@runtime_checkable
class RunsAndLeases(Protocol):
    """Runs and the lease a live run holds on its thread (at most one per thread, across every
    process); what is kept of a run and of an agent."""

    async def active_run(self, thread_id: str) -> ActiveRun | None:
        """The thread's live run: a lease that has not expired."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(self, thread_id: str, limit: int = 20) -> list[RunRecord]:
        """The thread's runs, newest first."""
        ...

    async def start_run(
        self, thread_id: str, resource_id: str, run_id: str, *, owner: str, ttl_s: float,
        agent_id: str | None = None, title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Atomically: ensure the thread, reap an expired lease (an ``interrupted`` event),
        and take the lease for ``run_id`` with its ``start`` event. False if another live run
        holds it; at most one live run per thread across every process."""
        ...

    async def renew_lease(
        self, thread_id: str, run_id: str, owner: str, ttl_s: float
    ) -> tuple[bool, bool]:
        """Extend our lease by ``ttl_s`` from now. Returns (still ours, abort requested)."""
        ...

    async def abort_requested(self, thread_id: str, run_id: str) -> bool: ...

    def request_abort_sync(self, thread_id: str) -> str | None:
        """Flag the thread's live run for abort, from plain (non-async) code, committed on
        return; its owner, in whichever process, stops. Returns the run id, or None (no live
        run). It may be called with the event loop running: a store whose driver is async only
        runs it on a connection and thread of its own, never on the loop."""
        ...

    async def reap_expired_lease(self, thread_id: str) -> bool:
        """End a run whose owner stopped renewing (``interrupted``), atomically; True if one
        was. A lease renewed meanwhile is left alone."""
        ...

    async def finish_run(
        self, thread_id: str, resource_id: str, run_id: str, *, owner: str, status: str,
        finish_reason: str | None, error: str | None = None,
        messages: Sequence[MessageIn] = (), events: Sequence[EventIn] = (), force: bool = False,
        keep_pending: bool = False, resume: bool = False,
    ) -> FinishOutcome:
        """End the run and release the lease atomically with its last messages and events,
        unless signals are pending for it (then nothing is written). ``force`` ends it anyway,
        keeping the pending signals as persisted history before the last event. A queued
        signal then starts the next run under the same lease (``next_run_id``). Fenced:
        ``LeaseLostError`` (nothing written) unless ``run_id`` holds the thread's lease.
        ``keep_pending`` (with ``force``; a run cancelled as its process exits): the pending
        signals stay pending and queued ones queued, unanswered, the lease released, for
        another process's :meth:`rescue_stranded` to hand to a new run. ``resume`` (with
        ``keep_pending``): the run had taken signals it never answered; a marker signal of type
        ``"__resume__"`` is left pending for it, so the thread is rescued and the new run answers
        from history. :meth:`claim_signals` takes a marker without storing or returning it, and
        :meth:`waiting_signals` does not list it."""
        ...

    async def stranded_threads(self) -> list[str]:
        """Threads with signals waiting (``pending`` or ``queued``) and no live lease: their
        run's owner died or exited. A cheap read (every process with an agent polls it)."""
        ...

    async def rescue_outlook(self) -> tuple[bool, float | None]:
        """(signals wait with no live lease now, seconds until the first live lease that
        signals wait behind expires — None if none): when the event-driven rescuer must look
        again (``tui_agent.agent.rescuer``). One cheap read."""
        ...

    async def rescue_stranded(
        self, thread_id: str, *, owner: str, ttl_s: float, agent_id: str | None = None
    ) -> tuple[str, str] | None:
        """In one transaction, if the thread's signals are stranded (no live lease; an expired
        one is reaped as ``interrupted``), take the lease for ``owner``: a new run that the
        pending signals are pending for, or else the first queued signal's own run. Returns
        (run id, resource id) for the caller to start, or None (nothing stranded, a live run
        holds the thread, or its last run was another agent's). Of concurrent rescuers exactly
        one wins."""
        ...

    async def set_run_scores(self, run_id: str, scores: dict[str, Any]) -> None: ...

    async def get_agent_overrides(self, agent_id: str) -> dict[str, Any] | None:
        """The editor's overrides stored for an agent id (None: none)."""
        ...

    async def set_agent_overrides(self, agent_id: str, overrides: dict[str, Any] | None) -> None:
        """Store (replace) an agent's editor overrides; None removes them."""
        ...



@runtime_checkable
class SignalRouting(Protocol):
    """Where a signal goes (into a live run, waking a new one, kept or dropped), and a run
    taking the signals pending for it."""

    async def route_signal(
        self, thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str,
        if_idle: str, queue: bool = False, owner: str, ttl_s: float,
        agent_id: str | None = None, echo_when_idle: SignalIn | None = None,
        claim_on_wake: int | None = None,
    ) -> RouteResult:
        """Decide and store, in one transaction, what happens to a signal: on a live run
        ``deliver`` (pending), ``persist`` or ``discard`` (``queue``: queued for its own run);
        on an idle thread ``wake`` (the lease taken, a new run, the signal pending for it),
        ``hold`` (the signal pending with no run and no lease taken: a process that hosts the
        thread, or the next to open it, answers it as the rescuer answers stranded signals),
        ``persist`` (stored and echoed, no run, no model call) or ``discard``. Of concurrent
        wakes on one idle thread exactly one wakes; the others deliver into its run.

        The signal's text is stored once: its history message and echo refer to its row, and
        :meth:`list_messages`, :meth:`read_events` and :meth:`claim_signals` give them back
        whole (a ``derived_message`` is rendered from the data when read).

        ``claim_on_wake`` (a woken run's ``last_messages``): a wake also claims its run's
        start in the same transaction, as :meth:`claim_wake` would next, and the result
        carries it (``RouteResult.started``): a send to an idle thread is one round trip
        before the model call. Signals routed in the same group behind the wake are taken
        too; later ones wait, pending, for the run's next claim."""
        ...

    def route_signal_soon(
        self, thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str,
        if_idle: str, queue: bool = False, owner: str, ttl_s: float,
        agent_id: str | None = None, echo_when_idle: SignalIn | None = None,
        claim_on_wake: int | None = None,
    ) -> asyncio.Future[RouteResult]:
        """:meth:`route_signal`, queued at once without waiting (a burst of sends shares one
        transaction); the future resolves with the decision once it is committed, and
        decisions are taken in the order the signals were queued."""
        ...

    def route_signal_then(
        self, then: Callable[[RouteResult | None, BaseException | None], None],
        thread_id: str, resource_id: str, signal: SignalIn, *, if_active: str, if_idle: str,
        queue: bool = False, owner: str, ttl_s: float, agent_id: str | None = None,
        echo_when_idle: SignalIn | None = None, claim_on_wake: int | None = None,
    ) -> None:
        """:meth:`route_signal_soon` with no future: ``then(result, None)`` is called once the
        decision is committed, or ``then(None, error)`` if it failed (a cancelled write: a
        ``CancelledError``). ``then`` runs in the event loop and must not block; a store may
        call it for a whole group of signals in one pass (what a burst of sends uses)."""
        ...

    async def claim_signals(
        self, thread_id: str, resource_id: str, run_id: str, *,
        messages_before: Sequence[MessageIn] = (), events_before: Sequence[EventIn] = (),
    ) -> list[dict[str, Any]]:
        """Atomically append the run's output so far, then take every pending signal of the
        thread in arrival order (each stored as a user message and an echo event). Returns
        ``[{"id", "type", "message", "data"}]``. Fenced: ``LeaseLostError`` (nothing taken,
        nothing written) unless ``run_id`` holds the thread's lease."""
        ...

    async def claim_with_history(
        self, thread_id: str, resource_id: str, run_id: str, *, last_messages: int,
    ) -> tuple[list[MessageRecord], list[dict[str, Any]]]:
        """A run's start in one transaction (the fewest round trips from a wake to the model
        call): the thread's last ``last_messages`` messages, oldest first (as
        :meth:`list_messages`), then every pending signal taken (as :meth:`claim_signals`).
        Fenced."""
        ...

    async def claim_wake(
        self, thread_id: str, resource_id: str, run_id: str, *, last_messages: int,
        agent_id: str | None = None,
    ) -> WakeStart:
        """A woken run's only round trip before its model call: :meth:`claim_with_history`,
        and in the same transaction the thread's chosen model (its metadata's ``model``) and
        the editor overrides stored for ``agent_id`` (what its plan reads). Fenced."""
        ...

    async def has_pending_signals(self, thread_id: str) -> bool: ...

    async def waiting_signals(self, thread_id: str) -> list[dict[str, Any]]:
        """Signals not yet taken (``pending`` and ``queued``), oldest first:
        ``{"id", "type", "status", "run_id", "data", "created_at"}``."""
        ...



@runtime_checkable
class StateLaneStore(Protocol):
    """State lanes: a thread's named values, versioned, with their history."""

    async def list_state_lanes(self, thread_id: str) -> list[StateLane]:
        """The thread's lanes, by lane id."""
        ...

    async def get_state_lane(self, thread_id: str, lane_id: str) -> StateLane | None: ...

    async def state_lane_history(
        self, thread_id: str, lane_id: str, limit: int = 50
    ) -> list[StateLaneVersion]:
        """The lane's versions, newest first."""
        ...

    async def put_state_lane(
        self, thread_id: str, lane_id: str, *, mode: str, cache_key: str,
        new_value: Callable[[Any], Any], delta: Any, contents: str,
        resource_id: str | None = None,
    ) -> int | None:
        """In one transaction: if the lane's current ``mode`` and ``cache_key`` are these,
        change nothing and return None; else store version n+1 (1 for a new lane) with value
        ``new_value(current value or None)`` and add it to the history. Concurrent puts get
        distinct, consecutive versions. With ``resource_id``, the thread must exist and belong
        to it (else ``SignalError``, nothing written)."""
        ...

    async def put_state_lane_record(
        self, thread_id: str, lane_id: str, *, mode: str, cache_key: str,
        new_value: Callable[[Any], Any], delta: Any, contents: str,
        resource_id: str | None = None,
    ) -> StateLane | None:
        """:meth:`put_state_lane`, returning the lane as written (None: unchanged), so a
        sender needs no read after it."""
        ...



@runtime_checkable
class InboxStore(Protocol):
    """The notification inbox: records, their claims by dispatchers, and search."""

    async def get_notification(self, notification_id: str) -> NotificationRecord | None: ...

    async def list_notifications(
        self, *, thread_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        """Newest change (``updated_at``) first; ties: the later created first."""
        ...

    async def search_notifications(
        self, query: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        """Records whose summary, kind or source contains ``query`` literally (``%`` and ``_``
        are plain characters), ASCII case ignored; ordered as :meth:`list_notifications`."""
        ...

    async def set_notification_status(
        self, notification_id: str, status: str, now: float
    ) -> bool:
        """Set ``status`` and its ``<status>_at`` and ``updated_at`` to ``now``, clearing the
        schedule (``deliver_at``, ``summary_at``). False for an unknown id."""
        ...

    async def notification_changes(
        self, after: NotificationCursor | None, limit: int
    ) -> tuple[list[NotificationRecord], NotificationCursor]:
        """Records whose last change (``updated_at`` or ``summarized_at``) is after the cursor
        (None: all), oldest change first, at most ``limit``, and the cursor to pass next. Paging
        on reads every change committed before the read, once, however many share a time."""
        ...

    async def find_notification_to_merge(
        self, thread_id: str, *, source: str, kind: str, dedupe_key: str | None,
        coalesce_key: str | None, now: float,
    ) -> NotificationRecord | None:
        """The newest pending, unclaimed (or claim expired at ``now``) record of the thread with
        this source and kind and the same dedupe key or coalesce key."""
        ...

    async def save_notification(
        self, record: NotificationRecord, *, merge: bool, now: float,
        claim_token: str | None, claim_expires_at: float | None,
    ) -> NotificationRecord:
        """Store ``record`` in one transaction: with ``merge``, update the stored record of its
        id in place (``coalesced_count`` + 1) if it is still pending and unclaimed, else insert
        it as a new record (a new id, ``coalesced_count`` 1). ``created_at``/``updated_at`` are
        ``now``; the claim is set as given. Returns the record as it was stored."""
        ...

    async def claim_due_summaries(
        self, thread_id: str, token: str, *, now: float, expires_at: float
    ) -> None:
        """Claim the thread's pending, unclaimed records whose digest is due at ``now``."""
        ...

    async def claimed_notification_ids(self, thread_id: str, token: str) -> list[str]: ...

    async def claim_due_notifications(
        self, token: str, *, due_at: float, now: float, expires_at: float, limit: int
    ) -> list[NotificationRecord]:
        """Claim, in one transaction, up to ``limit`` pending records (oldest first) not
        claimed (or whose claim expired at ``now``) whose digest is due at ``due_at``, or whose
        delivery is due at ``due_at`` and is not held for an idle thread (a record summarised or
        awaiting a digest waits until no live lease is on its thread). Each record is claimed
        by one caller only, however many dispatchers run. With nothing due, nothing is written
        (an idle dispatcher pass commits nothing, so it wakes no change poller)."""
        ...

    async def pending_notification_counts(self, thread_id: str) -> list[tuple[str, str, int]]:
        """``(source, priority, count)`` of the thread's pending records."""
        ...

    async def mark_notifications_delivered(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        """Where ``token``'s claim stands: delivered (if still pending), attempts + 1, the
        schedule cleared, the claim released."""
        ...

    async def mark_notifications_summarized(
        self, ids: Sequence[str], token: str, now: float
    ) -> None:
        """Where ``token``'s claim stands: ``summarized_at`` set, ``summary_at`` cleared, the
        claim released."""
        ...

    async def release_notifications(self, ids: Sequence[str], token: str) -> None:
        """Release ``token``'s claim on the records (others' claims are left alone)."""
        ...

    async def record_failed_delivery(
        self, ids: Sequence[str], token: str, *, error: str, now: float, digest: bool,
        max_attempts: int, retry_at: Callable[[int], float],
    ) -> None:
        """In one transaction, for each record ``token`` still claims: attempts + 1; at
        ``max_attempts`` it ends ``failed``, else its digest (``digest``) or delivery is due
        again at ``retry_at(attempts)``; the claim is released."""
        ...


@runtime_checkable
class ApprovalStore(Protocol):
    """Tool calls a run waits on for a person's answer (``store/approvals.py``). While a run
    waits, its thread stays its own even past its lease's expiry (its owner may be dead):
    signals wait pending for it, a direct run is refused and no rescue starts a new run."""

    async def park_run(
        self, thread_id: str, resource_id: str, run_id: str, *, agent_id: str | None,
        approvals: Sequence[Any], messages: Sequence[MessageIn] = (),
        events: Sequence[EventIn] = (),
    ) -> None:
        """Store the calls (``ApprovalIn``) run ``run_id`` waits on, after its step's messages
        and log, atomically. Fenced."""
        ...

    async def answer_approval(
        self, approval_id: str, *, approved: bool, args: Any = None, reason: str | None = None,
        owner: str, ttl_s: float, agent_id: str | None = None, take_over_dead: bool = True,
    ) -> Any:
        """Answer one waiting call (an ``Answered``); ``ApprovalError`` for an unknown or
        answered id, nothing changed. The last answer of a run whose owner is dead takes it
        over for ``owner`` (a new run, ``Answered.takeover``) when the run is ``agent_id``'s."""
        ...

    async def take_answers(self, thread_id: str, run_id: str) -> list[ApprovalRecord] | None:
        """The live run takes its answers (None while a call is pending). Fenced."""
        ...

    async def resume_parked(
        self, thread_id: str, *, owner: str, ttl_s: float, agent_id: str | None = None
    ) -> tuple[str, str, list[ApprovalRecord]] | None:
        """Take over an answered parked run whose owner died: (new run, resource, answers)."""
        ...

    async def release_parked(self, thread_id: str, run_id: str) -> bool:
        """Give up parked run ``run_id``'s lease as expired (its process closes): its calls
        stay pending and the next answer takes it over. False if it no longer holds it."""
        ...

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None: ...

    async def find_approval(self, run_id: str, tool_call_id: str) -> ApprovalRecord | None: ...

    async def list_approvals(
        self, *, status: str | None = "pending", thread_id: str | None = None,
        run_id: str | None = None, limit: int = 500,
    ) -> list[ApprovalRecord]:
        """Oldest first; by default every thread's pending calls."""
        ...

    async def resumable_threads(self) -> list[str]:
        """Threads whose parked run is answered and whose owner died."""
        ...


@runtime_checkable
class Store(
    StoreHandle, ThreadLog, RunsAndLeases, SignalRouting, StateLaneStore, InboxStore,
    ApprovalStore, Protocol,
):
    """What a store does: every role above. Every method is ``async`` except the listener
    pair, :meth:`request_abort_sync`, ``append_soon``, the two ``route_signal_*`` queueing
    forms and the two properties."""
