"""The role objects both stores share, under the contract's names.

A store is its role objects side by side: ``store.log`` (threads, messages, the event log,
read), ``store.log_writes`` (the same, and runs and leases, written), ``store.runs`` (runs,
leases and waiting signals, read), ``store.lanes`` (state lanes), ``store.inbox`` (the
notification inbox), ``store.approvals`` (tool calls waiting for a person), ``store.search``
(messages found by their words) and ``store.transfer`` (a thread whole, out and in), each
written once (``reads.py``, ``log_writes.py``, ``lanes.py``, ``inbox.py``, ``approvals.py``,
``search.py``, ``transfer.py``) on the store's
own :class:`~tui_agent.store.roles.Database` or ``Writer``. What
differs between the stores (how a write transaction runs, who is told of a commit, the queued
forms of a write) is each store's own class.

:class:`ComposedStore` makes the role objects and opens each role method under its contract
name (a :class:`~tui_agent.store.roles.Door`): ``store.get_thread(...)`` is
``store.log.get_thread(...)``. It holds no state and no behaviour of its own.
"""

from __future__ import annotations

from tui_agent.store.approvals import Approvals
from tui_agent.store.inbox import Inbox
from tui_agent.store.lanes import StateLanes
from tui_agent.store.log_writes import LogWrites, Writer
from tui_agent.store.reads import LogReads, RunReads
from tui_agent.store.roles import Database, Door
from tui_agent.store.search import MessageSearch
from tui_agent.store.transfer import ThreadTransfer


class ComposedStore:
    """The shared role objects on a store's ``database`` (reads, statements) and ``writer``
    (its write transactions), and their doors."""

    def __init__(self, database: Database, writer: Writer) -> None:
        self.log = LogReads(database)
        self.runs = RunReads(database)
        self.log_writes = LogWrites(writer, self.log, self.runs)
        self.lanes = StateLanes(database, writer)
        self.inbox = Inbox(database, writer)
        self.search = MessageSearch(database)
        self.transfer = ThreadTransfer(database)
        self.approvals = Approvals(database, writer)

    # -- the thread log, read --
    get_thread = Door("log", LogReads.get_thread)
    list_threads = Door("log", LogReads.list_threads)
    list_messages = Door("log", LogReads.list_messages)
    read_events = Door("log", LogReads.read_events)
    last_event_seq = Door("log", LogReads.last_event_seq)
    thread_activity = Door("log", LogReads.thread_activity)
    thread_usage = Door("log", LogReads.thread_usage)
    search_messages = Door("search", MessageSearch.search_messages)

    # -- a thread whole, out and in --
    export_thread = Door("transfer", ThreadTransfer.export_thread)
    import_thread = Door("transfer", ThreadTransfer.import_thread)

    # -- the thread log, runs and leases, written --
    ensure_thread = Door("log_writes", LogWrites.ensure_thread)
    update_thread = Door("log_writes", LogWrites.update_thread)
    append = Door("log_writes", LogWrites.append)
    append_events = Door("log_writes", LogWrites.append_events)
    supersede_messages = Door("log_writes", LogWrites.supersede_messages)
    start_run = Door("log_writes", LogWrites.start_run)
    renew_lease = Door("log_writes", LogWrites.renew_lease)
    reap_expired_lease = Door("log_writes", LogWrites.reap_expired_lease)
    finish_run = Door("log_writes", LogWrites.finish_run)
    rescue_stranded = Door("log_writes", LogWrites.rescue_stranded)
    claim_signals = Door("log_writes", LogWrites.claim_signals)
    claim_with_history = Door("log_writes", LogWrites.claim_with_history)
    claim_wake = Door("log_writes", LogWrites.claim_wake)

    # -- runs, leases and waiting signals, read; scores and overrides --
    active_run = Door("runs", RunReads.active_run)
    list_runs = Door("runs", RunReads.list_runs)
    abort_requested = Door("runs", RunReads.abort_requested)
    stranded_threads = Door("runs", RunReads.stranded_threads)
    rescue_outlook = Door("runs", RunReads.rescue_outlook)
    has_pending_signals = Door("runs", RunReads.has_pending_signals)
    waiting_signals = Door("runs", RunReads.waiting_signals)
    set_run_scores = Door("runs", RunReads.set_run_scores)
    get_agent_overrides = Door("runs", RunReads.get_agent_overrides)
    set_agent_overrides = Door("runs", RunReads.set_agent_overrides)

    # -- state lanes --
    list_state_lanes = Door("lanes", StateLanes.list_state_lanes)
    get_state_lane = Door("lanes", StateLanes.get_state_lane)
    state_lane_history = Door("lanes", StateLanes.state_lane_history)
    put_state_lane = Door("lanes", StateLanes.put_state_lane)
    put_state_lane_record = Door("lanes", StateLanes.put_state_lane_record)

    # -- the notification inbox --
    get_notification = Door("inbox", Inbox.get_notification)
    list_notifications = Door("inbox", Inbox.list_notifications)
    search_notifications = Door("inbox", Inbox.search_notifications)
    set_notification_status = Door("inbox", Inbox.set_notification_status)
    notification_changes = Door("inbox", Inbox.notification_changes)
    find_notification_to_merge = Door("inbox", Inbox.find_notification_to_merge)
    save_notification = Door("inbox", Inbox.save_notification)
    claim_due_summaries = Door("inbox", Inbox.claim_due_summaries)
    claimed_notification_ids = Door("inbox", Inbox.claimed_notification_ids)
    claim_due_notifications = Door("inbox", Inbox.claim_due_notifications)
    pending_notification_counts = Door("inbox", Inbox.pending_notification_counts)
    mark_notifications_delivered = Door("inbox", Inbox.mark_notifications_delivered)
    mark_notifications_summarized = Door("inbox", Inbox.mark_notifications_summarized)
    release_notifications = Door("inbox", Inbox.release_notifications)
    record_failed_delivery = Door("inbox", Inbox.record_failed_delivery)

    # -- tool calls waiting for approval --
    park_run = Door("approvals", Approvals.park_run)
    answer_approval = Door("approvals", Approvals.answer_approval)
    take_answers = Door("approvals", Approvals.take_answers)
    resume_parked = Door("approvals", Approvals.resume_parked)
    release_parked = Door("approvals", Approvals.release_parked)
    get_approval = Door("approvals", Approvals.get_approval)
    find_approval = Door("approvals", Approvals.find_approval)
    list_approvals = Door("approvals", Approvals.list_approvals)
    resumable_threads = Door("approvals", Approvals.resumable_threads)
