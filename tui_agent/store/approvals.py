"""Tool calls that wait for a person (issue 24), on either store: the ``ApprovalStore`` role
(``contract.py``), written once.

A run that reaches a call needing approval *parks*: in one fenced transaction it stores what
its step produced, its log so far and one ``tool_approvals`` row per waiting call (status
``pending``). The thread stays the run's while any of its rows is untaken, even past its
lease's expiry (``writes.held``): signals sent meanwhile wait pending for it, a direct run is
refused, and no rescue starts a new run there. An answer (``approved`` with the input, maybe
edited, or ``declined`` with a reason) is one transaction that refuses an unknown or answered
id. Once every call of the run is answered the run goes on:

- its owner is alive (its lease is live): the owner hears the commit (its change feed, or
  this process's own waiter) and takes the answers (:meth:`Approvals.take_answers`, fenced);
- its owner is dead (its lease ran out while it waited): the last answer takes the run over
  in the same transaction, if the answering agent is the run's: the old run ends
  ``interrupted``, a new run of this owner takes the lease, the answers and the signals that
  waited (:func:`take_over`); else a rescue pass of a process with that agent does
  (:meth:`Approvals.resume_parked`).

Checked on both stores by ``tests/test_approvals.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from tui_agent.errors import ApprovalError
from tui_agent.events import INTERRUPTED
from tui_agent.store.codec import dumps, loads, new_id
from tui_agent.store.dialect import Dialect
from tui_agent.store.records import ApprovalRecord, EventIn, MessageIn
from tui_agent.store.roles import Database, Row, first
from tui_agent.store.rows import at
from tui_agent.store.statements import Statement, Txn, execute, lock, query
from tui_agent.store.writes import append, begin_run, check_lease

if TYPE_CHECKING:
    from tui_agent.store.log_writes import Writer

COLUMNS: Final = (
    "id, thread_id, resource_id, run_id, agent_id, tool_call_id, tool_name, args, options,"
    " status, answer_args, reason, answered_by, taken_by, created_at, answered_at"
)
STATUSES: Final = ("pending", "approved", "declined", "cancelled")


def approval_of(row: Row) -> ApprovalRecord:
    return ApprovalRecord(
        id=row[0],
        thread_id=row[1],
        resource_id=row[2],
        run_id=row[3],
        agent_id=row[4],
        tool_call_id=row[5],
        tool_name=row[6],
        args=loads(row[7]),
        options=loads(row[8]) or {},
        status=row[9],
        answer_args=loads(row[10]) if row[10] is not None else None,
        reason=row[11],
        answered_by=row[12],
        taken_by=row[13],
        created_at=at(row[14]),
        answered_at=None if row[15] is None else at(row[15]),
    )


@dataclass(slots=True)
class ApprovalIn:
    """A call a run parks on: its id in the store is made here (short: people type it)."""

    tool_call_id: str
    tool_name: str
    args: Any
    options: dict[str, Any] = field(default_factory=dict[str, Any])
    id: str = field(default_factory=lambda: new_id()[:12])


@dataclass(slots=True)
class Answered:
    """What an answer did: the record as answered; ``waiting``: the run's calls still
    unanswered; ``live_run``: the run whose live owner goes on now; ``takeover``: the new run
    this caller must start (the owner was dead: it took the run over), with the answers."""

    record: ApprovalRecord
    waiting: int = 0
    live_run: str | None = None
    takeover: str | None = None
    answers: list[ApprovalRecord] = field(default_factory=list[ApprovalRecord])


# -- transactions -----------------------------------------------------------------------------


def park(
    d: Dialect,
    thread_id: str,
    resource_id: str,
    run_id: str,
    agent_id: str | None,
    approvals: Sequence[ApprovalIn],
    messages: Sequence[MessageIn],
    events: Sequence[EventIn],
) -> Txn[None]:
    """Fenced: the step's messages and the run's log so far, then the waiting calls."""
    yield from lock(d, thread_id)
    yield from check_lease(d, thread_id, run_id)
    yield from append(d, thread_id, resource_id, messages, events)
    now = time.time()
    yield Statement(
        d.sql(
            "INSERT INTO tool_approvals(id, thread_id, resource_id, run_id, agent_id, tool_call_id,"
            " tool_name, args, options, status, created_at) VALUES (?,?,?,?,?,?,?,?,?,'pending',?)"
        ),
        [
            (
                a.id,
                thread_id,
                resource_id,
                run_id,
                agent_id,
                a.tool_call_id,
                a.tool_name,
                dumps(a.args),
                dumps(a.options),
                now,
            )
            for a in approvals
        ],
        many=True,
    )


def _row(d: Dialect, approval_id: str) -> Txn[ApprovalRecord | None]:
    found: list[Row] = yield query(
        d, f"SELECT {COLUMNS} FROM tool_approvals WHERE id=?", approval_id
    )
    return approval_of(found[0]) if found else None


def _of_run(d: Dialect, run_id: str) -> Txn[list[ApprovalRecord]]:
    """The run's untaken calls, in the order it parked on them."""
    found: list[Row] = yield query(
        d,
        f"SELECT {COLUMNS} FROM tool_approvals WHERE run_id=? AND taken_by IS NULL ORDER BY seq",
        run_id,
    )
    return [approval_of(row) for row in found]


def answer(
    d: Dialect,
    approval_id: str,
    status: str,
    answer_args: Any,
    reason: str | None,
    owner: str,
    ttl_s: float,
    agent_id: str | None,
    take_over_dead: bool,
) -> Txn[Answered]:
    """Answer one waiting call (``ApprovalError`` for an unknown or answered id: nothing
    changes). The last answer of a run whose owner is dead takes it over when
    ``take_over_dead`` and the run is ``agent_id``'s."""
    before = yield from _row(d, approval_id)
    if before is None:
        raise ApprovalError(f"no tool call waits for approval under id {approval_id!r}")
    yield from lock(d, before.thread_id)
    record = yield from _row(d, approval_id)  # again, under the thread's lock
    assert record is not None
    if record.status != "pending":
        raise ApprovalError(
            f"tool call {approval_id!r} ({record.tool_name}) was {record.status} already"
            f"{'' if record.answered_at is None else f' at {record.answered_at:%H:%M:%S} UTC'}"
        )
    yield execute(
        d,
        "UPDATE tool_approvals SET status=?, answer_args=?, reason=?, answered_by=?,"
        " answered_at=? WHERE id=?",
        status,
        None if answer_args is None else dumps(answer_args),
        reason,
        owner,
        time.time(),
        approval_id,
    )
    record = yield from _row(d, approval_id)
    assert record is not None
    run = yield from _of_run(d, record.run_id)
    waiting = sum(1 for r in run if r.status == "pending")
    if waiting:
        return Answered(record, waiting=waiting)
    lease: list[Row] = yield query(
        d,
        "SELECT run_id, expires_at > {now} FROM leases WHERE thread_id=?",
        *d.now_args(),
        record.thread_id,
    )
    if not lease or lease[0][0] != record.run_id:
        return Answered(record)  # the run is gone (ended meanwhile): nothing goes on
    if lease[0][1]:
        return Answered(record, live_run=record.run_id)
    if not take_over_dead or record.agent_id not in (None, agent_id):
        return Answered(record)  # a rescue pass of a process with the run's agent goes on
    new_run = yield from take_over(
        d, record.thread_id, record.resource_id, record.run_id, owner, ttl_s, agent_id
    )
    return Answered(record, takeover=new_run, answers=run)


def take_over(
    d: Dialect,
    thread_id: str,
    resource_id: str,
    run_id: str,
    owner: str,
    ttl_s: float,
    agent_id: str | None,
) -> Txn[str]:
    """The parked run ``run_id``'s owner died: it ends ``interrupted``, and a new run of
    ``owner`` takes the lease, the run's answers (``taken_by``) and the signals that waited
    for it. Its id."""
    new_run = new_id()
    yield execute(
        d,
        "UPDATE runs SET status='interrupted', finish_reason='interrupted', ended_at=?"
        " WHERE id=? AND status='running'",
        time.time(),
        run_id,
    )
    detail = f"the run's owner died while it waited for approval; run {new_run} goes on"
    yield from append(
        d,
        thread_id,
        "",
        [],
        [EventIn(INTERRUPTED, {"reason": "interrupted", "detail": detail}, run_id)],
    )
    yield from begin_run(d, thread_id, resource_id, new_run, owner, ttl_s, agent_id)
    yield execute(
        d,
        "UPDATE tool_approvals SET taken_by=? WHERE run_id=? AND taken_by IS NULL",
        new_run,
        run_id,
    )
    yield execute(
        d, "UPDATE signals SET run_id=? WHERE thread_id=? AND status='pending'", new_run, thread_id
    )
    return new_run


def take_answers(d: Dialect, thread_id: str, run_id: str) -> Txn[list[ApprovalRecord] | None]:
    """Fenced: the live run takes the answers to every call it waits on; None while one is
    still pending."""
    yield from lock(d, thread_id)
    yield from check_lease(d, thread_id, run_id)
    run = yield from _of_run(d, run_id)
    if not run or any(r.status == "pending" for r in run):
        return None
    yield execute(
        d,
        "UPDATE tool_approvals SET taken_by=? WHERE run_id=? AND taken_by IS NULL",
        run_id,
        run_id,
    )
    return run


def resume_parked(
    d: Dialect, thread_id: str, owner: str, ttl_s: float, agent_id: str | None
) -> Txn[tuple[str, str, list[ApprovalRecord]] | None]:
    """A rescue pass: the thread's parked run is answered but its owner is dead. Take it over
    (:func:`take_over`) if it is ``agent_id``'s: (new run id, resource id, the answers)."""
    yield from lock(d, thread_id)
    lease: list[Row] = yield query(
        d,
        "SELECT run_id, expires_at > {now} FROM leases WHERE thread_id=?",
        *d.now_args(),
        thread_id,
    )
    if not lease or lease[0][1]:
        return None
    run = yield from _of_run(d, str(lease[0][0]))
    if not run or any(r.status == "pending" for r in run):
        return None
    if run[0].agent_id not in (None, agent_id):
        return None
    new_run = yield from take_over(
        d, thread_id, run[0].resource_id, run[0].run_id, owner, ttl_s, agent_id
    )
    return new_run, run[0].resource_id, run


def release_parked(d: Dialect, thread_id: str, run_id: str) -> Txn[bool]:
    """The parked run's process sets it aside (it closes): its lease is given up as if its
    owner had died, so the next answer takes the run over at once. False if the run no longer
    holds the thread."""
    yield from lock(d, thread_id)
    found: list[Row] = yield query(
        d,
        "UPDATE leases SET expires_at={now} - 1 WHERE thread_id=? AND run_id=? RETURNING 1",
        *d.now_args(),
        thread_id,
        run_id,
    )
    return bool(found)


# -- the role ---------------------------------------------------------------------------------


class Approvals:
    """The approval methods of the store contract, on a store's :class:`Database` (reads) and
    ``Writer`` (its write transactions)."""

    def __init__(self, database: Database, writer: Writer) -> None:
        self.database = database
        self.writer = writer

    async def park_run(
        self,
        thread_id: str,
        resource_id: str,
        run_id: str,
        *,
        agent_id: str | None,
        approvals: Sequence[ApprovalIn],
        messages: Sequence[MessageIn] = (),
        events: Sequence[EventIn] = (),
    ) -> None:
        """Store the calls run ``run_id`` waits on, after its step's messages and its log so
        far, in one transaction. Fenced (``LeaseLostError``, nothing stored)."""
        await self.writer.run_write(
            thread_id,
            park,
            thread_id,
            resource_id,
            run_id,
            agent_id,
            list(approvals),
            list(messages),
            list(events),
        )
        self.writer.notify(thread_id)

    async def answer_approval(
        self,
        approval_id: str,
        *,
        approved: bool,
        args: Any = None,
        reason: str | None = None,
        owner: str,
        ttl_s: float,
        agent_id: str | None = None,
        take_over_dead: bool = True,
    ) -> Answered:
        """Approve (with ``args``: the edited input) or decline (``reason``) one waiting call.
        ``ApprovalError`` for an unknown or answered id, and nothing changes."""
        answered = await self.writer.run_write(
            None,
            answer,
            approval_id,
            "approved" if approved else "declined",
            args,
            reason,
            owner,
            ttl_s,
            agent_id,
            take_over_dead,
        )
        self.writer.notify(answered.record.thread_id)
        return answered

    async def take_answers(self, thread_id: str, run_id: str) -> list[ApprovalRecord] | None:
        """The live run takes the answers to the calls it waits on (None: one is pending
        still). Fenced."""
        taken = await self.writer.run_write(thread_id, take_answers, thread_id, run_id)
        if taken:
            self.writer.notify(thread_id)
        return taken

    async def resume_parked(
        self, thread_id: str, *, owner: str, ttl_s: float, agent_id: str | None = None
    ) -> tuple[str, str, list[ApprovalRecord]] | None:
        """Take over the thread's answered parked run whose owner died (see the module)."""
        resumed = await self.writer.run_write(
            thread_id, resume_parked, thread_id, owner, ttl_s, agent_id
        )
        if resumed is not None:
            self.writer.notify(thread_id)
        return resumed

    async def release_parked(self, thread_id: str, run_id: str) -> bool:
        """Give up a parked run's lease as expired (its process sets it aside): its calls
        stay pending, its thread held, and the next answer takes the run over."""
        released = await self.writer.run_write(thread_id, release_parked, thread_id, run_id)
        self.writer.notify(thread_id)
        return released

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        row = await first(
            self.database, f"SELECT {COLUMNS} FROM tool_approvals WHERE id=?", (approval_id,)
        )
        return None if row is None else approval_of(row)

    async def find_approval(self, run_id: str, tool_call_id: str) -> ApprovalRecord | None:
        """The call ``tool_call_id`` of run ``run_id``, if it waited for approval: the one
        waiting now, else the latest (a model may give calls of two steps one id)."""
        row = await first(
            self.database,
            f"SELECT {COLUMNS} FROM tool_approvals WHERE run_id=? AND tool_call_id=?"
            " ORDER BY CASE WHEN status='pending' THEN 0 ELSE 1 END, seq DESC LIMIT 1",
            (run_id, tool_call_id),
        )
        return None if row is None else approval_of(row)

    async def list_approvals(
        self,
        *,
        status: str | None = "pending",
        thread_id: str | None = None,
        run_id: str | None = None,
        limit: int = 500,
    ) -> list[ApprovalRecord]:
        """Calls that waited for approval, oldest first: by default the pending ones of every
        thread."""
        where: list[str] = []
        args: list[object] = []
        for column, value in (("status", status), ("thread_id", thread_id), ("run_id", run_id)):
            if value is not None:
                where.append(f"{column}=?")
                args.append(value)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        found = await self.database.rows(
            f"SELECT {COLUMNS} FROM tool_approvals{clause} ORDER BY seq LIMIT ?",
            (*args, limit),
        )
        return [approval_of(row) for row in found]

    async def resumable_threads(self) -> list[str]:
        """Threads whose parked run is answered and whose owner is dead (its lease ran out):
        a rescue pass takes them over (:meth:`resume_parked`)."""
        found = await self.database.rows(
            "SELECT DISTINCT l.thread_id FROM leases l WHERE l.expires_at <= {now} AND EXISTS"
            " (SELECT 1 FROM tool_approvals a WHERE a.run_id=l.run_id AND a.taken_by IS NULL)"
            " AND NOT EXISTS (SELECT 1 FROM tool_approvals p WHERE p.run_id=l.run_id"
            " AND p.status='pending')",
            self.database.dialect.now_args(),
        )
        return [str(row[0]) for row in found]
