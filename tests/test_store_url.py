"""``open_store(url)`` and ``Memory(store=...)``: every accepted form opens a working store, and
everything else is one clear ``ConfigError`` at construction, not a failure on first use."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tui_agent import Memory, SqliteStore
from tui_agent.errors import ConfigError
from tui_agent.store import Store, open_store

T, R = "thread-1", "ann"


async def _roundtrip(store: Store) -> list[str]:
    await store.ensure_thread(T, R)
    memory = Memory(store)
    await memory.save_messages([{"role": "user", "content": "hi"}], thread_id=T, resource_id=R)
    return [m.content for m in await memory.recall(T)]


@pytest.mark.parametrize("form", ["plain", "path", "url"])
async def test_a_path_or_sqlite_url_opens_the_same_file(tmp_path: Path, form: str) -> None:
    file = tmp_path / "sub" / "s.db"
    given = {"plain": str(file), "path": file, "url": f"sqlite://{file}"}[form]
    store = open_store(given)
    try:
        assert isinstance(store, SqliteStore) and isinstance(store, Store)
        assert store.location == str(file)
        assert await _roundtrip(store) == ["hi"]
    finally:
        await store.close()
    assert file.is_file()


async def test_a_home_relative_path_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert open_store("~/s.db").location == str(tmp_path / "s.db")


async def test_the_in_memory_store_works_and_aborts(tmp_path: Path) -> None:
    store = open_store("sqlite:///:memory:")
    try:
        assert store.location == ":memory:"
        assert await _roundtrip(store) == ["hi"]
        assert await store.start_run(T, R, "run-1", owner="me", ttl_s=30)
        # A plain call from sync code reaches the same in-memory database.
        assert store.request_abort_sync(T) == "run-1"
        assert await store.renew_lease(T, "run-1", "me", 30) == (True, True)
    finally:
        await store.close()
    assert not list(tmp_path.iterdir())  # nothing was written to disk


async def test_two_in_memory_stores_are_separate() -> None:
    first, second = open_store("sqlite:///:memory:"), open_store("sqlite:///:memory:")
    try:
        await first.ensure_thread(T, R)
        assert await second.get_thread(T) is None
    finally:
        await first.close()
        await second.close()


def test_postgresql_opens_the_postgres_store_and_hides_the_password() -> None:
    pytest.importorskip("asyncpg")
    from tui_agent.store.postgres import PostgresStore

    for url in ("postgresql://me:s3cret@db.example:5432/team", "postgres://me@host/db"):
        store = open_store(url)  # connects lazily: nothing is reached here
        assert isinstance(store, PostgresStore)
        assert "s3cret" not in store.location and store.location.startswith("postgres")


def test_postgresql_without_its_driver_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)  # import asyncpg now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'tui-agent\[postgres\]'") as caught:
        open_store("postgresql://me:s3cret@db.example:5432/team")
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://host/db", "unknown scheme 'mysql'"),
        ("https://example.com/x.db", "unknown scheme 'https'"),
        ("sqlite://relative.db", "sqlite:/// followed by the file's path"),
        ("sqlite:///", "sqlite:/// followed by the file's path"),
        ("", "empty store location"),
    ],
)
def test_anything_else_is_a_clear_error_naming_the_accepted_forms(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        open_store(url)
    if "scheme" in message:
        assert "sqlite:///path" in str(caught.value) and "a path" in str(caught.value)


async def test_memory_opens_a_path_or_url_given_as_its_store(tmp_path: Path) -> None:
    by_path = Memory(str(tmp_path / "a.db"))
    by_url = Memory(store=f"sqlite://{tmp_path / 'b.db'}")
    by_pathlike = Memory(tmp_path / "c.db", lease_ttl_s=30)
    try:
        for memory in (by_path, by_url, by_pathlike):
            assert isinstance(memory.store, SqliteStore)
            await memory.create_thread(T, resource_id=R)
            assert (await memory.get_thread(T)) is not None
        assert by_pathlike.lease_ttl_s == 30
    finally:
        for memory in (by_path, by_url, by_pathlike):
            await memory.store.close()
    assert {p.name for p in tmp_path.iterdir()} >= {"a.db", "b.db", "c.db"}


def test_memory_rejects_what_is_not_a_store_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"takes a store .* got dict"):
        Memory({"path": "x.db"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown scheme 'redis'"):
        Memory("redis://localhost/0")


def test_the_default_store_follows_tui_agent_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUI_AGENT_DB", f"sqlite://{tmp_path / 'env.db'}")
    assert Memory().store.location == str(tmp_path / "env.db")
    assert open_store().location == str(tmp_path / "env.db")
    monkeypatch.setenv("TUI_AGENT_DB", "postgresql://me@host/db")
    assert Memory().store.location == "postgresql://me@host/db"
