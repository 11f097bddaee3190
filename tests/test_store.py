"""The stores: SQLite's file settings, location and migrations (``sqlite_only``); then threads,
messages, the event log, run leases and several processes writing one store at once, on SQLite
and on PostgreSQL (``both_stores``)."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest
from helpers.sql import rows_sync

from tui_agent.errors import StoreError
from tui_agent.store import SqliteStore, open_store
from tui_agent.store.codec import new_id
from tui_agent.store.records import EventIn, MessageIn, SignalIn
from tui_agent.store.schema import SCHEMA_VERSION

R, T = "user-1", "thread-1"
OWNER = "test-owner"

pytestmark = pytest.mark.both_stores


def user_signal(text: str, **data: Any) -> SignalIn:
    return SignalIn(
        id=new_id(),
        type="user",
        message={"role": "user", "content": text},
        data={"text": text, **data},
    )


# -- the file ----------------------------------------------------------------------------------


@pytest.mark.sqlite_only
async def test_the_file_is_in_wal_mode_with_a_busy_timeout(store: SqliteStore) -> None:
    assert (await store.fetchone("PRAGMA journal_mode"))[0] == "wal"
    assert (await store.fetchone("PRAGMA busy_timeout"))[0] >= 5000
    # WAL is a property of the file: a plain connection sees it too.
    with sqlite3.connect(store.path) as plain:
        assert plain.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.sqlite_only
async def test_default_path_is_in_the_xdg_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TUI_AGENT_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    s = SqliteStore()
    expected = tmp_path / "xdg" / "tui-agent" / "tui-agent.db"
    assert Path(s.path) == expected
    await s.ensure_thread(T, R)  # the directory is created on first use
    await s.close()
    assert expected.is_file()


@pytest.mark.sqlite_only
async def test_tui_agent_db_overrides_and_an_explicit_path_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TUI_AGENT_DB", str(tmp_path / "env.db"))
    assert Path(SqliteStore().path) == tmp_path / "env.db"
    explicit = SqliteStore(tmp_path / "explicit.db")
    assert Path(explicit.path) == tmp_path / "explicit.db"
    await explicit.ensure_thread(T, R)
    await explicit.close()
    assert (tmp_path / "explicit.db").is_file()
    assert not (tmp_path / "env.db").exists()


# -- migrations --------------------------------------------------------------------------------


@pytest.mark.sqlite_only
async def test_a_fresh_file_gets_the_current_schema_version(store: SqliteStore) -> None:
    await store.ensure_thread(T, R)
    assert (await store.fetchone("PRAGMA user_version"))[0] == SCHEMA_VERSION


@pytest.mark.sqlite_only
async def test_reopening_keeps_data_and_does_not_migrate_again(tmp_path: Path) -> None:
    path = tmp_path / "reopen.sqlite"
    first = SqliteStore(path)
    await first.ensure_thread(T, R, title="kept")
    await first.append(T, R, messages=[MessageIn("user", "hello")])
    await first.close()
    with sqlite3.connect(path) as plain:
        schema_before = plain.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()

    again = SqliteStore(path)  # re-running migration 1 would fail: its tables exist
    thread = await again.get_thread(T)
    assert thread is not None and thread.title == "kept"
    assert [m.content for m in await again.list_messages(T)] == ["hello"]
    assert (await again.fetchone("PRAGMA user_version"))[0] == SCHEMA_VERSION
    schema_after = await again.fetchall("SELECT sql FROM sqlite_master ORDER BY name")
    assert [tuple(r) for r in schema_after] == schema_before
    await again.close()


@pytest.mark.sqlite_only
async def test_a_file_from_a_newer_version_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    with sqlite3.connect(path) as plain:
        plain.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    s = SqliteStore(path)
    with pytest.raises(StoreError, match=rf"schema version {SCHEMA_VERSION + 1}.*upgrade"):
        await s.ensure_thread(T, R)
    await s.close()
    with sqlite3.connect(path) as plain:  # nothing was touched
        assert plain.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert plain.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0


# -- threads -----------------------------------------------------------------------------------


async def test_threads_are_created_updated_and_listed_by_resource(store: SqliteStore) -> None:
    created = await store.ensure_thread(T, R, title="first", metadata={"tag": "a"})
    assert (created.resource_id, created.title, created.metadata) == (R, "first", {"tag": "a"})

    updated = await store.update_thread(T, title="renamed", metadata={"tag": "b", "n": 1})
    assert (updated.title, updated.metadata) == ("renamed", {"tag": "b", "n": 1})
    assert updated.created_at == created.created_at
    assert updated.updated_at >= created.updated_at

    # ensure_thread without title/metadata leaves them alone
    again = await store.ensure_thread(T, R)
    assert (again.title, again.metadata) == ("renamed", {"tag": "b", "n": 1})

    await store.ensure_thread("thread-2", R)
    await store.ensure_thread("other-thread", "user-2")
    assert {t.id for t in await store.list_threads(R)} == {T, "thread-2"}
    assert [t.id for t in await store.list_threads("user-2")] == ["other-thread"]
    assert {t.id for t in await store.list_threads()} == {T, "thread-2", "other-thread"}


async def test_the_most_recently_active_thread_lists_first(store: SqliteStore) -> None:
    await store.ensure_thread("old", R)
    await store.ensure_thread("new", R)
    await store.append("old", R, messages=[MessageIn("user", "bump")])
    assert [t.id for t in await store.list_threads(R)] == ["old", "new"]


async def test_a_thread_under_another_resource_is_a_clear_error(store: SqliteStore) -> None:
    await store.ensure_thread(T, R)
    with pytest.raises(StoreError, match=rf"{T}.*belongs to resource .*{R}.*not .*intruder"):
        await store.ensure_thread(T, "intruder")
    with pytest.raises(StoreError, match=rf"{T}.*belongs to resource"):
        await store.start_run(T, "intruder", new_id(), owner=OWNER, ttl_s=10)
    thread = await store.get_thread(T)
    assert thread is not None and thread.resource_id == R


async def test_updating_a_missing_thread_is_a_clear_error(store: SqliteStore) -> None:
    with pytest.raises(StoreError, match="no thread 'ghost'"):
        await store.update_thread("ghost", title="x")
    assert await store.get_thread("ghost") is None


# -- messages and the event log ----------------------------------------------------------------


async def test_messages_keep_their_order_and_page_backwards(store: SqliteStore) -> None:
    await store.ensure_thread(T, R)
    await store.ensure_thread("noise", R)
    for i in range(25):
        await store.append(T, R, messages=[MessageIn("user", f"m{i}", metadata={"i": i})])
        await store.append("noise", R, messages=[MessageIn("user", f"noise{i}")])

    latest = await store.list_messages(T, limit=10)
    assert [m.content for m in latest] == [f"m{i}" for i in range(15, 25)]
    assert latest[0].metadata == {"i": 15}
    assert all(m.thread_id == T and m.resource_id == R for m in latest)

    pages: list[list[str]] = []
    before = latest[0].id
    while page := await store.list_messages(T, limit=10, before=before):
        pages.append([m.content for m in page])
        before = page[0].id
    assert pages == [[f"m{i}" for i in range(5, 15)], [f"m{i}" for i in range(5)]]


async def test_structured_content_round_trips(store: SqliteStore) -> None:
    content = [{"type": "text", "text": "héllo"}, {"type": "image", "url": "x"}]
    await store.ensure_thread(T, R)
    await store.append(T, R, messages=[MessageIn("assistant", content, run_id="r1")])
    (message,) = await store.list_messages(T)
    assert (message.role, message.content, message.run_id) == ("assistant", content, "r1")


async def test_the_event_log_is_ordered_per_thread(store: SqliteStore) -> None:
    for thread in ("a", "b"):
        await store.ensure_thread(thread, R)
    for i in range(20):
        await store.append_events("a", [EventIn("text-delta", {"i": i}, run_id="ra")])
        await store.append_events("b", [EventIn("text-delta", {"i": i}), EventIn("x", i)])

    a_events = await store.read_events("a", 0)
    assert [e["payload"]["i"] for e in a_events] == list(range(20))
    kinds = {(e["type"], e["run_id"], e["from"]) for e in a_events}
    assert kinds == {("text-delta", "ra", "AGENT")}
    b_events = await store.read_events("b", 0)
    assert [e["type"] for e in b_events] == ["text-delta", "x"] * 20
    seqs = [e["seq"] for e in b_events]
    assert seqs == sorted(seqs)

    # a reader's cursor: only what came after it, in order
    cursor = a_events[9]["seq"]
    after = await store.read_events("a", cursor)
    assert [e["payload"]["i"] for e in after] == list(range(10, 20))
    first_three = await store.read_events("a", cursor, limit=3)
    assert [e["payload"]["i"] for e in first_three] == [10, 11, 12]
    assert await store.last_event_seq("a") == a_events[-1]["seq"]
    assert await store.last_event_seq("nothing-here") == 0


async def test_appends_wake_this_process_listeners(store: SqliteStore) -> None:
    await store.ensure_thread(T, R)
    woken = store.add_listener(T)
    other = store.add_listener("other")
    await store.append_events(T, [EventIn("ping")])
    assert woken.is_set() and not other.is_set()


# -- run leases --------------------------------------------------------------------------------


async def test_a_thread_has_one_live_run_at_a_time(store: SqliteStore) -> None:
    first, second = new_id(), new_id()
    assert await store.start_run(T, R, first, owner=OWNER, ttl_s=30)
    assert not await store.start_run(T, R, second, owner="someone-else", ttl_s=30)
    active = await store.active_run(T)
    assert active is not None and (active.run_id, active.owner) == (first, OWNER)
    assert await store.get_run(second) is None
    (start,) = await store.read_events(T, 0)
    assert (start["type"], start["run_id"]) == ("start", first)

    outcome = await store.finish_run(
        T, R, first, owner=OWNER, status="finished", finish_reason="stop",
        messages=[MessageIn("assistant", "done", run_id=first)],
        events=[EventIn("finish", {"finish_reason": "stop"}, run_id=first)],
    )
    assert outcome.finished and outcome.next_run_id is None
    assert await store.active_run(T) is None
    run = await store.get_run(first)
    assert run is not None and (run.status, run.finish_reason) == ("finished", "stop")
    assert await store.start_run(T, R, second, owner="someone-else", ttl_s=30)


def _expire_lease(store: Any, thread_id: str) -> None:
    """The owner died an hour ago: move its lease's expiry into the past (another connection,
    as another process would)."""
    rows_sync(store, "UPDATE leases SET expires_at = expires_at - 3600 WHERE thread_id=?",
              (thread_id,))


async def test_an_expired_lease_is_reaped_when_a_new_run_starts(store: SqliteStore) -> None:
    dead, fresh = new_id(), new_id()
    assert await store.start_run(T, R, dead, owner="dead-process", ttl_s=30)
    _expire_lease(store, T)
    assert await store.active_run(T) is None

    assert await store.start_run(T, R, fresh, owner=OWNER, ttl_s=30)
    run = await store.get_run(dead)
    assert run is not None and (run.status, run.finish_reason) == ("interrupted", "interrupted")
    assert run.ended_at is not None
    events = [(e["type"], e["run_id"]) for e in await store.read_events(T, 0)]
    assert events == [("start", dead), ("interrupted", dead), ("start", fresh)]


async def test_reap_expired_lease_ends_only_dead_runs(store: SqliteStore) -> None:
    live = new_id()
    assert await store.start_run(T, R, live, owner=OWNER, ttl_s=30)
    assert not await store.reap_expired_lease(T)
    assert (await store.get_run(live)).status == "running"  # type: ignore[union-attr]

    _expire_lease(store, T)
    assert await store.reap_expired_lease(T)
    assert (await store.get_run(live)).status == "interrupted"  # type: ignore[union-attr]
    assert not await store.reap_expired_lease(T)  # once only
    types = [e["type"] for e in await store.read_events(T, 0)]
    assert types.count("interrupted") == 1


async def test_a_signal_to_a_dead_run_wakes_a_new_one(store: SqliteStore) -> None:
    dead = new_id()
    assert await store.start_run(T, R, dead, owner="dead-process", ttl_s=30)
    _expire_lease(store, T)
    result = await store.route_signal(
        T, R, user_signal("anyone there?"), if_active="deliver", if_idle="wake",
        owner=OWNER, ttl_s=30,
    )
    assert result.action == "wake" and result.run_id != dead
    assert (await store.get_run(dead)).status == "interrupted"  # type: ignore[union-attr]
    active = await store.active_run(T)
    assert active is not None and active.run_id == result.run_id


async def test_renewing_a_lease_reports_abort_requests(store: SqliteStore) -> None:
    run_id = new_id()
    assert await store.start_run(T, R, run_id, owner=OWNER, ttl_s=30)
    assert await store.renew_lease(T, run_id, OWNER, 30) == (True, False)
    assert store.request_abort_sync(T) == run_id
    assert await store.renew_lease(T, run_id, OWNER, 30) == (True, True)
    assert await store.renew_lease(T, run_id, "not-the-owner", 30) == (False, False)


# -- several processes, one file ---------------------------------------------------------------

PROCS = 6
ROUNDS = 100
SHARED = "shared-thread"


def _writer(path: str, proc: int, start: Any) -> None:
    """One process: its own store on the shared file, many small transactions."""
    start.wait(60)  # all processes open, migrate and write at the same moment
    asyncio.run(_write_rounds(path, proc))


async def _write_rounds(path: str, proc: int) -> None:
    store = open_store(path)
    own = f"own-{proc}"
    await store.ensure_thread(SHARED, R)
    await store.ensure_thread(own, R)
    for i in range(ROUNDS):
        mark = {"proc": proc, "i": i}
        await store.append(SHARED, R, messages=[MessageIn("user", mark)])
        await store.append(own, R, messages=[MessageIn("user", mark)],
                           events=[EventIn("text-delta", mark)])
        await store.append_events(SHARED, [EventIn("tick", mark), EventIn("tock", mark)])
        # the shared thread is idle: each signal is persisted, echoed with no run
        result = await store.route_signal(
            SHARED, R, user_signal(f"p{proc}-{i}", **mark), if_active="deliver",
            if_idle="persist", owner=f"proc-{proc}", ttl_s=30,
        )
        assert result.action == "persist", result
    await store.close()


def _in_order(marks: list[dict[str, int]]) -> None:
    by_proc: dict[int, list[int]] = defaultdict(list)
    for mark in marks:
        by_proc[mark["proc"]].append(mark["i"])
    assert dict(by_proc) == {p: list(range(ROUNDS)) for p in range(PROCS)}


@pytest.fixture(params=["sqlite", "postgres"])
def shared_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store for several processes: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "shared.sqlite")
        return
    admin = request.getfixturevalue("pg_admin_url")
    name = pg_server.new_database_name()
    pg_server.create_database_sync(admin, name)
    try:
        yield pg_server.database_url(admin, name)
    finally:
        pg_server.drop_database_sync(admin, name)


async def test_processes_write_one_file_at_once_without_errors(shared_location: str) -> None:
    path = shared_location  # fresh: the processes also race to migrate it
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(path, p, start)) for p in range(PROCS)]
    for p in procs:
        p.start()
    start.set()
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, lambda: [p.join(120) for p in procs])
    assert [p.exitcode for p in procs] == [0] * PROCS  # any "database is locked" fails a child

    store = open_store(path)
    shared = await store.list_messages(SHARED, limit=10**6)
    assert len(shared) == 2 * PROCS * ROUNDS  # each round: a message and a persisted signal
    _in_order([m.content for m in shared if m.metadata.get("signal_id") is None])
    _in_order([
        {"proc": m.metadata["signal"]["proc"], "i": m.metadata["signal"]["i"]}
        for m in shared if m.metadata.get("signal_id")
    ])
    events = await store.read_events(SHARED, 0, limit=10**6)
    assert len(events) == 3 * PROCS * ROUNDS  # tick, tock, echo
    _in_order([e["payload"] for e in events if e["type"] == "tick"])
    ticks = [(e["payload"]["proc"], e["payload"]["i"], e["type"]) for e in events
             if e["type"] in ("tick", "tock")]
    assert ticks == [(p, i, t) for p, i, _ in ticks[::2] for t in ("tick", "tock")]
    # each persisted signal is its echo alone, with no run (no empty run around it)
    echoes = [e for e in events if e["type"] == "data-user-message"]
    assert len(echoes) == PROCS * ROUNDS and {e["run_id"] for e in echoes} == {None}
    assert not any(e["type"] in ("start", "finish") for e in events)
    for p in range(PROCS):
        own = await store.list_messages(f"own-{p}", limit=10**6)
        assert [m.content["i"] for m in own] == list(range(ROUNDS))
        own_events = await store.read_events(f"own-{p}", 0, limit=10**6)
        assert [e["payload"]["i"] for e in own_events] == list(range(ROUNDS))
    signals = await store.fetchone("SELECT COUNT(*) FROM signals WHERE status='persisted'")
    assert signals[0] == PROCS * ROUNDS
    await store.close()
