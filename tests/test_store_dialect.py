"""The statement table and the role doors (``tui_agent/store/dialect.py``, ``roles.py``):
one statement, written once, spelled right for each engine; a store's methods are its role
objects'. The statements themselves run in the contract suite on both stores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tui_agent.store.codec import new_id
from tui_agent.store.contract import Store
from tui_agent.store.dialect import POSTGRES, SQLITE
from tui_agent.store.records import NotificationRecord
from tui_agent.store.roles import Door

pytestmark = pytest.mark.both_stores
T, R = "thread", "resource"


def test_postgres_numbers_placeholders_and_fills_its_slots() -> None:
    sql = POSTGRES.sql("SELECT 1 FROM leases WHERE thread_id=? AND expires_at > {now} AND x=?")
    assert sql == (
        "SELECT 1 FROM leases WHERE thread_id=$1 AND expires_at >"
        " extract(epoch from clock_timestamp())::double precision AND x=$2"
    )
    assert POSTGRES.now_args() == ()


def test_sqlite_keeps_question_marks_and_takes_the_callers_clock() -> None:
    sql = SQLITE.sql("SELECT 1 FROM leases WHERE thread_id=? AND expires_at > {now}")
    assert sql == "SELECT 1 FROM leases WHERE thread_id=? AND expires_at > ?"
    (now,) = SQLITE.now_args()
    assert abs(now - datetime.now(UTC).timestamp()) < 60


def test_braces_that_are_not_slots_are_left_alone() -> None:
    """A JSON path such as ``'{usage,input_tokens}'`` is SQL, not a slot."""
    sql = POSTGRES.sql(f"SELECT {POSTGRES.usage('input_tokens')} FROM events WHERE id=?")
    assert "'{usage,input_tokens}'" in sql and sql.endswith("id=$1")
    assert "'$.usage.input_tokens'" in SQLITE.sql(f"SELECT {SQLITE.usage('input_tokens')}")


def test_a_door_named_other_than_its_method_is_refused() -> None:
    class Roles:
        async def claim(self) -> None: ...

    with pytest.raises(TypeError, match=r"opens onto inbox\.claim"):
        Door("inbox", Roles.claim).__set_name__(Roles, "take")  # as ``take = Door(...)`` does


async def test_a_store_method_is_its_role_objects(stores: Any) -> None:
    store = stores()
    assert store.list_notifications == store.inbox.list_notifications
    assert store.get_thread == store.log.get_thread
    assert store.put_state_lane == store.lanes.put_state_lane
    assert isinstance(store, Store)


async def test_claimed_records_come_back_oldest_first(stores: Any) -> None:
    """Records saved newest first (so SQLite's RETURNING would give them in the reverse
    order): the claim hands them back oldest first, on both stores."""
    store = stores()
    await store.ensure_thread(T, R)
    due = datetime.fromtimestamp(100.0, UTC)
    created = [500.0, 400.0, 300.0, 200.0]
    for when in created:
        record = NotificationRecord(
            id=new_id(), thread_id=T, resource_id=R, source="ci", kind="build",
            priority="low", status="pending", summary=f"at {when}", deliver_at=due,
            created_at=datetime.fromtimestamp(when, UTC),
            updated_at=datetime.fromtimestamp(when, UTC),
        )
        await store.save_notification(record, merge=False, now=when, claim_token=None,
                                      claim_expires_at=None)
    claimed = await store.claim_due_notifications("t", due_at=1000.0, now=1000.0,
                                                  expires_at=1060.0, limit=10)
    assert [r.summary for r in claimed] == [f"at {w}" for w in sorted(created)]
