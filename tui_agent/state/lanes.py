"""State lanes: a thread's named channels of changing context (browser, editor, watcher...).

The store keeps each lane's current value materialised (the last snapshot with every delta
since applied), so reading a lane is one row whatever its history, and every version in the
lane's history (``Store.put_state_lane``). A ``delta`` is a JSON Merge Patch (RFC 7396) on the
value. Tests: ``tests/test_state_lanes.py``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from tui_agent.errors import ConfigError, SignalError
from tui_agent.lazy import Later, LazyDict
from tui_agent.signals import (
    check_attributes,
    check_contents,
    check_name,
    parse_if_active,
    parse_if_idle,
    parse_target,
    unknown_keys_error,
)
from tui_agent.signals.data import IfActive, IfIdle, PlainText, Signal, checked_signal
from tui_agent.signals.limits import (
    check_id,
    check_json_value,
    check_limit,
    check_str,
    flat_json_text,
    input_limits,
)
from tui_agent.signals.stored import branch_records
from tui_agent.store.codec import dumps
from tui_agent.store.compound import nothing_after
from tui_agent.store.contract import Store
from tui_agent.store.dialect import Dialect
from tui_agent.store.lanes import LanePut, put_lane, put_lanes
from tui_agent.store.records import RouteResult, StateLane, StateLaneVersion
from tui_agent.store.roles import Row
from tui_agent.store.rows import lane_of
from tui_agent.store.signal_writes import RouteCall
from tui_agent.store.statements import Txn

MODES: tuple[str, ...] = ("snapshot", "delta")
_STATE_KEYS = frozenset(
    {"id", "cache_key", "contents", "mode", "value", "delta", "attributes", "metadata", "tag_name"}
)
_LANE_ATTRIBUTES = ("id", "version")  # set by the lane; the caller's attributes cannot replace them


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396: apply ``patch`` to ``target`` and return the result (inputs are not changed).

    An object patch merges key by key (``None`` removes a key); any other patch replaces the
    target whole.
    """
    if not isinstance(patch, Mapping):
        return patch
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- reading (mixed into Memory) ------------------------------------------------------------------

def content_key(value: Any) -> str:
    """A ``cache_key`` for a JSON value: equal values get equal keys (key order ignored)."""
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def state_update(lane: str, given: Any, *, delta: bool = False,
                 cache_key: str | None = None) -> dict[str, Any]:
    """A state signal for ``send_state_signal``: ``given`` is the lane's new value, or with
    ``delta`` a merge patch on it; its cache key defaults to ``content_key(given)``, so sending
    the same JSON again is "unchanged"."""
    return {"id": lane, "mode": "delta" if delta else "snapshot",
            "cache_key": cache_key or content_key(given), ("delta" if delta else "value"): given}


class StateLanesMixin:
    """The state-lane reading API of ``Memory`` (needs ``self.store``)."""

    store: Store

    async def list_state_lanes(self, thread_id: str) -> list[StateLane]:
        return await self.store.list_state_lanes(thread_id)

    async def get_state_lane(self, thread_id: str, lane_id: str) -> StateLane | None:
        return await self.store.get_state_lane(thread_id, lane_id)

    async def state_lane_history(
        self, thread_id: str, lane_id: str, limit: int = 50
    ) -> list[StateLaneVersion]:
        """The lane's versions, newest first."""
        return await self.store.state_lane_history(thread_id, lane_id, check_limit(limit, "limit"))


# -- sending --------------------------------------------------------------------------------------


# The store's JSON form (codec.dumps: compact, not ASCII-escaped), refusing what is not JSON.
_json_text_of = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def json_text(value: Any, what: str) -> str:
    """``value``'s JSON as the store writes it (``dumps``), if it survives a JSON round trip
    unchanged in kind, else a clear error: checked and encoded in one pass (the text is the
    state signal's contents)."""
    try:
        text = _json_text_of(value)
    except RecursionError:
        check_json_value(value, f"state {what}")  # names the field and the depth limit
        raise
    except (TypeError, ValueError) as exc:
        raise SignalError(
            f"state {what} must be JSON (dicts, lists, strings, numbers): {exc}"
        ) from None
    check_json_value(value, f"state {what}")  # also: lone surrogates, nesting depth
    return text


def _json_value(value: Any, what: str) -> Any:
    """``value`` if it survives a JSON round trip unchanged in kind, else a clear error."""
    json_text(value, what)
    return value


def _require_str(state: Mapping[str, Any], key: str) -> str:
    value = state.get(key)
    if value is None:
        raise SignalError(f"state signal needs {key!r} (a non-empty string)")
    if not isinstance(value, str) or not value.strip():
        raise SignalError(f"state {key!r} must be a non-empty string, got {value!r}")
    return value


def _check_keys(state: Any) -> Mapping[str, Any]:
    if not isinstance(state, Mapping):
        raise SignalError(f"state signal must be a dict, got {type(state).__name__}")
    if set(state) - _STATE_KEYS:
        raise unknown_keys_error(set(state) - _STATE_KEYS, _STATE_KEYS, "state signal")
    return state


def _check_payload(state: Mapping[str, Any], mode: str) -> tuple[Any, Any, str]:
    """(value, delta, the JSON of the one given) of the signal: a snapshot carries ``value``,
    a delta carries ``delta``."""
    if mode == "snapshot":
        if state.get("delta") is not None:
            raise SignalError("state 'delta' is for mode 'delta'; a snapshot carries 'value'")
        value = state.get("value")
        text = flat_json_text(value)
        return value, None, json_text(value, "value") if text is None else text
    if state.get("value") is not None:
        raise SignalError("state 'value' is for mode 'snapshot'; a delta carries 'delta'")
    if "delta" not in state:
        raise SignalError("a state signal with mode 'delta' needs 'delta' (a JSON Merge Patch)")
    delta = state["delta"]
    text = flat_json_text(delta)
    return None, delta, json_text(delta, "delta") if text is None else text


_USER_TAGS = frozenset({"user", "user-message"})  # a typed signal may not use them
# Plain JSON scalars (a float checked finite when the signal was checked).
_PLAIN_TYPES = frozenset({str, int, float, bool})


class _StateIn:
    """A validated state signal."""

    def __init__(self, state: Any) -> None:
        state = _check_keys(state)
        self.lane_id = check_id(_require_str(state, "id"), "state id")
        self.cache_key = check_str(_require_str(state, "cache_key"), "state cache_key")
        self.mode: str = state.get("mode") or "snapshot"
        if self.mode not in MODES:
            raise SignalError(f"unknown state mode {self.mode!r}; modes are 'snapshot', 'delta'")
        self.value, self.delta, payload_json = _check_payload(state, self.mode)
        self.payload_json = payload_json  # the store's JSON of the value or delta given
        tag = state.get("tag_name")
        self.tag_name = check_name("state" if tag is None else tag, "tag_name")
        self.attributes = check_attributes(state.get("attributes"), "state attributes")
        clash = [k for k in _LANE_ATTRIBUTES if k in self.attributes]
        if clash:
            raise SignalError(
                f"state attributes {clash} are set by the lane (its id and version); rename them"
            )
        if len(self.attributes) + len(_LANE_ATTRIBUTES) > input_limits().max_attributes:
            check_attributes({"id": self.lane_id, "version": 1, **self.attributes},
                             "signal attributes")  # the signal's own error: too many
        metadata = state.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise SignalError(f"state metadata must be a dict, got {type(metadata).__name__}")
        self.metadata = {} if not metadata else _json_value(dict(metadata), "metadata")
        contents = state.get("contents")
        self.contents = check_contents(payload_json if contents is None else contents,
                                       "state contents")

    def checked_signal(self, version: int) -> Signal:
        """``normalize_signal(self.signal(version))`` without checking again what this
        object checked when it was made (contents, tag, attributes, metadata; the two
        attributes the lane adds are counted then)."""
        return checked_signal(self.signal(version))

    def plain_signal(self, version: int) -> PlainText | None:
        """:meth:`checked_signal` as a ``PlainText`` (its Signal built when asked for) for the
        common state signal: string contents, attributes and metadata of names to plain
        scalars (metadata without None), a tag that is not the user's; None for any other."""
        contents = self.contents
        if type(contents) is not str or self.tag_name.lower() in _USER_TAGS:
            return None
        for value in self.attributes.values():
            if type(value) not in _PLAIN_TYPES and value is not None:
                return None
        for value in self.metadata.values():
            if type(value) not in _PLAIN_TYPES:
                return None
        fields = self.signal(version)
        return PlainText.typed(contents, "state", self.tag_name, fields["attributes"],
                               fields["metadata"])

    def signal(self, version: int) -> dict[str, Any]:
        return {
            "type": "state",
            "tag_name": self.tag_name,
            "contents": self.contents,
            "attributes": {"id": self.lane_id, "version": version, **self.attributes},
            "metadata": {**self.metadata, "state_lane": self.lane_id, "state_version": version},
        }


async def resolve_receipt(value: Any) -> Any:
    """``send_signal`` returns its receipt at once; accept an awaitable that gives one too."""
    if not hasattr(value, "accepted") and inspect.isawaitable(value):
        return await value
    return value


async def _resolve_thread(store: Store, run_id: Any, resource_id: Any, thread_id: Any) -> str:
    target = parse_target(run_id=run_id, resource_id=resource_id, thread_id=thread_id)
    if target.thread_id is not None:
        thread = await store.get_thread(target.thread_id)
        if thread is None:
            raise SignalError(
                f"no thread {target.thread_id!r}: state lanes live on an existing memory thread"
            )
        if thread.resource_id != target.resource_id:
            raise SignalError(
                f"thread {thread.id!r} belongs to resource {thread.resource_id!r}, "
                f"not {target.resource_id!r}"
            )
        return thread.id
    assert target.run_id is not None  # parse_target gives a thread or a run
    run = await store.get_run(target.run_id)
    if run is None:
        raise SignalError(f"no run {target.run_id!r} in memory")
    return str(run.thread_id)


async def _store_version(
    store: Store, thread_id: str, state: _StateIn, *, check_resource: str | None = None
) -> StateLane | None:
    """Apply the signal to the lane in one transaction: the lane as written, None if unchanged.
    A delta on a lane with no snapshot yet starts from {}. ``check_resource``: the thread must
    exist and be that resource's (checked in the same transaction)."""
    def new_value(current: Any) -> Any:
        return state.value if state.mode == "snapshot" else merge_patch(current, state.delta)

    contents = state.contents if isinstance(state.contents, str) else dumps(state.contents)
    return await store.put_state_lane_record(
        thread_id, state.lane_id, mode=state.mode, cache_key=state.cache_key,
        new_value=new_value, delta=state.delta, contents=contents, resource_id=check_resource,
    )


async def send_state_signal(
    agent: Any,
    state: Any,
    *,
    resource_id: str | None = None,
    thread_id: str | None = None,
    run_id: str | None = None,
    if_active: Any = None,
    if_idle: Any = None,
) -> dict[str, Any]:
    """Send a state update on a lane of a memory thread (``Agent.send_state_signal``).

    Returns ``{"skipped": True, "reason": "unchanged"}`` when the lane already has this
    ``cache_key`` and mode; otherwise ``{"skipped": False, "version", "lane", "signal",
    "accepted", "receipt"}`` where ``accepted`` is the awaited routing result (as
    ``await receipt.accepted`` gives it) and ``receipt`` the receipt of ``send_signal`` (its
    ``.persisted`` is there to await for a persisted signal). Every check runs before the lane
    is touched. To a named thread (on a store with compound writes) the lane's version and
    the signal's routing are one transaction, so a burst is one group commit
    (tests/test_compound_signals.py).
    """
    memory = getattr(agent, "memory", None)
    if memory is None:
        raise ConfigError(
            f"agent {getattr(agent, 'id', '?')!r} has no memory: state lanes live on memory "
            "threads (Agent(memory=Memory(...)))"
        )
    parsed = _StateIn(state)
    if if_active is not None:  # None is the default branch: nothing to check
        parse_if_active(if_active)
    if if_idle is not None:
        parse_if_idle(if_idle)
    store = memory.store
    named = parse_target(run_id=run_id, resource_id=resource_id, thread_id=thread_id)
    compound = getattr(store, "route_compound_then", None)
    routing = getattr(agent, "signal_routing", None)  # an Agent's (agent/router.py)
    if (named.thread_id is not None and named.resource_id is not None and compound is not None
            and routing is not None):
        return await _send_in_one_write(
            agent, routing, compound, parsed, named, if_active, if_idle)
    if named.thread_id is not None and named.resource_id is not None:
        # A store without compound writes: the thread's check is in the lane's own transaction
        # (one write, no read first), then the signal is sent.
        thread, thread_resource = named.thread_id, named.resource_id
        written = await _store_version(store, thread, parsed, check_resource=thread_resource)
    else:
        thread = await _resolve_thread(store, run_id, resource_id, thread_id)
        thread_resource = resource_id or (await store.get_thread(thread)).resource_id
        written = await _store_version(store, thread, parsed)
    if written is None:
        return {"skipped": True, "reason": "unchanged"}
    version, lane = written.version, written  # the lane as this send wrote it
    target = {"run_id": run_id, "resource_id": thread_resource, "thread_id": thread}
    receipt = await resolve_receipt(
        agent.send_signal(parsed.signal(version), **target, if_active=if_active, if_idle=if_idle)
    )
    accepted = await receipt.accepted
    return {"skipped": False, "version": version, "lane": lane, "signal": receipt.signal,
            "accepted": accepted, "receipt": receipt}


class _LaneSignal:
    """A state signal as one compound write (``tui_agent.store.compound``): the lane's new
    version, then the signal naming that version routed, in one transaction of the store's
    group commit (a burst of state signals: one commit). ``route`` builds the signal on the
    store's writer, once the version is known."""

    __slots__ = ("active", "idle", "options", "put", "signal", "thread_id")

    def __init__(
        self, put: LanePut, active: IfActive, idle: IfIdle,
        options: tuple[str, str, bool, str, float, str | None, int | None], parsed: _StateIn,
    ) -> None:
        self.thread_id = put[0]
        self.put, self.active, self.idle, self.options = put, active, idle, options
        self.signal: Any = parsed  # the Signal sent, once ``route`` built it

    def before(self, d: Dialect) -> Txn[Row | None]:
        return put_lane(d, *self.put)

    @staticmethod
    def before_all(d: Dialect, calls: list[_LaneSignal]) -> Txn[list[Row | None]]:
        return put_lanes(d, [call.put for call in calls])

    def route(self, value: Row | None) -> RouteCall | None:
        if value is None:
            return None  # unchanged: nothing sent
        version = int(value[2])
        parsed: _StateIn = self.signal
        plain = None if self.active.attributes or self.idle.attributes else (
            parsed.plain_signal(version))
        self.signal = parsed.checked_signal(version) if plain is None else plain
        when_active, when_idle = branch_records(
            self.signal, self.active.attributes, self.idle.attributes)
        return (self.thread_id, self.put[7] or "", when_active, when_idle, *self.options)

    def after(self, d: Dialect, value: Row | None, routed: Any) -> Txn[Row | None]:
        return nothing_after(d, value, routed)


async def _send_in_one_write(
    agent: Any, routing: Any, compound: Any, parsed: _StateIn, target: Any, if_active: Any,
    if_idle: Any,
) -> dict[str, Any]:
    """``send_state_signal`` to a named thread: the lane and the signal in one write."""
    active, idle = routing.branches(if_active, if_idle)
    thread, resource = target.thread_id, target.resource_id
    contents = parsed.contents if isinstance(parsed.contents, str) else dumps(parsed.contents)

    def new_value(current: Any) -> Any:
        return merge_patch(current, parsed.delta)

    # A snapshot's new value is the value given: its JSON, as checked (the store's ``dumps``
    # form), with no value read back or encoded again on the writer.
    value: Any = parsed.payload_json if parsed.mode == "snapshot" else new_value
    put: LanePut = (thread, parsed.lane_id, parsed.mode, parsed.cache_key, value,
                    parsed.delta, contents, resource)
    call = _LaneSignal(put, active, idle, routing.options(active, idle), parsed)
    done: asyncio.Future[tuple[Any, Any]] = asyncio.get_running_loop().create_future()

    def then(row: Row | None, routed: RouteResult | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        elif routed is None:
            done.set_result((None, None))
        else:
            receipt = routing.settle(call.signal, target, active, idle, routed)
            done.set_result((row, receipt))

    agent.runtime.track(done)  # close() waits for it, as for a send's receipt
    compound(then, call)
    row, receipt = await done
    if row is None:
        return {"skipped": True, "reason": "unchanged"}
    accepted = await receipt.accepted
    # The lane and the Signal made when first read (tui_agent/lazy.py): a burst's callers
    # mostly read "accepted" only.
    return LazyDict(skipped=False, version=int(row[2]), lane=Later(partial(lane_of, row)),
                    signal=Later(partial(_receipt_signal, receipt)), accepted=accepted,
                    receipt=receipt)


def _receipt_signal(receipt: Any) -> Signal:
    return receipt.signal
