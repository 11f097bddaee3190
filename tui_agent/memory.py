"""Memory: threads and their messages on a store, plus the thread's run lease settings.

Everything here is a view of stored rows: the history a model gets, the messages a pane shows,
the state lanes and the notification inbox (mixins) are all read back from the store.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tui_agent.errors import ArgumentTypeError, ConfigError, StoreError
from tui_agent.notifications.inbox import InboxMixin
from tui_agent.notifications.records import NotificationRecord
from tui_agent.settings import current_settings
from tui_agent.signals.limits import (
    as_items,
    check_id,
    check_json_value,
    check_limit,
    check_text,
)
from tui_agent.state.lanes import StateLanesMixin
from tui_agent.store.approvals import STATUSES as APPROVAL_STATUSES
from tui_agent.store.changes import ChangeFeed
from tui_agent.store.contract import NotificationCursor, Store
from tui_agent.store.records import (
    ApprovalRecord,
    MessageHit,
    MessageIn,
    MessageRecord,
    ThreadRecord,
    WakeStart,
)
from tui_agent.store.url import open_store

DEFAULT_LEASE_TTL_S = 15.0
EXCHANGE_WINDOW = 200  # messages read back to find the thread's last exchange
VALID_ROLES = {"user", "assistant", "tool", "system"}


@dataclass(frozen=True, slots=True)
class Exchange:
    """A thread's last user message (None: there is none) and the answer to it so far."""

    user: MessageRecord | None
    answer: list[MessageRecord]


def _as_store(store: Store | str | os.PathLike[str] | None) -> Store:
    """Any store implementing the contract; a path or URL is opened (``open_store``); None is
    the default store."""
    if store is None or isinstance(store, str | os.PathLike):
        return open_store(store)
    if not isinstance(store, Store):
        raise ConfigError(
            f"Memory(store=...) takes a store (e.g. SqliteStore(path)), a path or a store URL "
            f"(sqlite:///path); got {type(store).__name__}"
        )
    return store


class Memory(StateLanesMixin, InboxMixin):
    """Threads and their messages on a store. ``store``: any ``tui_agent.store.Store``, a path
    or URL (opened with ``open_store``), or None for the default store."""

    def __init__(
        self,
        store: Store | str | os.PathLike[str] | None = None,
        *,
        lease_ttl_s: float | None = None,
        lease_renew_s: float | None = None,
        last_messages: int = 20,
    ) -> None:
        self.store: Store = _as_store(store)
        settings = current_settings() if lease_ttl_s is None or lease_renew_s is None else None
        ttl = lease_ttl_s if lease_ttl_s is not None else settings and settings.lease_ttl_s
        ttl = DEFAULT_LEASE_TTL_S if ttl is None else ttl
        if ttl <= 0:
            raise ConfigError(f"lease_ttl_s must be positive, got {ttl}")
        self.lease_ttl_s = ttl
        renew = lease_renew_s if lease_renew_s is not None else settings and settings.lease_renew_s
        renew = ttl / 3 if renew is None else renew
        if not 0 < renew < ttl:
            # Renewing no faster than the lease expires would let a live run look dead.
            raise ConfigError(
                f"lease_renew_s must be positive and shorter than lease_ttl_s ({ttl}), got {renew}"
            )
        self.lease_renew_s = renew
        self.last_messages = check_limit(last_messages, "last_messages")

    def __repr__(self) -> str:
        return (
            f"Memory(store={self.store!r}, lease_ttl_s={self.lease_ttl_s}, "
            f"lease_renew_s={self.lease_renew_s})"
        )

    # -- threads ------------------------------------------------------------------------------

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        return await self.store.get_thread(thread_id)

    async def list_threads(self, resource_id: str | None = None) -> list[ThreadRecord]:
        return await self.store.list_threads(resource_id)

    async def create_thread(
        self,
        thread_id: str,
        *,
        resource_id: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ThreadRecord:
        _check_thread_fields(thread_id, resource_id, title, metadata)
        return await self.store.ensure_thread(
            thread_id, resource_id, title=title, metadata=metadata
        )

    async def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        unset: Iterable[str] = (),
    ) -> ThreadRecord:
        """Rename the thread (``title``) and merge ``metadata`` into its metadata, as the
        reference's updateThread does: the keys given replace theirs, every other key stays
        (the thread's model, ``set_thread_model``, too). ``unset``: keys to remove. One
        transaction; ``StoreError`` for an unknown thread (tests/test_agent_memory.py)."""
        keys = _unset_keys(unset)
        _check_thread_fields(thread_id, None, title, metadata)
        return await self.store.update_thread(
            thread_id, title=title, metadata=metadata, unset=keys
        )

    # -- messages -----------------------------------------------------------------------------

    async def save_messages(
        self, messages: list[dict[str, Any]], *, thread_id: str, resource_id: str
    ) -> list[MessageRecord]:
        """Store messages ``{"role", "content", ...}`` on a thread (created if missing)."""
        _check_thread_fields(thread_id, resource_id, None, None)
        rows = [_message_in(m, index) for index, m in enumerate(messages)]
        await self.store.ensure_thread(thread_id, resource_id)
        await self.store.append(thread_id, resource_id, messages=rows)
        saved = await self.store.list_messages(thread_id, limit=len(rows)) if rows else []
        return saved

    async def recall(self, thread_id: str, last_messages: int = 10) -> list[MessageRecord]:
        limit = check_limit(last_messages, "last_messages")
        return await self.store.list_messages(thread_id, limit=limit)

    async def list_messages(
        self, thread_id: str, limit: int = 50, before: str | None = None
    ) -> list[MessageRecord]:
        limit = check_limit(limit, "limit")
        return await self.store.list_messages(thread_id, limit=limit, before=before)

    async def search_messages(
        self, query: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[MessageHit]:
        """User and assistant messages (of ``thread_id``, else of every thread) holding every
        word of ``query`` (prefixes match; ``"a phrase"`` in its order), newest first
        (``Store.search_messages``)."""
        limit = check_limit(limit, "limit")
        return await self.store.search_messages(query, thread_id=thread_id, limit=limit)
    async def supersede(self, thread_id: str, message_ids: list[str], *, by: str) -> list[str]:
        """Mark messages superseded (a retried answer, an edited message): they stay in the
        thread's history (``metadata["superseded"]``), no model is given them again, and every
        subscriber gets a ``data-superseded`` event. Returns the ids marked
        (tests/test_supersede.py)."""
        check_text(by, "by")
        return await self.store.supersede_messages(thread_id, list(message_ids), by=by)

    async def last_exchange(self, thread_id: str) -> Exchange:
        """The thread's last user message still in force and what answered it (the assistant
        and tool messages after it, not superseded), read from the newest ``EXCHANGE_WINDOW``
        messages."""
        records = await self.store.list_messages(thread_id, limit=EXCHANGE_WINDOW)
        live = [r for r in records if "superseded" not in r.metadata]
        for index in range(len(live) - 1, -1, -1):
            if live[index].role == "user":
                return Exchange(live[index], live[index + 1:])
        return Exchange(None, [r for r in live if r.role in ("assistant", "tool")])

    async def thread_model(self, thread_id: str) -> str | None:
        """The model chosen for the thread (its metadata's ``model``), or None: the agent's."""
        thread = await self.store.get_thread(thread_id)
        model = thread.metadata.get("model") if thread is not None else None
        return model if isinstance(model, str) and model else None

    async def set_thread_model(
        self, thread_id: str, model: str | None, *, resource_id: str
    ) -> ThreadRecord:
        """Keep ``model`` (a router string) with the thread, for every run on it from any
        process (None: back to the agent's own). The thread is created if need be."""
        if model is not None:
            from tui_agent.models.resolve import validate_model_spec

            validate_model_spec(model)
        await self.create_thread(thread_id, resource_id=resource_id)
        if model is None:  # the thread's other metadata stays (update_thread merges)
            return await self.store.update_thread(thread_id, unset=("model",))
        return await self.store.update_thread(thread_id, metadata={"model": model})

    async def waiting_signals(self, thread_id: str) -> list[dict[str, Any]]:
        """Signals accepted on the thread that no run has taken yet (``status`` pending:
        delivered at the live run's next step; queued: runs after it), oldest first."""
        return await self.store.waiting_signals(thread_id)

    async def list_approvals(
        self, *, status: str | None = "pending", thread_id: str | None = None,
        limit: int = 500,
    ) -> list[ApprovalRecord]:
        """Tool calls that waited for a person's approval, oldest first: by default the
        pending ones of every thread (``status`` one of pending, approved, declined,
        cancelled; None: all)."""
        if status is not None and status not in APPROVAL_STATUSES:
            raise ConfigError(f"status must be one of {list(APPROVAL_STATUSES)} or None, "
                              f"not {status!r}")
        return await self.store.list_approvals(
            status=status, thread_id=thread_id, limit=check_limit(limit, "limit"))

    async def get_approval(self, approval_id: str) -> ApprovalRecord | None:
        """The tool call stored under ``approval_id`` (``tui-agent approvals`` lists them)."""
        return await self.store.get_approval(approval_id)

    async def thread_activity(self) -> dict[str, tuple[int, bool]]:
        """``{thread_id: (message count, a run is live)}`` for every thread with either."""
        return await self.store.thread_activity()

    async def thread_usage(self, thread_id: str) -> dict[str, int]:
        """``{"input_tokens", "output_tokens"}`` of all the thread's ended runs."""
        return await self.store.thread_usage(thread_id)

    async def change_marker(self) -> tuple[int, int]:
        """A value that differs after any write was committed to the store, by this process
        or another: compare it with the last one to know whether to read again. Reads no
        table (the store's ``data_version`` and its own commit count)."""
        return await self.store.data_version(), self.store.local_commits

    @property
    def changes(self) -> ChangeFeed:
        """The store's one shared poller: ``with memory.changes.watch() as watch: await
        watch.wait()`` wakes on any commit, by this process or another, without a poll loop of
        one's own (tests/test_change_feed.py)."""
        return ChangeFeed.of(self.store)

    async def notification_changes(
        self, after: NotificationCursor | None = None, limit: int = 500
    ) -> tuple[list[NotificationRecord], NotificationCursor]:
        """Inbox records changed after the cursor ``after`` (None: all of them), oldest change
        first, at most ``limit``; and the cursor to pass next time. A change is anything that
        moves ``updated_at`` (created, merged, delivered, failed, a status set) or
        ``summarized_at`` (summarised in a digest). A page shorter than ``limit`` is the last.

        Guarantee: paging on from each returned cursor reads every record whose change was
        committed before the read, once per change, however many share one timestamp. A
        writer that took its timestamp before a later writer committed can land behind the
        cursor: a reader that must see it re-reads from a cursor a little earlier. Rows become
        records a slice at a time, with the event loop free between slices."""
        return await self.store.notification_changes(after, check_limit(limit, "limit"))

    async def model_history(
        self, thread_id: str, last_messages: int | None = None
    ) -> list[dict[str, Any]]:
        """The thread's recent messages as the model gets them."""
        limit = self.last_messages if last_messages is None else last_messages
        if limit == 0:
            return []
        records = await self.store.list_messages(thread_id, limit=limit)
        return to_model_messages(records)

    async def history_and_signals(
        self, thread_id: str, resource_id: str, run_id: str, last_messages: int | None = None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """:meth:`model_history`, then the thread's pending signals taken into run
        ``run_id`` (``Store.claim_signals``), in one store transaction: a woken run's start,
        one round trip before its model call."""
        limit = self.last_messages if last_messages is None else last_messages
        records, taken = await self.store.claim_with_history(
            thread_id, resource_id, run_id, last_messages=limit)
        return to_model_messages(records), taken


    async def wake_start(
        self, thread_id: str, resource_id: str, run_id: str, last_messages: int | None = None,
        *, agent_id: str | None = None, claimed: WakeStart | None = None,
    ) -> tuple[list[dict[str, Any]], WakeStart]:
        """:meth:`history_and_signals` with what a woken run's plan reads of the store (the
        thread's model, ``agent_id``'s stored editor overrides), in one store transaction
        (``Store.claim_wake``): the only round trip between a wake and its model call — none
        when the wake's routing ``claimed`` it already (``route_signal``'s ``claim_on_wake``).
        The history as the model gets it (``to_model_messages``), and the store's record."""
        if claimed is not None:
            return to_model_messages(claimed.history), claimed
        limit = self.last_messages if last_messages is None else last_messages
        start = await self.store.claim_wake(
            thread_id, resource_id, run_id, last_messages=limit, agent_id=agent_id)
        return to_model_messages(start.history), start


def to_model_messages(records: list[MessageRecord]) -> list[dict[str, Any]]:
    """Stored messages → OpenAI-style messages. Superseded ones are left out. A window that
    starts inside a tool exchange drops the orphan tool results (a provider rejects a tool
    result without its call)."""
    messages: list[dict[str, Any]] = []
    for record in records:
        if "superseded" in record.metadata:
            continue  # a retried answer, an edited message: history, not context
        if record.role == "tool":
            if not messages:
                continue
            messages.append(
                {
                    "role": "tool",
                    "content": record.content,
                    "tool_call_id": record.metadata.get("tool_call_id"),
                }
            )
        elif record.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": record.content or None}
            if record.metadata.get("tool_calls"):
                message["tool_calls"] = record.metadata["tool_calls"]
            if message["content"] is None and "tool_calls" not in message:
                continue  # an aborted step that produced nothing
            messages.append(message)
        else:
            messages.append({"role": record.role, "content": record.content})
    return messages


def _unset_keys(unset: object) -> tuple[str, ...]:
    """``unset`` as a tuple of key names: a list or tuple of strings (a lone string would be
    read as its letters: refused)."""
    keys = as_items(unset)
    if keys is None or not all(isinstance(key, str) for key in keys):
        raise ArgumentTypeError(f"unset must be a list of metadata keys, got {unset!r}")
    return tuple(keys)


def _check_thread_fields(
    thread_id: Any, resource_id: Any, title: Any, metadata: Any
) -> None:
    """Ids within the limits, a title that is text, metadata with a JSON form (before writing)."""
    for value, name in ((thread_id, "thread_id"), (resource_id, "resource_id")):
        if isinstance(value, str):
            check_id(value, name)
    if isinstance(title, str):
        check_text(title, "title")
    check_json_value(metadata, "thread metadata")


def _message_in(message: dict[str, Any], index: int) -> MessageIn:
    role = message.get("role")
    if role not in VALID_ROLES:
        raise StoreError(
            f"messages[{index}]: role must be one of {sorted(VALID_ROLES)}, got {role!r}"
        )
    if "content" not in message:
        raise StoreError(f"messages[{index}]: no content")
    metadata = dict(message.get("metadata") or {})
    for key in ("tool_calls", "tool_call_id"):
        if key in message:
            metadata[key] = message[key]
    content = message["content"]
    if isinstance(content, str):
        check_text(content, f"messages[{index}].content")
    else:
        check_json_value(content, f"messages[{index}].content")
    check_json_value(metadata, f"messages[{index}].metadata")
    return MessageIn(role=role, content=message["content"], metadata=metadata)
