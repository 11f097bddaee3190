"""The app polls nothing on its own: four idle panes and the inbox sidebar make no query while
the store's one shared change poller sees no commit, and wake when another process commits.

Waits are on conditions with a bound (``until``), never sleeps."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import pytest
from helpers.app import AppFactory, until
from helpers.common import AgentFactory, StoreFactory

from tui_agent import Memory
from tui_agent.app import bridge, inbox_feed
from tui_agent.app.widgets.inbox_sidebar import InboxSidebar
from tui_agent.testing import ScriptedModel

R = "me"
# The dispatcher's idle pass is a read on a timer (due times pass without commits): off here, so
# what is counted is what follows the store's changes.
QUIET = {"dispatch_interval_s": 3600, "dispatch_on_change": False}
PENDING = {**QUIET, "delivery_policy": {"decide": lambda r, s: "persist"}}


async def settled(pilot: Any, changes: Any, counted: dict[str, int]) -> None:
    """Until two polls and the views' longest pause between reads (a wake at the end of the
    start is read after it) pass without a query: the start's reads and wakes are done."""
    quiet_s = max(inbox_feed.POLL_S, bridge.WAITING_GAP_S)
    deadline = time.monotonic() + 10.0
    while True:
        queries, target, since = counted["queries"], changes.polls + 2, time.monotonic()
        await until(pilot, lambda t=target, s=since: changes.polls >= t
                    and time.monotonic() - s > quiet_s, "two polls and a pause")
        if counted["queries"] == queries:
            return
        assert time.monotonic() < deadline, "the app kept reading the store"


async def uncounted(read: Any, counted: dict[str, int]) -> Any:
    before = counted["queries"]
    try:
        return await read()
    finally:
        counted["queries"] = before


async def test_four_idle_panes_and_the_inbox_query_nothing_until_another_process_commits(
    make_app: AppFactory, agents: AgentFactory, stores: StoreFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app(threads=[(R, name) for name in ("a", "b", "c", "d")], notifications=QUIET)
    store = app.config.agent.memory.store
    counted = {"queries": 0}
    fetchall = store.fetchall

    async def counting(sql: str, params: Any = ()) -> list[Any]:
        counted["queries"] += 1
        return await fetchall(sql, params)

    monkeypatch.setattr(store, "fetchall", counting)
    # The stranded-signal rescuer's read is on a timer too (an owner's death commits nothing):
    # like the dispatcher's, it is not counted here (its own cost: one indexed read a second).
    monkeypatch.setattr(store, "stranded_threads", partial(uncounted, store.stranded_threads,
                                                           counted))
    changes = app.config.agent.memory.changes
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = app.query_one(InboxSidebar)
        await until(pilot, lambda: len(app.panes) == 4 and all(p.feed.attached for p in app.panes)
                    and sidebar.feed.loaded, "four panes subscribed and the inbox read")
        await settled(pilot, changes, counted)
        queries, polls = counted["queries"], changes.polls
        await until(pilot, lambda: changes.polls >= polls + 3, "three more polls")
        assert counted["queries"] == queries  # idle: nobody read anything
        # subscriptions (their streams and live-run trackers), waiting views, the inbox, the
        # approvals queue, and the app's own as the store's host (ThreadRuntime.host: it answers
        # with no pane open)
        assert changes.watchers == 4 * 2 + 4 + 1 + 1 + 1

        entries = len(app.panes[1].feed.transcript.entries)
        other = agents(name="elsewhere", model=ScriptedModel(replies=["ok"]),
                       memory=Memory(store=stores(store.path)), notifications=PENDING)
        await other.send_notification_signal(
            {"source": "ci", "kind": "build", "summary": "from elsewhere", "priority": "low"},
            resource_id=R, thread_id="b")
        await until(pilot, lambda: any(r.summary == "from elsewhere"
                                       for r in sidebar.feed.records.values()), "the record")
        transcript = app.panes[1].feed.transcript
        await until(pilot, lambda: len(transcript.entries) > entries, "the delivery in pane b")
