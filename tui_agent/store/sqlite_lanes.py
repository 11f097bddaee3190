"""State lanes' queries on SQLite (the lanes half of ``SqliteStore``).

A lane's current value is materialised in ``state_lanes`` (one row whatever its history) and
every version is kept in ``state_lane_history``; a put is one ``BEGIN IMMEDIATE`` transaction, so
concurrent puts get consecutive versions. Checked by ``tests/test_state_lanes.py`` and
``tests/test_store_contract.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from tui_agent.store.codec import dumps, loads
from tui_agent.store.records import StateLane, StateLaneVersion, to_datetime

_COLUMNS = "thread_id, lane_id, version, mode, cache_key, value, updated_at"


def _lane(row: Sequence[Any]) -> StateLane:
    return StateLane(
        thread_id=row[0], id=row[1], version=row[2], mode=row[3], cache_key=row[4],
        value=loads(row[5]), updated_at=to_datetime(row[6]),
    )


class SqliteStateLanes:
    """The state-lane methods of the store contract, on ``fetchall``/``fetchone``/
    ``transaction`` (``SqliteStore`` provides them)."""

    fetchall: Callable[..., Any]
    fetchone: Callable[..., Any]
    transaction: Callable[[], AbstractAsyncContextManager[Any]]

    async def list_state_lanes(self, thread_id: str) -> list[StateLane]:
        rows = await self.fetchall(
            f"SELECT {_COLUMNS} FROM state_lanes WHERE thread_id=? ORDER BY lane_id",
            (thread_id,),
        )
        return [_lane(row) for row in rows]

    async def get_state_lane(self, thread_id: str, lane_id: str) -> StateLane | None:
        row = await self.fetchone(
            f"SELECT {_COLUMNS} FROM state_lanes WHERE thread_id=? AND lane_id=?",
            (thread_id, lane_id),
        )
        return None if row is None else _lane(row)

    async def state_lane_history(
        self, thread_id: str, lane_id: str, limit: int = 50
    ) -> list[StateLaneVersion]:
        rows = await self.fetchall(
            f"SELECT {_COLUMNS}, delta, contents FROM state_lane_history"
            " WHERE thread_id=? AND lane_id=? ORDER BY version DESC LIMIT ?",
            (thread_id, lane_id, limit),
        )
        return [
            StateLaneVersion(**_lane(row).model_dump(), delta=loads(row[7]), contents=row[8])
            for row in rows
        ]

    async def put_state_lane(
        self, thread_id: str, lane_id: str, *, mode: str, cache_key: str,
        new_value: Callable[[Any], Any], delta: Any, contents: str,
    ) -> int | None:
        now = time.time()
        async with self.transaction() as db:
            rows = await db.execute_fetchall(
                "SELECT version, mode, cache_key, value FROM state_lanes"
                " WHERE thread_id=? AND lane_id=?",
                (thread_id, lane_id),
            )
            if rows and rows[0][1] == mode and rows[0][2] == cache_key:
                return None
            version = rows[0][0] + 1 if rows else 1
            value_json = dumps(new_value(loads(rows[0][3]) if rows else None))
            await db.execute(
                "INSERT INTO state_lanes(thread_id, lane_id, version, mode, cache_key, value,"
                " updated_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT(thread_id, lane_id) DO UPDATE"
                " SET version=excluded.version, mode=excluded.mode,"
                " cache_key=excluded.cache_key, value=excluded.value,"
                " updated_at=excluded.updated_at",
                (thread_id, lane_id, version, mode, cache_key, value_json, now),
            )
            await db.execute(
                "INSERT INTO state_lane_history(thread_id, lane_id, version, mode, cache_key,"
                " value, delta, contents, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                (thread_id, lane_id, version, mode, cache_key, value_json,
                 None if mode == "snapshot" else dumps(delta), contents, now),
            )
        return version
