"""The notification inbox sidebar: what a record shows, filters and search, each action by key
and by mouse (one record and a multi-selection), open → the thread's pane scrolled to the
delivery, live changes from another store connection (another process's view of the file), an
urgent toast, unread counts in the pane header and the pane bar, a failed delivery.

Records are made through the agent's API with a ``decide`` policy that reads the action from
the record's metadata (no model is woken): ``defer`` leaves a record pending, ``persist``
delivers it into the thread's history, ``discard`` discards it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers.app import AppFactory, typed_ahead, until
from helpers.common import AgentFactory, StoreFactory
from textual.app import App, ComposeResult
from textual.widgets import Input
from textual.widgets._toast import Toast

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.app import app as app_module
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.widgets.composer import Identity
from tui_agent.app.widgets.inbox_list import InboxList
from tui_agent.app.widgets.inbox_sidebar import InboxSidebar
from tui_agent.app.widgets.pane_header import PaneHeader, render_header
from tui_agent.notifications.dispatcher import dispatch_due
from tui_agent.testing import ScriptedModel

R = "me"
LATER = datetime(2100, 1, 1, tzinfo=UTC)  # a deferred record stays pending


def by_metadata(record: Any, thread_state: str) -> Any:
    """The action named in the record's metadata (default: defer, i.e. stay pending)."""
    action = record.metadata.get("action", "defer")
    return {"action": "defer", "deliver_at": LATER} if action == "defer" else action


MANUAL = {"dispatch_interval_s": 3600, "dispatch_on_change": False}  # dispatch_due by hand
POLICY = {**MANUAL, "delivery_policy": {"decide": by_metadata}}


async def notify(agent: Agent, summary: str, *, priority: str = "medium", source: str = "ci",
                 kind: str = "build", thread: str = "main", action: str = "defer",
                 **extra: Any) -> Any:
    result = await agent.send_notification_signal(
        {"source": source, "kind": kind, "summary": summary, "priority": priority,
         "metadata": {"action": action}, **extra}, resource_id=R, thread_id=thread)
    return result["record"]


def inbox(app: TuiAgentApp) -> InboxSidebar:
    return app.query_one(InboxSidebar)


def summaries(app: TuiAgentApp) -> list[str]:
    return [record.summary for record in inbox(app).inbox_list.rows]


def screen_text(widget: InboxList) -> list[str]:
    """The list's lines as painted (only what is in view)."""
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


async def open_inbox(pilot: Any, shown: int | None = None) -> InboxSidebar:
    """f2, then until every record is read (and ``shown`` rows are listed)."""
    app = pilot.app
    await until(pilot, lambda: all(p.feed.attached for p in app.panes), "the panes subscribed")
    if app.panes:  # the pane's composer takes the focus once: let it, before f2
        await until(pilot, lambda: app.focused is not None, "the composer focused")
    await pilot.press("f2")
    sidebar = inbox(app)
    await until(pilot, lambda: sidebar.display and sidebar.feed.loaded, "the inbox read")
    if shown is not None:
        await until(pilot, lambda: len(sidebar.inbox_list.rows) == shown, f"{shown} rows")
    await until(pilot, lambda: app.focused is sidebar.inbox_list, "the inbox list focused")
    return sidebar


async def status_of(agent: Agent, record: Any) -> str:
    fresh = await agent.memory.get_notification(record.id)
    return fresh.status


async def statuses(agent: Agent, records: list[Any]) -> list[str]:
    return [await status_of(agent, record) for record in records]


# -- what a record shows -------------------------------------------------------------------------
async def test_each_record_shows_priority_source_kind_count_status_thread_and_age(
    make_app: AppFactory,
) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    await notify(agent, "disk almost full", priority="low", source="ops", kind="disk")
    await notify(agent, "build 7 failed", priority="urgent", coalesce_key="b", thread="other")
    await notify(agent, "build 8 failed", priority="urgent", coalesce_key="b", thread="other")
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=2)
        sidebar.clock = lambda: time.time() + 125  # two minutes on
        sidebar.inbox_list.refresh()
        await pilot.pause()
        lines = screen_text(sidebar.inbox_list)
        # newest first: the merged urgent record (×2, the newest summary) on top
        assert lines[0].startswith("▸☐ ‼ urgent ci/build ×2") and lines[0].endswith(" 2m")
        assert lines[1].split() == ["◌", "pending", "·", "other", "·", "build", "8", "failed"]
        assert lines[2].startswith(" ☐ · low    ops/disk") and lines[2].endswith(" 2m")
        assert "◌ pending · main · disk almost full" in lines[3]


async def test_newest_first_or_by_priority(make_app: AppFactory) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    for priority in ("high", "low", "urgent", "medium"):
        await notify(agent, f"{priority} one", priority=priority)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_inbox(pilot, shown=4)
        assert summaries(app) == ["medium one", "urgent one", "low one", "high one"]
        await pilot.press("o")
        assert summaries(app) == ["urgent one", "high one", "medium one", "low one"]


# -- actions by key ------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "status"), [("s", "seen"), ("d", "dismissed"),
                                             ("a", "archived")])
async def test_a_key_marks_the_cursors_record(make_app: AppFactory, key: str,
                                              status: str) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    older = await notify(agent, "older")
    newer = await notify(agent, "newer")
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=2)
        await pilot.press("down", key)  # the cursor starts on the newest
        await until(pilot, lambda: sidebar.feed.records[older.id].status == status, status)
        assert await statuses(agent, [older, newer]) == [status, "pending"]
        if status == "seen":  # seen stays in the default view, in its place, its age kept
            assert summaries(app) == ["newer", "older"]
            fresh = sidebar.feed.records[older.id]
            assert fresh.updated_at > older.updated_at
            assert sidebar.inbox_list.changed_at(fresh) == older.updated_at
        else:
            await until(pilot, lambda: summaries(app) == ["newer"], f"{status} left the view")


async def test_space_and_shift_arrows_mark_several_and_an_action_takes_them_all(
    make_app: AppFactory,
) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    records = [await notify(agent, f"n{i}") for i in range(5)]  # shown n4 … n0
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=5)
        await pilot.press("space", "down")  # n4 marked, n3 skipped
        await pilot.press("shift+down")  # n2 and n1 marked
        assert sidebar.inbox_list.marked == {records[4].id, records[2].id, records[1].id}
        await pilot.press("a")
        await until(pilot, lambda: summaries(app) == ["n3", "n0"], "three archived")
        assert await statuses(agent, records) == ["pending", "archived", "archived",
                                                  "pending", "archived"]
        assert not sidebar.inbox_list.marked  # the marks went with the action
        await pilot.press("escape")  # nothing marked: nothing happens
        await pilot.press("home", "space", "space", "s")  # n3 and n0 marked, then seen
        await until(pilot, lambda: all(sidebar.feed.records[r.id].status == "seen"
                                       for r in (records[0], records[3])), "both seen")


async def test_escape_clears_the_marks(make_app: AppFactory) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    first = await notify(agent, "first")
    await notify(agent, "second")
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=2)
        await pilot.press("space")
        assert sidebar.inbox_list.marked
        await pilot.press("escape", "down", "d")  # only the cursor's record now
        await until(pilot, lambda: summaries(app) == ["second"], "first dismissed")
        assert await status_of(agent, first) == "dismissed"


# -- the mouse -----------------------------------------------------------------------------------
def label_offset(sidebar: InboxSidebar, selector: str, label: str) -> tuple[int, int]:
    """Where ``label`` is in a bar of clickable labels (its padding is one cell)."""
    bar = sidebar.query_one(selector)
    lines = str(bar.render()).splitlines()
    for y, line in enumerate(lines):
        if label in line:
            return 1 + line.index(label), y
    raise AssertionError(f"{label!r} not in {lines}")


async def test_the_mouse_marks_two_boxes_and_clicks_seen(make_app: AppFactory) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    records = [await notify(agent, f"n{i}") for i in range(3)]  # shown n2, n1, n0 (2 lines each)
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=3)
        await pilot.click(InboxList, offset=(1, 0))  # n2's box
        await pilot.click(InboxList, offset=(1, 4))  # n0's box
        assert sidebar.inbox_list.marked == {records[2].id, records[0].id}
        await pilot.click("#inbox-actions", offset=label_offset(sidebar, "#inbox-actions",
                                                                 "s seen"))
        await until(pilot, lambda: [sidebar.feed.records[r.id].status for r in records]
                    == ["seen", "pending", "seen"], "n2 and n0 seen")
        await pilot.click(InboxList, offset=(10, 2))  # n1's row: the cursor moves there
        assert sidebar.inbox_list.current is not None
        assert sidebar.inbox_list.current.id == records[1].id
        await pilot.click("#inbox-filters", offset=label_offset(sidebar, "#inbox-filters",
                                                                 "t open"))
        assert sidebar.query_state.status == "unread"
        await until(pilot, lambda: summaries(app) == ["n1"], "only the unread one")


async def test_a_double_click_opens_the_records_thread(make_app: AppFactory) -> None:
    app = make_app(notifications=POLICY)
    await notify(app.config.agent, "over there", thread="elsewhere")
    async with app.run_test(size=(160, 48)) as pilot:
        await open_inbox(pilot, shown=1)
        await pilot.click(InboxList, offset=(10, 0), times=2)
        await until(pilot, lambda: [p.thread_id for p in app.panes] == ["main", "elsewhere"],
                    "the thread opened in a second pane")


# -- open ----------------------------------------------------------------------------------------
def messages(what: str, count: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{what} message {i}"} for i in range(count)]


@pytest.mark.parametrize("after", [40, 90], ids=["a-page-back", "two-pages-back"])
async def test_enter_opens_the_thread_scrolled_to_where_it_was_delivered(
    make_app: AppFactory, after: int,
) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    await agent.memory.save_messages(messages("earlier", 30), thread_id="ops", resource_id=R)
    delivered = await notify(agent, "deploy failed", priority="urgent", thread="ops",
                             action="persist")
    assert delivered.status == "delivered"
    await agent.memory.save_messages(messages("later", after), thread_id="ops", resource_id=R)
    pending = await notify(agent, "not yet", thread="ops")
    async with app.run_test(size=(160, 48)) as pilot:
        await open_inbox(pilot, shown=2)
        await pilot.press("down", "enter")  # the delivered one (the pending one is newer)
        await until(pilot, lambda: len(app.panes) == 2, "the ops thread opened")
        pane = app.panes[1]
        assert pane.thread_id == "ops" and pane.focused
        await until(pilot, lambda: "delivered here" in str(
            pane.query_one("#pane-status").render()), "the pane scrolled to the delivery")
        view = pane.transcript_view()
        line = next(w for w in view.children if "deploy failed" in str(w.render()))
        top = line.virtual_region.y
        assert view.scroll_y <= top < view.scroll_y + view.size.height, "the line is in view"
        assert 0 < view.scroll_y < view.max_scroll_y, "between the earlier and later messages"
        # open again, the pending record: same pane, focused, nothing to scroll to
        app.query_one(InboxList).focus()
        await pilot.press("up", "enter")
        await until(pilot, lambda: "was not delivered (pending)" in str(
            pane.query_one("#pane-status").render()), "the pane says it was not delivered")
        assert len(app.panes) == 2
        assert await status_of(agent, pending) == "pending"  # opening does not mark it seen


async def test_open_on_a_multi_selection_opens_each_thread(make_app: AppFactory) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    for thread in ("a", "b", "c"):
        await notify(agent, f"on {thread}", thread=thread)
    async with app.run_test(size=(160, 48)) as pilot:
        await open_inbox(pilot, shown=3)
        await pilot.press("space", "down", "space", "enter")  # c and a
        await until(pilot, lambda: [p.thread_id for p in app.panes] == ["main", "c", "a"],
                    "two panes opened")


# -- filters and search --------------------------------------------------------------------------
async def test_filters_by_priority_status_source_and_my_panes(make_app: AppFactory) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    await notify(agent, "low ci", priority="low")
    await notify(agent, "high github", priority="high", source="github", thread="other")
    seen = await notify(agent, "urgent ci", priority="urgent")
    await agent.memory.mark_notification_seen(seen.id)
    await notify(agent, "dropped", action="discard")
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=3)  # open: discarded is not shown
        assert summaries(app) == ["urgent ci", "high github", "low ci"]
        await pilot.press("p")  # ≥ medium
        assert summaries(app) == ["urgent ci", "high github"]
        await pilot.press("p", "p")  # ≥ high, then urgent only
        assert summaries(app) == ["urgent ci"]
        await pilot.press("p")  # all again
        await pilot.press("t")  # unread: not the seen one
        assert summaries(app) == ["high github", "low ci"]
        await pilot.press(*"t" * 6)  # pending, delivered, seen, dismissed, archived, discarded
        assert sidebar.query_state.status == "discarded"
        assert summaries(app) == ["dropped"]
        await pilot.press("t", "t")  # failed, then all
        assert len(summaries(app)) == 4
        await pilot.press("c")  # the first source: ci
        assert summaries(app) == ["dropped", "urgent ci", "low ci"]
        await pilot.press("c", "c")  # github, then all sources
        assert sidebar.query_state.source is None
        await pilot.press("m")  # only the threads in my panes: main
        assert summaries(app) == ["dropped", "urgent ci", "low ci"]
        app.open_pane(R, "other")
        await until(pilot, lambda: len(summaries(app)) == 4, "other's record, once it has a pane")


async def test_search_as_you_type_goes_through_search_notifications(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    await notify(agent, "Deploy to prod failed", kind="deploy")
    await notify(agent, "build 12 passed")
    await notify(agent, "someone mentioned you", source="slack", kind="mention")
    queries: list[str] = []
    search = agent.memory.search_notifications

    async def counted(query: str, **options: Any) -> Any:
        queries.append(query)
        return await search(query, **options)

    monkeypatch.setattr(agent.memory, "search_notifications", counted)
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=3)
        await pilot.press("slash")
        field = sidebar.query_one("#inbox-search", Input)
        assert app.focused is field
        await pilot.press(*"DEPLOY")  # any case; summary or kind
        await until(pilot, lambda: summaries(app) == ["Deploy to prod failed"], "one match")
        assert queries[-1] == "DEPLOY" and len(queries) >= 2  # searched as it was typed
        await pilot.press(*"xyz")
        await until(pilot, lambda: summaries(app) == [], "no match")
        field.value = "slack"  # the source matches too
        await until(pilot, lambda: summaries(app) == ["someone mentioned you"], "by source")
        await pilot.press("enter")
        assert app.focused is sidebar.inbox_list
        await pilot.press("s")  # the actions take the search's results
        await until(pilot, lambda: summaries(app) == ["someone mentioned you"]
                    and sidebar.inbox_list.rows[0].status == "seen", "seen, still matching")
        field.value = ""
        await until(pilot, lambda: len(summaries(app)) == 3, "everything again")


async def test_words_typed_right_after_the_slash_go_into_the_search_not_to_the_list(
    make_app: AppFactory,
) -> None:
    """"/deploy" in one burst searches for "deploy": with the focus moved later, its "d"
    dismissed the cursor's record and its "p" cycled the priority filter. A "/" typed in the
    search field is a "/" there."""
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    records = [await notify(agent, "Deploy to prod failed", kind="deploy"),
               await notify(agent, "build 12 passed")]
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=2)
        await typed_ahead(pilot, "slash", *"deploy")
        field = sidebar.query_one("#inbox-search", Input)
        await until(pilot, lambda: summaries(app) == ["Deploy to prod failed"], "one match")
        assert field.value == "deploy" and app.focused is field
        assert await statuses(agent, records) == ["pending", "pending"]  # none dismissed
        await typed_ahead(pilot, "slash")
        assert field.value == "deploy/"


# -- live ----------------------------------------------------------------------------------------
async def test_records_from_another_store_connection_appear_and_update(
    make_app: AppFactory, agents: AgentFactory, stores: StoreFactory,
) -> None:
    app = make_app(notifications=POLICY)
    path = app.config.agent.memory.store.path
    other = agents(name="elsewhere", model=ScriptedModel(replies=["ok"]),
                   memory=Memory(store=stores(path)), notifications=POLICY)
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=0)
        first = await notify(other, "build 1 failed", coalesce_key="build", thread="ci")
        await until(pilot, lambda: summaries(app) == ["build 1 failed"], "created elsewhere")
        await notify(other, "build 2 failed", coalesce_key="build", thread="ci")
        await until(pilot, lambda: summaries(app) == ["build 2 failed"]
                    and sidebar.inbox_list.rows[0].coalesced_count == 2, "merged elsewhere")
        assert "×2" in screen_text(sidebar.inbox_list)[0]
        await other.memory.mark_notification_seen(first.id)
        await until(pilot, lambda: sidebar.inbox_list.rows[0].status == "seen", "seen elsewhere")
        delivered = await notify(other, "shipped", thread="ci", action="persist")
        await until(pilot, lambda: sidebar.feed.records.get(delivered.id) is not None
                    and sidebar.feed.records[delivered.id].status == "delivered", "delivered")
        summarised = await notify(other, "chatter", priority="low", source="slack",
                                  thread="ci", action="summarize")
        await until(pilot, lambda: (r := sidebar.feed.records.get(summarised.id)) is not None
                    and r.summarized_at is not None, "summarised elsewhere")
        await until(pilot, lambda: "◌ pending, summarised · ci · chatter" in "\n".join(
            screen_text(sidebar.inbox_list)), "the summarised record on screen")


async def test_an_urgent_record_shows_a_toast(
    make_app: AppFactory, agents: AgentFactory, stores: StoreFactory,
) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    await notify(agent, "old news", priority="urgent")  # there before: no toast
    other = agents(name="elsewhere", model=ScriptedModel(replies=["ok"]),
                   memory=Memory(store=stores(agent.memory.store.path)), notifications=POLICY)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await until(pilot, lambda: inbox(app).feed.loaded, "the inbox read (hidden)")
        await notify(other, "the medium one", priority="medium")
        await notify(other, "prod is down", priority="urgent", source="pager", kind="page")

        def toasts() -> list[str]:
            return [str(toast.render()) for toast in app.screen.query(Toast)]

        await until(pilot, lambda: any("prod is down" in t for t in toasts()), "a toast")
        assert len(toasts()) == 1, toasts()
        assert "urgent · pager/page · main" in toasts()[0]


async def test_unread_counts_in_the_pane_header_the_pane_bar_and_the_title(
    make_app: AppFactory,
) -> None:
    app = make_app(notifications=POLICY)
    agent = app.config.agent
    first = await notify(agent, "one")
    await notify(agent, "two", action="persist")  # delivered is still unread
    await notify(agent, "elsewhere", thread="other")
    async with app.run_test(size=(160, 48)) as pilot:
        pane = app.panes[0]
        header = pane.query_one(PaneHeader)
        await until(pilot, lambda: pane.header_state.unread == 2, "two unread on main")
        assert "✉ 2 unread" in render_header(pane.header_state, 0.0).plain
        assert "✉ 2 unread" in str(header.render())
        assert "me/main ✉2" in str(app.query_one("#pane-bar").render())
        sidebar = await open_inbox(pilot, shown=3)
        assert "3 unread" in str(sidebar.query_one("#inbox-title").render())
        await agent.memory.mark_notification_seen(first.id)  # this process, not the sidebar
        await until(pilot, lambda: pane.header_state.unread == 1, "one unread on main")
        await until(pilot, lambda: "2 unread" in str(sidebar.query_one("#inbox-title")
                                                      .render()), "the title counts 2")
        app.open_pane(R, "other")
        assert app.panes[1].header_state.unread == 1  # a pane opened later has its count
        await pilot.press("m")  # the title counts only the threads in panes… all of them here
        assert "2 unread" in str(sidebar.query_one("#inbox-title").render())


class BrokenAgent(Agent):
    """An agent whose signal routing fails: every delivery attempt fails."""

    def send_signal(self, signal: Any, **target: Any) -> Any:
        raise RuntimeError("routing is down")


async def test_a_failed_delivery_shows_its_attempts_and_last_error(
    make_app: AppFactory, agents: AgentFactory, stores: StoreFactory,
) -> None:
    app = make_app(notifications=POLICY)
    broken = agents(BrokenAgent, name="broken", model=ScriptedModel(replies=["ok"]),
                    memory=Memory(store=stores(app.config.agent.memory.store.path)),
                    notifications=MANUAL)
    async with app.run_test(size=(160, 48)) as pilot:
        sidebar = await open_inbox(pilot, shown=0)
        result = await broken.send_notification_signal(
            {"source": "ci", "kind": "deploy", "summary": "deploy failed", "priority": "urgent"},
            resource_id=R, thread_id="main")
        record_id = result["record"].id
        await until(pilot, lambda: summaries(app) == ["deploy failed"], "the record")
        await until(pilot, lambda: sidebar.feed.records[record_id].delivery_attempts == 1,
                    "one failed attempt")
        # the feed has read it; the list shows it at its next refresh (not the same moment)
        await until(pilot, lambda: "✗ 1 attempt · RuntimeError: routing is down" in screen_text(
            sidebar.inbox_list)[2], "the attempt on screen")
        now = time.time()
        for _ in range(6):  # retried until it gives up
            now += 120
            await dispatch_due(broken, now=now)
        await until(pilot, lambda: sidebar.feed.records[record_id].status == "failed", "failed")
        await until(pilot, lambda: "✗ 5 attempts" in screen_text(sidebar.inbox_list)[2],
                    "the last attempt on screen")
        lines = screen_text(sidebar.inbox_list)
        assert "✗ failed · main · deploy failed" in lines[1]
        assert "✗ 5 attempts · RuntimeError: routing is down" in lines[2]
        await until(pilot, lambda: "5 delivery attempts, last error: RuntimeError: routing is "
                    "down" in str(sidebar.query_one("#inbox-detail").render()), "the detail")


# -- the app around it ---------------------------------------------------------------------------
async def test_f2_shows_and_hides_the_inbox_and_the_palette_has_it(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.panes and app.panes[0].feed.attached, "the pane")
        sidebar = inbox(app)
        assert not sidebar.display
        await pilot.press("f2")
        await until(pilot, lambda: sidebar.display and app.focused is sidebar.inbox_list,
                    "the inbox shown and focused")
        app.panes[0].focus_composer()  # shown, the focus elsewhere: f2 focuses it
        await until(pilot, lambda: app.focused is not None
                    and app.panes[0] in app.focused.ancestors, "focus in the pane")
        await pilot.press("f2")
        await until(pilot, lambda: sidebar.display and app.focused is sidebar.inbox_list,
                    "the inbox focused again")
        await pilot.press("f2")
        await until(pilot, lambda: not sidebar.display, "the inbox hidden")
        await until(pilot, lambda: app.focused is not None
                    and app.panes[0] in app.focused.ancestors, "focus back in the pane")
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert {"Toggle inbox", "Inbox: only my panes"} <= set(titles)
        bindings = {b.id for b in [*TuiAgentApp.BINDINGS, *InboxSidebar.BINDINGS,
                                   *InboxList.BINDINGS]}  # type: ignore[union-attr]
        assert None not in bindings


async def test_the_demo_opens_with_the_inbox_shown(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(TuiAgentApp, "_run_demo", lambda app: None)  # its feed is not the point
    app = make_app()
    app.config.demo = True
    app.config.show_inbox = True  # the settings' default (tui_agent/settings.py)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: inbox(app).display, "the inbox shown")


# -- what the feed reads (Memory) ----------------------------------------------------------------
async def test_notification_changes_pages_through_each_change_once(
    agents: AgentFactory, memory: Memory,
) -> None:
    agent = agents(model=ScriptedModel(replies=["ok"]), memory=memory, notifications=POLICY)
    made = [await notify(agent, f"n{i}") for i in range(5)]
    async with memory.store.transaction() as db:  # one timestamp for three: paging still works
        await db.execute("UPDATE notifications SET updated_at=? WHERE summary IN"
                         " ('n1', 'n2', 'n3')", (made[1].updated_at.timestamp(),))
    seen_ids, cursor, pages = [], None, 0
    while True:
        page, cursor = await memory.notification_changes(cursor, limit=2)
        seen_ids += [record.id for record in page]
        pages += 1
        if len(page) < 2:
            break
    assert sorted(seen_ids) == sorted(r.id for r in made) and pages == 3
    assert (await memory.notification_changes(cursor))[0] == []  # nothing new
    await memory.mark_notification_seen(made[0].id)
    changed, _ = await memory.notification_changes(cursor)
    assert [(r.id, r.status) for r in changed] == [(made[0].id, "seen")]


async def test_change_marker_moves_on_a_commit_here_or_elsewhere(
    agents: AgentFactory, memory: Memory, stores: StoreFactory,
) -> None:
    agent = agents(model=ScriptedModel(replies=["ok"]), memory=memory, notifications=POLICY)
    other = Memory(store=stores(memory.store.path))
    first = await memory.change_marker()
    assert await memory.change_marker() == first  # nothing committed: the same
    record = await notify(agent, "here")
    second = await memory.change_marker()
    assert second != first
    await other.mark_notification_seen(record.id)  # another connection's commit
    assert await memory.change_marker() != second


# -- snapshots -----------------------------------------------------------------------------------
# The inbox at 160×48 on both themes: every priority and every status (a failed delivery
# among them), then the cursor on the failed one (its attempts and last error in full). The
# store is written before the app starts, on a loop of its own, with the records' times fixed
# (ages are read against the sidebar's clock, frozen at NOW).
NOW = 1_800_000_000.0
THEMES = {"dark": "tui-agent-dark", "light": "tui-agent-light"}
SNAP_RECORDS = [  # summary, priority, source, kind, thread, action, repeats
    ("Pager: the API answers 503 on every request", "urgent", "pager", "page", "ops",
     "defer", 3),
    ("Build #512 failed on main: test_checkout timed out", "high", "ci", "build_failed",
     "main", "persist", 1),
    ("Review requested on #42: simplify the signals API", "medium", "github",
     "review_requested", "main", "seen", 1),
    ("5 new messages in #release", "low", "slack", "mention", "team", "summarize", 5),
    ("Weekly digest: 12 threads", "medium", "email", "digest", "team", "dismiss", 1),
    ("Comment on #40: LGTM", "low", "github", "comment", "main", "archive", 1),
    ("New post on the status blog", "low", "rss", "item", "team", "discard", 1),
]
SNAP_AGES = [8, 180, 840, 2400, 7200, 18000, 172800, 60]  # seconds; the last: the failed one


async def write_snapshot_store(path: Path) -> None:
    store = SqliteStore(path)
    agent = Agent(name="demo", instructions="x", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store=store), notifications=POLICY)
    broken = BrokenAgent(name="broken", instructions="x", model=ScriptedModel(replies=["ok"]),
                         memory=Memory(store=store), notifications=MANUAL)
    ids = []
    for summary, priority, source, kind, thread, action, repeats in SNAP_RECORDS:
        send = {"defer": "defer", "persist": "persist", "summarize": "summarize",
                "discard": "discard"}.get(action, "defer")
        for _ in range(repeats):
            record = await notify(agent, summary, priority=priority, source=source, kind=kind,
                                  thread=thread, action=send, coalesce_key=summary)
        if action in ("seen", "dismiss", "archive"):
            await getattr(agent.memory, {"seen": "mark_notification_seen",
                                         "dismiss": "dismiss_notification",
                                         "archive": "archive_notification"}[action])(record.id)
        ids.append(record.id)
    failed = await broken.send_notification_signal(
        {"source": "ci", "kind": "deploy", "summary": "Deploy of v1.4 to production",
         "priority": "urgent"}, resource_id=R, thread_id="ops")
    now = time.time()
    for _ in range(6):
        now += 120
        await dispatch_due(broken, now=now)
    ids.append(failed["record"].id)
    async with store.transaction() as db:  # fixed times, by SNAP_AGES
        for record_id, age in zip(ids, SNAP_AGES, strict=True):
            at = NOW - age
            await db.execute(
                "UPDATE notifications SET created_at=?, updated_at=?, delivered_at=CASE WHEN"
                " delivered_at IS NULL THEN NULL ELSE ? END, summarized_at=CASE WHEN"
                " summarized_at IS NULL THEN NULL ELSE ? END WHERE id=?",
                (at - 600, at, at + 5, at + 5, record_id))
    await broken.close()
    await agent.close()
    await store.close()


class SnapApp(TuiAgentApp):
    """The app, closing its agent and store on its own loop when it exits."""

    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))

    async def on_unmount(self) -> None:
        await self.config.agent.close(timeout=5.0)
        await self.config.agent.memory.store.close()


def snapshot_app(tmp_path: Path) -> SnapApp:
    path = tmp_path / "inbox.sqlite"
    asyncio.run(write_snapshot_store(path))
    agent = Agent(name="demo", instructions="x", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store=SqliteStore(path)), notifications=POLICY)
    config = AppConfig(agent=agent, threads=[(R, "main")], identity=Identity("zoe", {}),
                       agent_label="demo", model_label="scripted", default_resource=R,
                       warm_model=False)
    return SnapApp(config)


async def show_every_status(pilot: Any, theme: str) -> InboxSidebar:
    app = pilot.app
    app.animation_level = "none"
    app.theme = THEMES[theme]
    sidebar = await open_inbox(pilot, shown=5)  # open: 8 records less dismissed, archived…
    sidebar.clock = lambda: NOW
    await pilot.press(*"t" * 9)  # …then all of them
    assert sidebar.query_state.status == "all"
    await until(pilot, lambda: len(sidebar.inbox_list.rows) == 8, "every record")
    await pilot.press("home")
    await until(pilot, lambda: app.panes[0].drained, "the pane drawn")
    return sidebar


@pytest.mark.parametrize("theme", list(THEMES))
def test_snapshot_every_priority_and_status(snap_compare: Any, tmp_path: Path,
                                            theme: str) -> None:
    async def run_before(pilot: Any) -> None:
        sidebar = await show_every_status(pilot, theme)
        assert sidebar.inbox_list.current is not None
        assert sidebar.inbox_list.current.source == "pager"  # the newest, ×3
        await pilot.pause()

    assert snap_compare(snapshot_app(tmp_path), terminal_size=(160, 48), run_before=run_before)


@pytest.mark.parametrize("theme", list(THEMES))
def test_snapshot_a_failed_delivery(snap_compare: Any, tmp_path: Path, theme: str) -> None:
    async def run_before(pilot: Any) -> None:
        sidebar = await show_every_status(pilot, theme)
        await pilot.press("down")  # the second newest: the failed deploy
        assert sidebar.inbox_list.current is not None
        assert sidebar.inbox_list.current.status == "failed"
        await pilot.pause()

    assert snap_compare(snapshot_app(tmp_path), terminal_size=(160, 48), run_before=run_before)


# -- the list's scrolling ----------------------------------------------------------------------


@dataclass
class Row:
    """A record as the list reads it."""

    id: str
    summary: str
    thread_id: str = "t1"
    resource_id: str = "r"
    source: str = "ci"
    kind: str = "build"
    priority: str = "low"
    status: str = "pending"
    coalesced_count: int = 1
    created_at: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    updated_at: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    delivered_at: datetime | None = None
    summarized_at: datetime | None = None
    delivery_attempts: int = 0
    last_delivery_error: str | None = None


class ListApp(App[None]):
    def compose(self) -> ComposeResult:
        yield InboxList(clock=lambda: datetime(2026, 1, 1, tzinfo=UTC).timestamp())


async def test_the_list_scrolls_and_its_scrollbar_shows_the_extent_as_records_arrive() -> None:
    app = ListApp()
    async with app.run_test(size=(60, 12)) as pilot:
        listing = app.query_one(InboxList)
        listing.set_rows([Row(f"n{i}", f"build {i}") for i in range(3)])
        await pilot.pause()
        assert not listing.show_vertical_scrollbar, "6 lines fit in 12: no scrollbar"
        listing.set_rows([Row(f"n{i}", f"build {i}") for i in range(30)])
        await pilot.pause()
        bar = listing.vertical_scrollbar
        assert listing.show_vertical_scrollbar
        assert (bar.window_virtual_size, bar.window_size) == (60, 12), "60 lines, 12 in view"
        listing.focus()
        await pilot.press("end")
        await pilot.pause()
        assert listing.scroll_y == listing.max_scroll_y == 48
        assert bar.position == 48, "the thumb at the end"
        assert "build 29" in screen_text(listing)[-1], "the last record in view"
        # more records: the extent follows; the view stays where it was
        listing.set_rows([Row(f"n{i}", f"build {i}") for i in range(40)])
        await pilot.pause()
        assert (bar.window_virtual_size, listing.max_scroll_y) == (80, 68)
        # a layout of the screen that changes nothing in the list leaves its scrollbar alone
        repaints = 0
        repaint = bar.refresh

        def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal repaints
            repaints += 1
            return repaint(*args, **kwargs)

        bar.refresh = counted  # type: ignore[method-assign]
        for _ in range(5):
            app.screen.refresh(layout=True)
            await pilot.pause()
        assert repaints == 0
        bar.refresh = repaint  # type: ignore[method-assign]
        # fewer records: the view comes back within them, and the scrollbar goes
        listing.set_rows([Row(f"n{i}", f"build {i}") for i in range(2)])
        await pilot.pause()
        assert listing.scroll_y == 0 and not listing.show_vertical_scrollbar
        assert "build 0" in screen_text(listing)[1]
