"""State lanes, on either store: the ``LaneStore`` role (``contract.py``), written once.

A lane's current value is materialised in ``state_lanes`` (one row whatever its history) and
every version is kept in ``state_lane_history``. A put is one write transaction of the store's
writer (on SQLite it joins the next group commit) that first locks the lane (PostgreSQL: an
advisory lock on the lane; SQLite's ``BEGIN IMMEDIATE`` already excludes other writers), so
concurrent puts get consecutive versions. Checked by
``tests/test_state_lanes.py`` and ``tests/test_store_contract.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tui_agent.errors import SignalError
from tui_agent.store.codec import dumps, loads
from tui_agent.store.dialect import Dialect
from tui_agent.store.records import StateLane, StateLaneVersion
from tui_agent.store.roles import Database, Row, first
from tui_agent.store.rows import lane_of
from tui_agent.store.statements import Statement, Txn

if TYPE_CHECKING:
    from tui_agent.store.log_writes import Writer

_COLUMNS = "thread_id, lane_id, version, mode, cache_key, value, updated_at"
_UPSERT = (
    "INSERT INTO state_lanes(thread_id, lane_id, version, mode, cache_key, value, updated_at)"
    " VALUES (?,?,?,?,?,?,?) ON CONFLICT (thread_id, lane_id) DO UPDATE"
    " SET version=excluded.version, mode=excluded.mode, cache_key=excluded.cache_key,"
    " value=excluded.value, updated_at=excluded.updated_at"
)
_HISTORY = (
    "INSERT INTO state_lane_history(thread_id, lane_id, version, mode, cache_key, value, delta,"
    " contents, updated_at) VALUES (?,?,?,?,?,?,?,?,?)"
)


class StateLanes:
    """The state-lane methods of the store contract, on a store's :class:`Database` (reads)
    and ``Writer`` (its write transactions)."""

    def __init__(self, database: Database, writer: Writer) -> None:
        self.database = database
        self.writer = writer

    async def list_state_lanes(self, thread_id: str) -> list[StateLane]:
        """The thread's lanes, by lane id."""
        found = await self.database.rows(
            f"SELECT {_COLUMNS} FROM state_lanes WHERE thread_id=? ORDER BY lane_id",
            (thread_id,),
        )
        return [lane_of(row) for row in found]

    async def get_state_lane(self, thread_id: str, lane_id: str) -> StateLane | None:
        row = await first(
            self.database,
            f"SELECT {_COLUMNS} FROM state_lanes WHERE thread_id=? AND lane_id=?",
            (thread_id, lane_id),
        )
        return None if row is None else lane_of(row)

    async def state_lane_history(
        self, thread_id: str, lane_id: str, limit: int = 50
    ) -> list[StateLaneVersion]:
        """The lane's versions, newest first."""
        found = await self.database.rows(
            f"SELECT {_COLUMNS}, delta, contents FROM state_lane_history"
            " WHERE thread_id=? AND lane_id=? ORDER BY version DESC LIMIT ?",
            (thread_id, lane_id, limit),
        )
        return [
            StateLaneVersion(**lane_of(row).model_dump(), delta=loads(row[7]), contents=row[8])
            for row in found
        ]

    async def put_state_lane(
        self, thread_id: str, lane_id: str, *, mode: str, cache_key: str,
        new_value: Callable[[Any], Any], delta: Any, contents: str,
        resource_id: str | None = None,
    ) -> int | None:
        """In one transaction: None if the lane's ``mode`` and ``cache_key`` are these already,
        else version n+1 (1 for a new lane) with value ``new_value(current or None)``. With
        ``resource_id``, the thread must exist and be that resource's (else ``SignalError``,
        nothing written): the check a sender needs, in the same transaction. One write of the
        store's writer: on SQLite it joins the next group commit (a burst of state signals
        shares a few transactions)."""
        lane = await self.put_state_lane_record(
            thread_id, lane_id, mode=mode, cache_key=cache_key, new_value=new_value,
            delta=delta, contents=contents, resource_id=resource_id,
        )
        return None if lane is None else lane.version

    async def put_state_lane_record(
        self, thread_id: str, lane_id: str, *, mode: str, cache_key: str,
        new_value: Callable[[Any], Any], delta: Any, contents: str,
        resource_id: str | None = None,
    ) -> StateLane | None:
        """:meth:`put_state_lane`, returning the lane as it wrote it (no read after)."""
        row = await self.writer.run_write(
            thread_id, put_lane, thread_id, lane_id, mode, cache_key, new_value, delta,
            contents, resource_id,
        )
        return None if row is None else lane_of(row)


def put_lane(
    d: Dialect, thread_id: str, lane_id: str, mode: str, cache_key: str,
    new_value: Callable[[Any], Any] | str, delta: Any, contents: str, resource_id: str | None,
) -> Txn[Row | None]:
    """``StateLanes.put_state_lane_record`` as one transaction of statements (``writes.py``'s
    form, run whole on the store's writer): the lane's row as written, None if unchanged.
    ``new_value``: the lane's new value from its current one, or (a snapshot) the new value's
    JSON as ``dumps`` writes it."""
    if d.lock_key is not None:
        yield Statement(d.sql(d.lock_key), (f"lane\x1f{thread_id}\x1f{lane_id}",), rows=True)
    if resource_id is not None:
        owner: list[Row] = yield Statement(
            d.sql("SELECT resource_id FROM threads WHERE id=?"), (thread_id,), rows=True)
        if not owner:
            raise SignalError(
                f"no thread {thread_id!r}: state lanes live on an existing memory thread")
        if owner[0][0] != resource_id:
            raise SignalError(
                f"thread {thread_id!r} belongs to resource {owner[0][0]!r}, not {resource_id!r}")
    found: list[Row] = yield Statement(d.sql(
        "SELECT version, mode, cache_key, value FROM state_lanes"
        " WHERE thread_id=? AND lane_id=?"), (thread_id, lane_id), rows=True)
    current: Row | None = found[0] if found else None
    if current is not None and current[1] == mode and current[2] == cache_key:
        return None
    version = int(current[0]) + 1 if current is not None else 1
    value_json = _value_json(new_value, current[3] if current is not None else None)
    now = time.time()
    yield Statement(d.sql(_UPSERT),
                    (thread_id, lane_id, version, mode, cache_key, value_json, now))
    yield Statement(d.sql(_HISTORY), (
        thread_id, lane_id, version, mode, cache_key, value_json,
        None if mode == "snapshot" else dumps(delta), contents, now,
    ))
    return (thread_id, lane_id, version, mode, cache_key, value_json, now)


def _value_json(new_value: Callable[[Any], Any] | str, current_json: str | None) -> str:
    """The lane's new value as stored: given as JSON (a snapshot), or from the current one."""
    if isinstance(new_value, str):
        return new_value
    return dumps(new_value(loads(current_json)))


LanePut = tuple[str, str, str, str, "Callable[[Any], Any] | str", Any, str, "str | None"]


def put_lanes(d: Dialect, puts: list[LanePut]) -> Txn[list[Row | None]]:
    """:func:`put_lane` for each of ``puts`` (its arguments), in order, as if one after
    another: the batch form a burst of state signals uses (``state/lanes.py``). One lock, one
    lookup per distinct lane and one ownership check per thread, then every lane's versions
    computed in order and written with one ``executemany`` per table. Raises what the first
    failing put would (the caller then replays them one by one)."""
    lanes = sorted({(put[0], put[1]) for put in puts})
    if d.lock_key is not None:  # sorted: two bursts take shared lanes' locks in one order
        yield Statement(d.sql(d.lock_key),
                        [(f"lane\x1f{thread}\x1f{lane}",) for thread, lane in lanes], many=True)
    owners: dict[str, Any] = {}
    for thread_id in sorted({put[0] for put in puts if put[7] is not None}):
        found: list[Row] = yield Statement(
            d.sql("SELECT resource_id FROM threads WHERE id=?"), (thread_id,), rows=True)
        owners[thread_id] = found[0][0] if found else None
    current: dict[tuple[str, str], list[Any] | None] = {}
    for thread_id, lane_id in lanes:
        got: list[Row] = yield Statement(d.sql(
            "SELECT version, mode, cache_key, value FROM state_lanes"
            " WHERE thread_id=? AND lane_id=?"), (thread_id, lane_id), rows=True)
        current[(thread_id, lane_id)] = list(got[0]) if got else None
    written: list[Row | None] = []
    upserts: list[tuple[object, ...]] = []
    history: list[tuple[object, ...]] = []
    now = time.time()
    for thread_id, lane_id, mode, cache_key, new_value, delta, contents, resource_id in puts:
        if resource_id is not None:
            owner = owners[thread_id]
            if owner is None:
                raise SignalError(
                    f"no thread {thread_id!r}: state lanes live on an existing memory thread")
            if owner != resource_id:
                raise SignalError(
                    f"thread {thread_id!r} belongs to resource {owner!r}, not {resource_id!r}")
        lane = current[(thread_id, lane_id)]
        if lane is not None and lane[1] == mode and lane[2] == cache_key:
            written.append(None)
            continue
        version = int(lane[0]) + 1 if lane is not None else 1
        value_json = _value_json(new_value, lane[3] if lane is not None else None)
        current[(thread_id, lane_id)] = [version, mode, cache_key, value_json]
        upserts.append((thread_id, lane_id, version, mode, cache_key, value_json, now))
        history.append((thread_id, lane_id, version, mode, cache_key, value_json,
                        None if mode == "snapshot" else dumps(delta), contents, now))
        written.append((thread_id, lane_id, version, mode, cache_key, value_json, now))
    if upserts:
        yield Statement(d.sql(_UPSERT), upserts, many=True)
        yield Statement(d.sql(_HISTORY), history, many=True)
    return written
