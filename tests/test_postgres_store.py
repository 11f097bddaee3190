"""What only the PostgreSQL store has: LISTEN/NOTIFY change detection (another store object's
commit wakes this one's listeners and bumps ``data_version`` with no query; a dropped listening
connection reconnects and readers catch up from their cursor), its migrations, its pool, and a
server whose disk is full (SQLSTATE 53100) as one ``StoreFullError``. The rest of its
behaviour is the shared contract and suites (``both_stores``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pg_server
import pytest
from helpers.common import AgentFactory

from tui_agent import Memory
from tui_agent.errors import RunFailedError, StoreError, StoreFullError
from tui_agent.store import open_store
from tui_agent.store.postgres import POOL_SIZE, PostgresStore
from tui_agent.store.postgres_schema import SCHEMA_VERSION
from tui_agent.store.records import EventIn
from tui_agent.testing import ScriptedModel

R, T = "res-pg", "thread-pg"
GUARD_S = 10.0  # failure guard only


@pytest.fixture
async def url(pg_database: str) -> str:
    return pg_database


@pytest.fixture
async def two(url: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two store objects on one database: as two processes (each its pool and listener)."""
    first, second = open_store(url), open_store(url)
    assert isinstance(first, PostgresStore) and isinstance(second, PostgresStore)
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


async def test_another_store_s_commit_wakes_listeners_through_notify(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    reader, writer = two
    await writer.ensure_thread(T, R)
    woken, other = reader.add_listener(T), reader.add_listener("other-thread")
    before = await reader.data_version()  # starts listening
    await writer.append_events(T, [EventIn("text-delta", {"text": "hi"})])
    await asyncio.wait_for(woken.wait(), GUARD_S)  # set by the notification, no polling
    assert not other.is_set()
    assert await reader.data_version() > before
    assert [e["type"] for e in await reader.read_events(T, 0)] == ["text-delta"]
    assert reader.local_commits == 0  # it learnt of the commit without making one


async def test_a_dropped_listener_reconnects_and_readers_catch_up_from_their_cursor(
    two: tuple[PostgresStore, PostgresStore], url: str,
) -> None:
    reader, writer = two
    await writer.ensure_thread(T, R)
    await writer.append_events(T, [EventIn("one")])
    cursor = (await reader.read_events(T, 0))[-1]["seq"]
    woken = reader.add_listener(T)
    await reader.data_version()
    pid = reader.listener_backend_pid()
    assert pid is not None
    await pg_server.fetch(url, "SELECT pg_terminate_backend($1)", pid)
    await asyncio.wait_for(woken.wait(), GUARD_S)  # the drop itself wakes readers
    woken.clear()
    await writer.append_events(T, [EventIn("two")])  # committed while nobody listened

    async def listening_again() -> bool:
        await reader.data_version()
        return reader.listener_backend_pid() not in (None, pid)

    deadline = asyncio.get_running_loop().time() + GUARD_S
    while not await listening_again():
        assert asyncio.get_running_loop().time() < deadline, "the listener did not reconnect"
        await asyncio.sleep(0.05)
    assert woken.is_set()  # reconnecting wakes readers once more: look again from the cursor
    assert [e["type"] for e in await reader.read_events(T, cursor)] == ["two"]
    woken.clear()
    await writer.append_events(T, [EventIn("three")])
    await asyncio.wait_for(woken.wait(), GUARD_S)  # notifications flow again


async def test_this_store_s_own_commits_are_not_taken_for_another_process_s(
    two: tuple[PostgresStore, PostgresStore],
) -> None:
    """The notification of one of this store's own commits (sent by one of its pooled
    connections) arrives after the commit woke its listeners: it neither sets them again (a
    subscriber that had read the commit was called behind again) nor moves ``data_version()``,
    and it wakes the change feed's ``local`` watches only. Another store object's commits still
    do all three."""
    from tui_agent.store.changes import ChangeFeed

    mine, other = two
    await mine.ensure_thread(T, R)
    await other.ensure_thread("marker", R)
    own_thread, marker = mine.add_listener(T), mine.add_listener("marker")
    feed = ChangeFeed.of(mine)
    local_watch, foreign_watch = feed.watch(local=True), feed.watch(local=False)
    try:
        before = await mine.data_version()  # listening from here on
        await mine.append_events(T, [EventIn("mine")])
        assert own_thread.is_set()  # woken at commit, by this store itself
        own_thread.clear()
        await asyncio.wait_for(local_watch.wait(), GUARD_S)  # its notice reached the feed
        # The server delivers notifications in commit order: once another process's later
        # commit is heard, the notice of ours has been handled.
        await other.append_events("marker", [EventIn("theirs")])
        await asyncio.wait_for(marker.wait(), GUARD_S)
        assert not own_thread.is_set(), "this store's own notice woke its listeners again"
        assert await mine.data_version() == before + 1  # the other store's commit alone
        assert foreign_watch.event.is_set()  # woken by the other's commit
    finally:
        local_watch.close()
        foreign_watch.close()


async def test_the_schema_is_migrated_once_and_a_newer_one_is_a_clear_error(url: str) -> None:
    stores = [open_store(url) for _ in range(4)]
    try:
        await asyncio.gather(*(s.ensure_thread(f"t{n}", R) for n, s in enumerate(stores)))
        version = await pg_server.fetch(url, "SELECT version FROM tui_agent_schema")
        assert version == [(SCHEMA_VERSION,)]
    finally:
        for store in stores:
            await store.close()
    await pg_server.fetch(url, "UPDATE tui_agent_schema SET version=version+1")
    newer = open_store(url)
    try:
        with pytest.raises(StoreError, match="newer than this tui-agent"):
            await newer.get_thread(T)
    finally:
        await newer.close()


async def test_the_pool_is_bounded_and_many_concurrent_calls_share_it(url: str) -> None:
    store = open_store(url)
    try:
        await store.ensure_thread(T, R)
        await asyncio.gather(*(store.append_events(T, [EventIn("e", n)]) for n in range(50)))
        backends = await pg_server.fetch(
            url, "SELECT COUNT(*) FROM pg_stat_activity WHERE datname=current_database()"
            " AND pid<>pg_backend_pid()")
        assert backends[0][0] <= POOL_SIZE
        assert [e["payload"] for e in await store.read_events(T, 0)] == list(range(50))
    finally:
        await store.close()


async def test_the_location_hides_the_password() -> None:
    store = open_store("postgresql://me:s3cret@127.0.0.1:1/db")
    assert store.location == "postgresql://me:***@127.0.0.1:1/db"


def test_without_a_server_tests_skip_locally_but_fail_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="initdb not found"):
        pg_server.unavailable("initdb not found")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI=1: the PostgreSQL tests must run"):
        pg_server.unavailable("initdb not found")


async def test_leases_are_timed_by_the_server_not_by_a_machine_s_clock(
    two: tuple[PostgresStore, PostgresStore], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A machine whose clock runs an hour ahead must not take a live run for dead."""
    here, ahead = two
    assert await here.start_run(T, R, "live", owner="here", ttl_s=30)
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 3600)
    assert not await ahead.reap_expired_lease(T)
    assert not await ahead.start_run(T, R, "usurper", owner="ahead", ttl_s=30)
    active = await ahead.active_run(T)
    assert active is not None and active.run_id == "live"
    assert ahead.request_abort_sync(T) == "live"


# The server's own disk-full error (SQLSTATE 53100), raised for any row over 100 kB: small
# writes fit, a long answer does not (as a full disk with a few pages left).
_DISK_FULL_FOR_BIG_ROWS = """
CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF length(NEW::text) > 100000 THEN
        RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER events_full BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION test_disk_full();
CREATE TRIGGER messages_full BEFORE INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION test_disk_full();
"""


async def test_a_full_disk_fails_the_run_at_once_with_one_line_naming_the_store(
    url: str, agents: AgentFactory
) -> None:
    with_password = url.replace("://postgres@", "://postgres:s3cret-pw@", 1)  # trust auth
    assert "s3cret-pw" in with_password
    store = open_store(with_password)
    try:
        model = ScriptedModel(["small", "x" * 2_000_000], chunk_size=200_000)
        agent = agents(model=model, memory=Memory(store=store))
        await agent.generate("warm up", memory={"resource": R, "thread": T})
        assert isinstance(store, PostgresStore)
        async with store.transaction() as conn:
            await conn.execute(_DISK_FULL_FOR_BIG_ROWS)
        with pytest.raises((RunFailedError, StoreFullError)) as raised:
            await agent.generate("again", memory={"resource": R, "thread": T})
        error = raised.value.__cause__ if isinstance(raised.value, RunFailedError) else raised.value
        assert isinstance(error, StoreFullError), repr(error)
        message = str(error)
        assert store.location in message and "full" in message and "\n" not in message
        assert "s3cret-pw" not in message
        assert await store.active_run(T) is None  # released at once, not after the TTL
        (last,) = await store.list_runs(T, limit=1)
        assert (last.status, last.error) == ("failed", f"StoreFullError: {message}")
    finally:
        await store.close()
