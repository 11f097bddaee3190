"""The notification inbox: records on a thread, merged when they repeat, delivered by policy.

``send_notification_signal`` validates every record (and takes every policy decision) before it
stores anything, then stores or merges each record in one transaction and acts on the decision:
deliver/persist send the full notification now, a summary without a time sends a digest now,
timed summaries and deferred deliveries are left to the dispatcher, discard only marks the record.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from functools import partial
from os import urandom
from typing import Any

from tui_agent.errors import ArgumentTypeError, ConfigError, SignalError, StoreError
from tui_agent.lazy import Later, LazyDict
from tui_agent.notifications import delivery
from tui_agent.notifications.policy import (
    PRIORITY_RANK,
    Decision,
    DeliveryPolicy,
    agent_config,
    decide,
    fixed_entry,
    with_reason,
)
from tui_agent.notifications.ports import NotifyingAgent
from tui_agent.notifications.records import NotificationRecord
from tui_agent.notifications.validation import (
    Plain,
    check_status,
    plain_notification,
    validate_notification,
)
from tui_agent.signals import parse_if_idle, parse_target
from tui_agent.signals.data import PlainText, Signal, Target, checked_signal, normalize_signal
from tui_agent.signals.limits import (
    as_items,
    check_limit,
    input_limits,
)
from tui_agent.signals.stored import branch_records
from tui_agent.store.codec import new_id, time_ordered_id
from tui_agent.store.compound import nothing_after
from tui_agent.store.contract import Store
from tui_agent.store.dialect import Dialect
from tui_agent.store.inbox import (
    NewRow,
    delivered,
    delivered_all_and_read,
    delivered_and_read,
    read_notification,
    save_all_claimed,
    save_on_thread,
    written_record,
)
from tui_agent.store.records import RouteResult, to_datetime
from tui_agent.store.signal_writes import RouteCall
from tui_agent.store.statements import Txn

# -- reading and status changes (mixed into Memory) -----------------------------------------------


class InboxMixin:
    """The inbox API of ``Memory`` (needs ``self.store``)."""

    store: Store

    async def get_notification(self, notification_id: str) -> NotificationRecord | None:
        return await self.store.get_notification(notification_id)

    async def list_notifications(
        self, thread_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        """Newest first (by last change: a merge brings a record back to the top)."""
        check_status(status)
        return await self.store.list_notifications(thread_id=thread_id, status=status,
                                                   limit=check_limit(limit, "limit"))

    async def search_notifications(
        self, query: str, thread_id: str | None = None, limit: int = 50
    ) -> list[NotificationRecord]:
        """Records whose summary, kind or source contains ``query`` (any case), newest first."""
        if not isinstance(query, str):  # pyright: ignore[reportUnnecessaryIsInstance]  (bad input)
            raise ArgumentTypeError(f"query must be a string, got {type(query).__name__}")
        return await self.store.search_notifications(query, thread_id=thread_id,
                                                     limit=check_limit(limit, "limit"))

    async def mark_notification_seen(self, notification_id: str) -> NotificationRecord:
        return await self._set_status(notification_id, "seen")

    async def dismiss_notification(self, notification_id: str) -> NotificationRecord:
        return await self._set_status(notification_id, "dismissed")

    async def archive_notification(self, notification_id: str) -> NotificationRecord:
        return await self._set_status(notification_id, "archived")

    async def _set_status(self, notification_id: str, status: str) -> NotificationRecord:
        if not await self.store.set_notification_status(notification_id, status, time.time()):
            raise StoreError(f"no notification {notification_id!r}")
        record = await self.store.get_notification(notification_id)
        assert record is not None
        return record



# -- storing --------------------------------------------------------------------------------------

async def _merge_target(store: Store, thread_id: str, item: dict[str, Any]) -> Any:
    if item["dedupe_key"] is None and item["coalesce_key"] is None:
        return None
    return await store.find_notification_to_merge(
        thread_id, source=item["source"], kind=item["kind"], dedupe_key=item["dedupe_key"],
        coalesce_key=item["coalesce_key"], now=time.time(),
    )


def _candidate(
    item: dict[str, Any], existing: NotificationRecord | None, thread_id: str, resource_id: str
) -> NotificationRecord:
    """The record as it will be stored: new, or ``existing`` with this notification merged in."""
    now = datetime.now(UTC)
    if existing is None:
        return NotificationRecord(
            id=time_ordered_id(), thread_id=thread_id, resource_id=resource_id, status="pending",
            created_at=now, updated_at=now, **item,
        )
    top = max(existing.priority, item["priority"], key=PRIORITY_RANK.__getitem__)
    return existing.model_copy(update={
        "summary": item["summary"], "priority": top, "payload": item["payload"],
        "coalesced_count": existing.coalesced_count + 1,
        "attributes": {**existing.attributes, **item["attributes"]},
        "metadata": {**existing.metadata, **item["metadata"]},
        "dedupe_key": existing.dedupe_key or item["dedupe_key"],
        "coalesce_key": existing.coalesce_key or item["coalesce_key"],
        "updated_at": now,
    })


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return min((x for x in (a, b) if x is not None), default=None)


async def _store(
    store: Store, rec: NotificationRecord, decision: Decision, merged: bool, token: str | None
) -> NotificationRecord:
    """Insert or merge ``rec`` with the decision's schedule, in one transaction. ``token`` claims
    it for an immediate send. A merge target taken meanwhile makes this a new record."""
    now = time.time()
    discarded = decision.action == "discard"
    scheduled = rec.model_copy(update={
        "status": "discarded" if discarded else "pending",
        "discarded_at": to_datetime(now) if discarded else None,
        "summary_at": _earliest(rec.summary_at if merged else None, decision.summary_at),
        "deliver_at": _earliest(rec.deliver_at if merged else None, decision.deliver_at),
    })
    return await store.save_notification(
        scheduled, merge=merged, now=now, claim_token=token,
        claim_expires_at=now + delivery.CLAIM_TTL_S if token else None,
    )


# -- sending --------------------------------------------------------------------------------------


async def _thread_state(store: Store, thread_id: str) -> str:
    return "active" if await store.active_run(thread_id) is not None else "idle"


async def _resolve_target(
    store: Store, run_id: object, resource_id: object, thread_id: object
) -> tuple[str, str, Target]:
    """The thread's resource and id, and the thread as a send's target."""
    target = parse_target(run_id=run_id, resource_id=resource_id, thread_id=thread_id)
    thread_id = target.thread_id
    if thread_id is not None:
        if target.run_id is not None:
            target = Target(resource_id=target.resource_id, thread_id=thread_id)
        return str(target.resource_id), thread_id, target
    assert target.run_id is not None  # a target names a thread or a run (parse_target)
    run = await store.get_run(target.run_id)
    if run is None:
        raise SignalError(f"no run {target.run_id!r} in memory")
    return run.resource_id, run.thread_id, Target(resource_id=run.resource_id,
                                                  thread_id=run.thread_id)


def _immediate(decision: Decision) -> str | None:
    """What this call sends itself: "deliver", "persist", "digest", or None (the dispatcher)."""
    if decision.action in ("deliver", "persist"):
        return decision.action
    if decision.action == "summarize" and decision.summary_at is None:
        return "digest"
    return None


async def _act(
    agent: NotifyingAgent, store: Store, rec: NotificationRecord, decision: Decision, token: str,
    if_idle: dict[str, Any],
) -> dict[str, Any]:
    """Send what the decision asks for now; a failed send is scheduled for the dispatcher."""
    kind = _immediate(decision)
    if kind is None:
        return {}
    now = time.time()
    try:
        if kind == "digest":
            await _claim_due_summaries(store, rec.thread_id, token, now)
            signal = await delivery.build_digest(store, rec.thread_id)
            assert signal is not None  # rec itself is pending
            out = await delivery.route(
                agent, signal, rec, resource_id=rec.resource_id, thread_id=rec.thread_id,
                behavior=delivery.digest_behavior([rec.priority]), if_idle=if_idle,
            )
        else:
            out = await delivery.route(
                agent, delivery.full_signal(rec), rec, resource_id=rec.resource_id,
                thread_id=rec.thread_id, behavior=kind, if_idle=if_idle,
            )
    except Exception as exc:
        ids = await _claimed_ids(store, rec.thread_id, token)
        await delivery.mark_failed_attempt(store, ids, token, exc, now, digest=kind == "digest")
        return {"delivery_error": f"{type(exc).__name__}: {exc}"}
    ids = await _claimed_ids(store, rec.thread_id, token)
    if kind == "digest":
        await delivery.mark_summarized(store, ids, token, time.time())
    else:
        await delivery.mark_delivered(store, ids, token, time.time())
    return out


async def _claim_due_summaries(store: Store, thread_id: str, token: str, now: float) -> None:
    """An immediate digest covers every pending record of the thread: those whose own digest
    was due are taken with it, so the dispatcher does not send another one for them."""
    await store.claim_due_summaries(thread_id, token, now=now,
                                    expires_at=now + delivery.CLAIM_TTL_S)


async def _claimed_ids(store: Store, thread_id: str, token: str) -> list[str]:
    return await store.claimed_notification_ids(thread_id, token)


async def send_notification_signal(
    agent: NotifyingAgent,
    notification: Any,
    *,
    resource_id: str | None = None,
    thread_id: str | None = None,
    run_id: str | None = None,
    if_idle: Any = None,
) -> dict[str, Any] | list[dict[str, Any]]:
    """Create or merge inbox records and apply the delivery policy (``Agent.
    send_notification_signal``). One notification in, one result out; a list in, a list out.

    A result is ``{"record", "decision"}`` plus, when a signal was sent now, ``"signal"``,
    ``"accepted"`` (the awaited routing result), ``"run_id"`` (wake/deliver) and ``"persisted"``
    (True when it was stored without waking). A send that failed leaves ``"delivery_error"``;
    the dispatcher retries it. Every record is validated and decided before any is stored.
    One notification whose decision reads neither its merge target nor the thread's state is
    stored, routed and marked in one write with its signal (a burst: one group commit;
    tests/test_compound_signals.py).
    """
    memory = getattr(agent, "memory", None)
    if memory is None:
        raise ConfigError(
            f"agent {getattr(agent, 'id', '?')!r} has no memory: the notification inbox lives "
            "on memory threads (Agent(memory=Memory(...)))"
        )
    given = as_items(notification)
    listed = isinstance(given, list)  # a list in, a list out (a tuple is one notification)
    items: list[Any] = list(given) if isinstance(given, list) else [notification]
    if not items:
        raise SignalError("send_notification_signal got an empty list")
    plain = None if listed else plain_notification(notification)
    checked = [plain[0]] if plain is not None else [validate_notification(i) for i in items]
    idle = {} if if_idle is None else _stream_options_only(if_idle)  # None: the common case
    store = memory.store
    # Deferred deliveries and timed digests go out even in a process that only takes in
    # notifications (no subscriber, no run of its own).
    runtime = getattr(agent, "runtime", None)  # an Agent's ThreadRuntime starts it
    if runtime is not None:
        runtime.ensure_dispatcher()
    resource, thread, target = await _resolve_target(store, run_id, resource_id, thread_id)
    policy = agent_config(agent).delivery_policy
    one_write = _one_write(agent, store, policy, checked, listed)
    if one_write is not None:
        return await _send_in_one_write(agent, one_write, policy, checked[0], target, idle,
                                        plain)
    state = await _thread_state(store, thread)
    planned: list[tuple[NotificationRecord, bool, Decision]] = []
    for item in checked:
        existing = await _merge_target(store, thread, item)
        rec = _candidate(item, existing, thread, resource)
        planned.append((rec, existing is not None, await decide(policy, rec, state)))
    existing_thread = await store.get_thread(thread)
    if existing_thread is None:
        await store.ensure_thread(thread, resource)
    elif existing_thread.resource_id != resource:
        raise SignalError(
            f"thread {thread!r} belongs to resource {existing_thread.resource_id!r}, "
            f"not {resource!r}"
        )
    results = [await _store_and_act(agent, store, *plan, idle) for plan in planned]
    return results if listed else results[0]


def _stream_options_only(if_idle: object) -> dict[str, Any]:
    """The reference's notification ``if_idle`` has ``stream_options`` only: whether a
    notification wakes, persists or waits is the delivery policy's decision, so a behavior or
    attributes here are refused rather than dropped."""
    parsed = parse_if_idle(if_idle)
    if parsed.behavior != "wake" or parsed.attributes:
        raise SignalError(
            "send_notification_signal takes if_idle={'stream_options': {...}} only: the delivery "
            "policy (Agent(notifications={'delivery_policy': ...})) decides whether a "
            "notification wakes, persists or waits; put attributes on the notification itself"
        )
    # As given (a dump would open up a Tool object): they stay in this process.
    return {"stream_options": parsed.stream_options} if parsed.stream_options else {}


async def _store_and_act(
    agent: NotifyingAgent, store: Store, rec: NotificationRecord, merged: bool, decision: Decision,
    if_idle: dict[str, Any],
) -> dict[str, Any]:
    # A record sent by this call is claimed as it is stored: the dispatcher leaves it alone.
    token = f"inline:{new_id()}" if _immediate(decision) else None
    rec = await _store(store, rec, decision, merged, token)
    if token is None:
        return {"record": await store.get_notification(rec.id), "decision": decision}
    out = await _act(agent, store, rec, decision, token, if_idle)
    record = await store.get_notification(rec.id)
    return {"record": record, "decision": decision, **out}


# -- one notification, one write ------------------------------------------------------------------
# A notification whose decision does not depend on the record it may merge into nor on the
# thread's state (a policy by source, or a default with no per-priority entries and no decide()),
# sent now (deliver, persist) or left for the dispatcher: stored, routed and marked in one
# compound write (``tui_agent.store.compound``), so a burst of them is one group commit.


def _one_write(
    agent: NotifyingAgent, store: Store, policy: DeliveryPolicy, checked: list[dict[str, Any]],
    listed: bool,
) -> tuple[Any, Any] | None:
    """(the agent's signal routing, the store's compound queue), if this send can be one."""
    routing = getattr(agent, "signal_routing", None)  # an Agent's (agent/router.py)
    compound = getattr(store, "route_compound_then", None)
    if routing is None or compound is None or listed or policy.decide is not None:
        return None
    if checked[0]["source"] not in policy.sources and (
            policy.priorities or policy.default is None):
        return None  # the decision reads the merged record's priority, or the thread's state
    return routing, compound


class _NotificationWrite:
    """A notification as one compound write: its record found/merged and stored (claimed
    for this send when it is sent now), its signal routed, the record marked delivered and
    read back.

    Made with ``plain`` (a notification :func:`plain_notification` took, sent now), the record
    is never built: its row is inserted from the checked fields, its signal routed as a
    ``PlainText`` (or built from the fields), and what the write leaves of it is its row and
    the time it was marked delivered (``WrittenRow``: ``store.inbox.written_record`` makes the
    record a read back would give, when someone asks). A record it merges into takes the
    general way (built, merged, read back)."""

    __slots__ = ("active", "claim_expires_at", "decision", "fresh", "idle", "item", "kind",
                 "merge_keys", "new_row", "now", "options", "plain_signal", "resource_id",
                 "signal", "thread_id", "token")

    def __init__(
        self, item: dict[str, Any], fresh: NotificationRecord | None, decision: Decision,
        thread_id: str, resource_id: str, routing: Any, if_idle: dict[str, Any],
        plain: Plain | None = None,
    ) -> None:
        self.item, self.fresh, self.decision = item, fresh, decision  # fresh: if nothing merges
        self.thread_id, self.resource_id = thread_id, resource_id
        self.kind = _immediate(decision)
        self.now = time.time()
        ids = new_ids() if plain is not None else None  # the record's id and the claim's
        self.token = (f"inline:{new_id()}" if ids is None else ids[1]) if self.kind else None
        self.claim_expires_at = self.now + delivery.CLAIM_TTL_S if self.token else None
        self.merge_keys = (
            None if item["dedupe_key"] is None and item["coalesce_key"] is None
            else (item["source"], item["kind"], item["dedupe_key"], item["coalesce_key"]))
        self.signal: Any = None
        self.active = self.idle = self.options = None
        if self.kind is not None and self.kind != "digest":
            self.active, self.idle = _branches(routing, self.kind, if_idle)
            self.options = routing.options(self.active, self.idle)
        self.new_row: NewRow | None = None
        self.plain_signal = False
        if plain is not None:  # the row _insert_args would make of the scheduled record
            assert ids is not None and self.token is not None and decision.action != "discard"
            _, payload_json, attributes_json, metadata_json, self.plain_signal = plain
            deliver_at, summary_at = decision.deliver_at, decision.summary_at
            self.new_row = (
                ids[0], thread_id, resource_id, item["source"], item["kind"],
                item["priority"], "pending", item["summary"], payload_json, item["dedupe_key"],
                item["coalesce_key"], 1, attributes_json, metadata_json, self.now, self.now, None,
                None if deliver_at is None else deliver_at.timestamp(),
                None if summary_at is None else summary_at.timestamp(), self.token,
                self.claim_expires_at)

    def build(self, existing: NotificationRecord | None) -> NotificationRecord:
        if existing is None:
            assert self.fresh is not None  # made with a new row: build(None) is never asked
            rec = self.fresh
        else:
            rec = _candidate(self.item, existing, self.thread_id, self.resource_id)
        return _scheduled(rec, self.decision, existing is not None, self.now)

    def before(self, d: Dialect) -> Txn[NotificationRecord | NewRow]:
        rec = yield from save_on_thread(d, self.thread_id, self.resource_id, self.merge_keys,
                                        self.build, self.now, self.token, self.claim_expires_at,
                                        self.new_row)
        if self.token is None:  # not sent now: the record as this call left it (a later one
            assert isinstance(rec, NotificationRecord)  # of the batch may merge into it)
            rec = yield from read_notification(d, rec.id)
        return rec

    @staticmethod
    def before_all(
        d: Dialect, calls: list[_NotificationWrite]
    ) -> Txn[list[NotificationRecord | NewRow]]:
        """Every call's ``before`` in order: one batch when each record is claimed by its own
        call (sent now), else one by one."""
        if all(call.token is not None for call in calls):
            return (yield from save_all_claimed(d, calls))
        saved: list[NotificationRecord | NewRow] = []
        for call in calls:
            saved.append((yield from call.before(d)))
        return saved

    def route(self, rec: NotificationRecord | NewRow) -> RouteCall | None:
        if self.options is None or self.active is None or self.idle is None:
            return None  # left for the dispatcher (or a digest, sent after this write)
        if isinstance(rec, NotificationRecord):
            sent = delivery.full_fields(rec)  # checked: the record's, and its attributes here
            if len(sent["attributes"]) + len(sent["metadata"]) > input_limits().max_attributes:
                self.signal = normalize_signal(delivery.full_signal(rec))  # near a limit: as
            else:  # a send checks it
                self.signal = checked_signal(sent)
        else:
            self.signal = self.new_signal(rec[0])
        when_active, when_idle = branch_records(
            self.signal, self.active.attributes, self.idle.attributes)
        return (self.thread_id, self.resource_id, when_active, when_idle, *self.options)

    def new_signal(self, record_id: str) -> Signal | PlainText:
        """The signal ``route`` sends for the new record ``record_id`` of a plain notification:
        ``checked_signal(delivery.full_fields(record))``, whose attributes and metadata
        :func:`plain_notification` counted within the limit; a ``PlainText`` (its Signal
        built when asked for) when its metadata is names to plain scalars."""
        item = self.item
        attributes = {"id": record_id, "source": item["source"], "kind": item["kind"],
                      "priority": item["priority"], **item["attributes"]}
        metadata = {**item["metadata"], "notification_id": record_id}
        if self.plain_signal and not self.active.attributes and not self.idle.attributes:  # type: ignore[union-attr]
            return PlainText.typed(item["summary"], "notification", "notification", attributes,
                                   metadata)
        return checked_signal({"type": "notification", "tag_name": "notification",
                               "contents": item["summary"], "attributes": attributes,
                               "metadata": metadata})

    def after(
        self, d: Dialect, rec: NotificationRecord | NewRow, routed: RouteResult | None
    ) -> Txn[NotificationRecord | WrittenRow]:
        if self.token is None:
            assert isinstance(rec, NotificationRecord)
            return nothing_after(d, rec, routed)  # read back as it was stored (before)
        if isinstance(rec, NotificationRecord):
            return delivered_and_read(d, rec.id, self.mark_token(routed), time.time())
        return self.written(d, rec, routed)

    def written(
        self, d: Dialect, row: NewRow, routed: RouteResult | None
    ) -> Txn[WrittenRow]:
        now = time.time()
        token = self.mark_token(routed)
        yield from delivered(d, row[0], token, now)
        return WrittenRow(row, None if token is None else now)

    def mark_token(self, routed: RouteResult | None) -> str | None:
        """The token to mark the record delivered with now (None: not now). A wake is
        delivered once its run has started (the caller marks it then, as before)."""
        taken = routed is not None and routed.action in ("deliver", "persist")
        return self.token if taken else None

    @staticmethod
    def after_all(
        d: Dialect, calls: list[_NotificationWrite], values: list[NotificationRecord | NewRow],
        routed: list[RouteResult | None],
    ) -> Txn[list[NotificationRecord | WrittenRow]]:
        """Every call's ``after`` in order: the marks and the reads back as one batch (a new
        record of a plain notification is not read back: see ``WrittenRow``)."""
        if any(call.token is None for call in calls):
            done: list[NotificationRecord | WrittenRow] = []
            for call, rec, decided in zip(calls, values, routed, strict=True):
                done.append((yield from call.after(d, rec, decided)))
            return done
        now = time.time()
        marks = [(_record_id(rec), call.mark_token(decided))
                 for call, rec, decided in zip(calls, values, routed, strict=True)]
        read = [rec.id for rec in values if isinstance(rec, NotificationRecord)]
        records = iter((yield from delivered_all_and_read(d, marks, now, read)))
        return [next(records) if isinstance(rec, NotificationRecord)
                else WrittenRow(rec, None if token is None else now)
                for rec, (_, token) in zip(values, marks, strict=True)]


class WrittenRow:
    """A new record as its write left it: its insert arguments, and the time it was marked
    delivered (None: not marked)."""

    __slots__ = ("delivered_at", "row")

    def __init__(self, row: NewRow, delivered_at: float | None) -> None:
        self.row, self.delivered_at = row, delivered_at

    def record(self) -> NotificationRecord:
        return written_record(self.row, self.delivered_at)


def _record_id(rec: NotificationRecord | NewRow | WrittenRow) -> str:
    if isinstance(rec, NotificationRecord):
        return rec.id
    if isinstance(rec, WrittenRow):
        return rec.row[0]
    return rec[0]


def new_ids() -> tuple[str, str]:
    """A new record's id (time-ordered: a burst's records land at the end of the table's
    primary key) and its send's claim token."""
    return time_ordered_id(), f"inline:{urandom(16).hex()}"


# The branches of a delivery sent now with no stream options (almost every one), parsed once
# per behavior and never mutated (as the router's defaults).
_PLAIN_BRANCHES: dict[str, tuple[Any, Any]] = {}


def _branches(routing: Any, behavior: str, if_idle: dict[str, Any]) -> tuple[Any, Any]:
    """The branches ``delivery.route`` sends a ``behavior`` ("deliver"/"persist") with."""
    if not if_idle and behavior in _PLAIN_BRANCHES:
        return _PLAIN_BRANCHES[behavior]
    idle = dict(if_idle)
    idle["behavior"] = "wake" if behavior == "deliver" else "persist"
    if idle["behavior"] == "persist":
        idle.pop("stream_options", None)
    branches = routing.branches(
        {"behavior": "deliver" if behavior == "deliver" else "persist"}, idle)
    if not if_idle:
        _PLAIN_BRANCHES[behavior] = branches
    return branches


def _scheduled(
    rec: NotificationRecord, decision: Decision, merged: bool, now: float
) -> NotificationRecord:
    """``rec`` with the decision's schedule, as :func:`_store` stores it."""
    discarded = decision.action == "discard"
    return rec.model_copy(update={
        "status": "discarded" if discarded else "pending",
        "discarded_at": to_datetime(now) if discarded else None,
        "summary_at": _earliest(rec.summary_at if merged else None, decision.summary_at),
        "deliver_at": _earliest(rec.deliver_at if merged else None, decision.deliver_at),
    })


async def _send_in_one_write(
    agent: NotifyingAgent, one_write: tuple[Any, Any], policy: DeliveryPolicy,
    item: dict[str, Any], target: Target, if_idle: dict[str, Any], plain: Plain | None = None,
) -> dict[str, Any]:
    routing, compound = one_write
    resource, thread = target.resource_id, target.thread_id
    assert resource is not None and thread is not None  # _resolve_target's
    # The decision reads neither the merged record nor the thread's state (see _one_write).
    entry = fixed_entry(policy, item["source"]) if plain is not None else None
    made: Any  # the decision, or (a plain notification sent now) how to make it when read
    if entry is not None and _immediate(entry[0]) in ("deliver", "persist"):
        # What decide() gives, made only if read (a copy of the entry, named by its reason).
        decision, made = entry[0], Later(partial(with_reason, *entry))
        call = _NotificationWrite(item, None, decision, thread, resource, routing, if_idle,
                                  plain)
    else:
        fresh = _candidate(item, None, thread, resource)
        decision = made = await decide(policy, fresh, "idle")
        call = _NotificationWrite(item, fresh, decision, thread, resource, routing, if_idle)
    done: asyncio.Future[tuple[NotificationRecord | WrittenRow, RouteResult | None]] = (
        asyncio.get_running_loop().create_future())

    def then(rec: Any, routed: RouteResult | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result((rec, routed))

    runtime: Any = agent.runtime
    runtime.track(done)  # close() waits for it, as for a send's receipt
    compound(then, call)
    written, routed = await done
    record: Any = written if isinstance(written, NotificationRecord) else Later(written.record)
    if call.kind is None:
        return {"record": record, "decision": made}
    store = agent.memory.store  # pyright: ignore[reportOptionalMemberAccess]
    assert call.token is not None
    record_id = _record_id(written)
    if call.kind == "digest":  # stored and claimed in the write; the digest goes out now
        assert isinstance(written, NotificationRecord)  # (a plain notification is sent now)
        out = await _act(agent, store, written, decision, call.token, if_idle)
        return {"record": await store.get_notification(record_id), "decision": made, **out}
    assert routed is not None
    receipt = routing.settle(call.signal, target, call.active, call.idle, routed)
    try:
        accepted = await receipt.accepted
        out: dict[str, Any] = {"signal": Later(partial(_receipt_signal, receipt)),
                               "accepted": accepted}
        if accepted.get("run_id"):
            out["run_id"] = accepted["run_id"]
        if accepted.get("action") == "persist":
            persisted = receipt.persisted
            if persisted is not None:
                await persisted
            out["persisted"] = True
    except Exception as exc:  # the woken run did not start: retried by the dispatcher
        ids = await _claimed_ids(store, thread, call.token)
        await delivery.mark_failed_attempt(store, ids, call.token, exc, time.time(),
                                           digest=False)
        return LazyDict(record=await store.get_notification(record_id), decision=made,
                        delivery_error=f"{type(exc).__name__}: {exc}")
    if routed.action not in ("deliver", "persist"):  # a wake: delivered once its run started
        ids = await _claimed_ids(store, thread, call.token)
        await delivery.mark_delivered(store, ids, call.token, time.time())
        record = await store.get_notification(record_id) or record
    # A dict whose record, decision and Signal are made when first read (tui_agent/lazy.py):
    # a burst's callers mostly read "accepted" only.
    return LazyDict(record=record, decision=made, **out)


def _receipt_signal(receipt: Any) -> Signal:
    return receipt.signal
