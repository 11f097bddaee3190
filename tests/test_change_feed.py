"""The store's one shared change poller (tui_agent/store/changes.py): many subscribers, one
poller; a commit by another process reaches every subscriber, with inotify and without; the
poller stops with the last subscriber; this process's appends arrive without a poll; the search
index catching up (a quiet commit) wakes nobody and is not taken for another process's.

Waits are on conditions with a bound (``until``), never sleeps."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.common import until

import tui_agent.store.sqlite_index as sqlite_index
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.store import changes
from tui_agent.store.changes import ChangeFeed
from tui_agent.store.records import EventIn, MessageIn
from tui_agent.store.wal_watch import WalWatch
from tui_agent.testing import ScriptedModel

R = "res"
BOUND_S = 10.0

WRITER = """
import asyncio, sys
from tui_agent.store.sqlite import EventIn, SqliteStore

async def main(db, thread):
    store = SqliteStore(db)
    await store.append_events(thread, [EventIn("data-test", {"from": "another process"})])
    await store.close()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


class CountingStore(SqliteStore):
    """Counts the queries made through the store (reads and data_version)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.queries = 0

    async def fetchall(self, sql: str, params: Any = ()) -> list[Any]:
        self.queries += 1
        return await super().fetchall(sql, params)


@pytest.fixture(params=["inotify", "polling"])
def hearing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs with the feed hearing the store's writes, and with it polling only."""
    if request.param == "polling":
        monkeypatch.setattr(WalWatch, "open", classmethod(lambda cls, path: None))
    return str(request.param)


def make_agent(agents: Callable[..., Agent], store: SqliteStore) -> Agent:
    return agents(model=ScriptedModel(replies=["ok"]), memory=Memory(store=store))


class Reader:
    """A subscription's stream drained into ``events`` by a task."""

    def __init__(self, sub: Any) -> None:
        self.sub = sub
        self.events: list[dict[str, Any]] = []
        self.task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        async for event in self.sub.stream:
            self.events.append(event)

    def saw(self, event_type: str) -> bool:
        return any(e["type"] == event_type for e in self.events)

    async def close(self) -> None:
        self.sub.unsubscribe()
        await asyncio.wait_for(self.task, BOUND_S)


async def readers(agent: Agent, threads: list[str]) -> list[Reader]:
    subs = [await agent.subscribe_to_thread(resource_id=R, thread_id=t) for t in threads]
    return [Reader(sub) for sub in subs]


async def close_all(found: list[Reader]) -> None:
    for reader in found:
        await reader.close()


def pollers(feed: ChangeFeed) -> list[threading.Thread]:
    """The live poller threads of ``feed``."""
    return [t for t in threading.enumerate() if t.name == "tui-agent change feed"
            and t.is_alive() and getattr(t, "feed", None) is feed]


async def write_from_another_process(db: str, thread: str) -> None:
    command = [sys.executable, "-c", WRITER, db, thread]
    await asyncio.to_thread(subprocess.run, command, check=True, timeout=BOUND_S)


async def test_twenty_subscribers_share_one_poller_and_idle_makes_no_query(
    agents: Callable[..., Agent], tmp_path: Path, hearing: str
) -> None:
    store = CountingStore(tmp_path / "count.db")
    agent = make_agent(agents, store)
    await store.ensure_thread("t0", R)
    found = await readers(agent, [f"t{i}" for i in range(20)])
    feed = ChangeFeed.of(store)
    try:
        # two watches a subscription: its stream's, and its live-run tracker's
        await until(lambda: feed.watchers == 40 and feed.polls >= 2, "the first polls")
        assert feed.running and len(pollers(feed)) == 1  # one thread, not one per subscriber
        assert feed.told == (hearing == "inotify")
        queries, polls = store.queries, feed.polls
        await until(lambda: feed.polls >= polls + 3, "three more polls")
        assert store.queries == queries  # idle: the polls read no table, nobody re-read
    finally:
        await close_all(found)
        await store.close()


async def test_a_commit_by_another_process_reaches_every_subscriber(
    agents: Callable[..., Agent], tmp_path: Path, hearing: str
) -> None:
    db = str(tmp_path / "shared.db")
    store = SqliteStore(db)
    agent = make_agent(agents, store)
    await store.ensure_thread("shared", R)
    await store.ensure_thread("other", R)
    on_shared = await readers(agent, ["shared"] * 5)
    on_other = await readers(agent, ["other"])
    try:
        await write_from_another_process(db, "shared")
        await until(lambda: all(r.saw("data-test") for r in on_shared), "every subscriber")
        assert not on_other[0].saw("data-test")  # each reads its own thread only
    finally:
        await close_all(on_shared + on_other)
        await store.close()


async def test_a_commit_elsewhere_is_not_hidden_by_one_here_in_the_same_poll(
    agents: Callable[..., Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polling only, slowly: another connection commits, then this store does, between two
    polls. The poll's connection sees both; the store's own ``data_version`` tells that another
    connection committed, so subscribers that wait only for others' commits are woken."""
    monkeypatch.setattr(WalWatch, "open", classmethod(lambda cls, path: None))
    db = str(tmp_path / "both.db")
    store, elsewhere = SqliteStore(db), SqliteStore(db)  # two connections: two "processes"
    feed = ChangeFeed.of(store)
    feed.fast_s = feed.idle_s = 0.5
    agent = make_agent(agents, store)
    await store.ensure_thread("theirs", R)
    await store.ensure_thread("ours", R)
    [reader] = await readers(agent, ["theirs"])
    try:
        await until(lambda: feed.polls >= 2, "the poller under way")
        wakes = feed.wakes  # first a commit here alone: the store's own data_version is noted
        await store.append_events("ours", [EventIn("data-here", {"n": 0})])
        await until(lambda: feed.wakes > wakes and not feed.tasks, "the commit here sorted out")
        polls = feed.polls
        await until(lambda: feed.polls > polls, "a poll just made")
        await elsewhere.append_events("theirs", [EventIn("data-test", {"n": 1})])
        await store.append_events("ours", [EventIn("data-here", {"n": 2})])
        await until(lambda: reader.saw("data-test"), "the other connection's event")
    finally:
        await reader.close()
        await elsewhere.close()
        await store.close()


async def test_this_process_commits_never_wake_a_watch_for_other_processes(
    tmp_path: Path, hearing: str,
) -> None:
    """A commit here shows on the poller's probe before it is counted in ``local_commits``,
    and the next is counted before it shows: a move while a write of ours was under way is
    sorted out by the store's own version (``writes_begun``/``writes_ended``), so a watch that
    waits for other processes only is never woken by fifty of ours."""
    store = SqliteStore(tmp_path / "ours.db")
    await store.ensure_thread("t", R)
    feed = ChangeFeed.of(store)
    try:
        with feed.watch() as local, feed.watch(local=False) as others:
            assert await local.wait(BOUND_S)  # the first wake: read what is there
            others.event.clear()
            for n in range(50):
                await store.append_events("t", [EventIn("data-here", {"n": n})])
                assert await local.wait(BOUND_S)  # each seen as this process's commit
            polls = feed.polls
            await until(lambda: feed.polls >= polls + 3 and not feed.tasks, "three polls")
            assert not others.event.is_set()
    finally:
        await store.close()


async def test_the_poller_stops_with_the_last_subscriber_and_starts_with_the_next(
    agents: Callable[..., Agent], tmp_path: Path, hearing: str
) -> None:
    store = SqliteStore(tmp_path / "stop.db")
    agent = make_agent(agents, store)
    await store.ensure_thread("a", R)
    feed = ChangeFeed.of(store)
    found = await readers(agent, ["a", "a", "a"])
    try:
        # two watches a subscription: its stream's, and its live-run tracker's
        await until(lambda: feed.watchers == 6 and len(pollers(feed)) == 1, "the poller")
        [thread] = pollers(feed)
        await close_all(found[:2])
        assert feed.running  # one subscriber is left
        await found[2].close()
        assert not feed.running and feed.watchers == 0
        await asyncio.to_thread(thread.join, BOUND_S)
        assert not thread.is_alive() and pollers(feed) == []
        again = await readers(agent, ["a"])
        await until(lambda: feed.running, "a new poller")
        await close_all(again)
        assert not feed.running
    finally:
        await close_all(found)
        await store.close()


async def test_appends_in_this_process_arrive_without_waiting_for_a_poll(
    agents: Callable[..., Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WalWatch, "open", classmethod(lambda cls, path: None))
    monkeypatch.setattr(changes, "ERROR_BACKOFF_S", 60.0)
    store = SqliteStore(tmp_path / "local.db")
    feed = ChangeFeed.of(store)
    feed.fast_s = feed.idle_s = 60.0  # the first poll would come in a minute
    agent = make_agent(agents, store)
    await store.ensure_thread("here", R)
    [reader] = await readers(agent, ["here"])
    try:
        await until(lambda: feed.running and feed.polls == 1, "the first marker read")
        started = time.monotonic()
        await store.append_events("here", [EventIn("data-test", {"n": 1})])
        await until(lambda: reader.saw("data-test"), "the local event")
        assert time.monotonic() - started < 5.0 and feed.polls == 1  # no poll was needed
    finally:
        await reader.close()
        await store.close()


async def test_memory_changes_wakes_on_any_commit_here_or_elsewhere(
    tmp_path: Path, hearing: str
) -> None:
    db = str(tmp_path / "memory.db")
    store = SqliteStore(db)
    memory = Memory(store=store)
    await memory.create_thread("t", resource_id=R)
    try:
        with memory.changes.watch() as watch:
            assert await watch.wait(BOUND_S)  # the first wake: read what is there
            await memory.create_thread("u", resource_id=R)  # this process
            assert await watch.wait(BOUND_S)
            await write_from_another_process(db, "t")  # another one
            assert await watch.wait(BOUND_S)
        assert not memory.changes.running
    finally:
        await store.close()


async def test_the_search_index_catching_up_wakes_no_watch(
    tmp_path: Path, hearing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_index, "INDEX_AFTER_S", 60.0)  # this test says when it indexes
    store = SqliteStore(tmp_path / "quiet.db")
    await store.ensure_thread("t", R)
    feed = ChangeFeed.of(store)

    async def settled() -> None:  # a few polls, and no look under way
        polls = feed.polls
        await until(lambda: feed.polls >= polls + 3 and not feed.tasks, "three polls")

    try:
        with feed.watch() as watch:  # a local watch: woken by this process's commits too
            assert await watch.wait(BOUND_S)  # the first wake: read what is there
            await store.append("t", R, messages=[MessageIn("user", "index me later")])
            assert await watch.wait(BOUND_S)  # the append: a commit a watch reads
            await settled()
            watch.event.clear()
            wakes = feed.wakes
            await store.index_trailing_messages()  # what a search does first: a quiet commit
            assert store.quiet_commits == 1
            await settled()
            assert feed.wakes == wakes and not watch.event.is_set()
    finally:
        await store.close()


async def test_a_sort_out_due_as_the_store_closes_does_not_reopen_it(tmp_path: Path) -> None:
    """The poller hands the event loop a sort-out of a commit that may be this process's
    (``ChangeFeed.sort_out``, which reads the store's own version); if the store closed in
    between, the sort-out reads nothing: a query would open the closed store's connection again
    (and leave it open)."""
    store = SqliteStore(tmp_path / "closing.db")
    await store.ensure_thread("a", R)
    feed = ChangeFeed.of(store)
    watch = feed.watch()
    try:
        await store.close()
        assert not store.connected
        await feed.sort_out()
        assert not store.connected
    finally:
        watch.close()
        await store.close()
