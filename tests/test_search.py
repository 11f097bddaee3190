"""Full-text search over messages (issue 23): a store opened on messages stored before search
existed indexes them (the migration, on SQLite and PostgreSQL); a rolled-back message is never
found; on SQLite the index trails the log by a moment (issue 22): it takes the messages after
the writes that stored them with no search asked, a search first indexes what another process
left unindexed, and a store of schema 6 keeps its index; a large signal kept out of its row is
found; the query's words and the snippet (tui_agent.text). The search itself is checked on
every store by the contract suite (tests/store_contract.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import pytest
from helpers.common import until
from store_contract import user_signal

from tui_agent.store import SqliteStore, Store, open_store
from tui_agent.store import postgres_schema as pg_schema
from tui_agent.store import schema as sqlite_schema
from tui_agent.store.codec import dumps, new_id
from tui_agent.store.records import MessageIn
from tui_agent.text import match_spans, search_terms, snippet


def _before_search(migrations: list[str]) -> list[str]:
    """The migrations up to (not including) the one that adds search."""
    index = next(i for i, m in enumerate(migrations) if "message_search" in m)
    return migrations[:index]


def _old_rows() -> list[tuple[object, ...]]:
    return [
        (new_id(), "t", "r", "user", dumps("an old question about kubernetes"), 1.0),
        (new_id(), "t", "r", "assistant", dumps("an old answer"), 2.0),
        (new_id(), "t", "r", "tool", dumps("kubernetes tool output"), 3.0),
    ]


def _old_sqlite_store(path: Path, migrations: list[str]) -> None:
    """A SQLite store file of an older schema (``migrations`` applied), holding _old_rows."""
    with sqlite3.connect(path) as db:
        for migration in migrations:
            db.executescript(migration)
        db.execute("INSERT INTO threads VALUES ('t', 'r', 'old one', '{}', 1, 1)")
        db.executemany("INSERT INTO messages(id, thread_id, resource_id, role, content,"
                       " created_at) VALUES (?,?,?,?,?,?)", _old_rows())
        db.execute(f"PRAGMA user_version={len(migrations)}")
    path.chmod(0o600)


async def test_a_sqlite_store_from_before_search_is_indexed_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _old_sqlite_store(path, _before_search(sqlite_schema.MIGRATIONS))
    store = open_store(path)
    try:
        hits = await store.search_messages("kubernetes")
        assert [(h.role, h.text, h.thread_title) for h in hits] == [
            ("user", "an old question about kubernetes", "old one")]
        await store.append("t", "r", messages=[MessageIn("assistant", "kubernetes it is")])
        assert len(await store.search_messages("kubernetes")) == 2
    finally:
        await store.close()


async def test_a_postgres_store_from_before_search_is_indexed_when_opened(
    pg_database: str,
) -> None:
    old = _before_search(pg_schema.MIGRATIONS)
    conn = await asyncpg.connect(pg_database)
    try:
        await conn.execute("CREATE TABLE tui_agent_schema (version integer NOT NULL)")
        for migration in old:
            await conn.execute(migration)
        await conn.execute("INSERT INTO tui_agent_schema(version) VALUES ($1)", len(old))
        await conn.execute("INSERT INTO threads VALUES ('t', 'r', 'old one', '{}', 1, 1)")
        await conn.executemany("INSERT INTO messages(id, thread_id, resource_id, role, content,"
                               " created_at) VALUES ($1,$2,$3,$4,$5,$6)", _old_rows())
    finally:
        await conn.close()
    store = open_store(pg_database)
    try:
        hits = await store.search_messages("kubernetes")
        assert [(h.role, h.text, h.thread_title) for h in hits] == [
            ("user", "an old question about kubernetes", "old one")]
    finally:
        await store.close()


@pytest.mark.both_stores
async def test_a_large_signal_kept_out_of_its_row_is_found(store: Store) -> None:
    words = " ".join(f"word{n}" for n in range(2000))  # past SQLite's spill size
    await store.route_signal("t", "r", user_signal(f"needle {words}"),
                             if_active="deliver", if_idle="persist", owner="o", ttl_s=5)
    hits = await store.search_messages("needle word1999")
    assert len(hits) == 1 and hits[0].text.startswith("needle word0")


@pytest.mark.both_stores
async def test_a_text_with_a_nul_is_stored_and_found(store: Store) -> None:
    await store.ensure_thread("t", "r")
    await store.append("t", "r", messages=[
        MessageIn("user", "zero\x00byte here"), MessageIn("user", r"a literal \u0000 escape")])
    assert len(await store.list_messages("t")) == 2
    assert len(await store.search_messages("escape")) == 1


async def test_a_message_rolled_back_is_not_found(tmp_path: Path) -> None:
    """The index row is written by the message's own transaction: a transaction that fails
    after storing a message leaves neither."""
    store = open_store(tmp_path / "s.sqlite")
    try:
        await store.ensure_thread("t", "r")
        with pytest.raises(Exception, match="lease"):
            await store.append("t", "r", messages=[MessageIn("user", "phantom")], fence="gone")
        assert await store.search_messages("phantom") == []
        assert await store.list_messages("t") == []
    finally:
        await store.close()


def _indexed(path: Path) -> set[int]:
    """The seqs of the messages SQLite's search index holds (read beside the store)."""
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT rowid FROM message_search")}


async def test_the_sqlite_index_takes_messages_after_their_writes_with_no_search(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    try:
        await store.append("t", "r", messages=[MessageIn("user", "catch me"),
                                               MessageIn("assistant", "caught"),
                                               MessageIn("tool", "tools are not searched")])
        stored = {m.seq: m.role for m in await store.list_messages("t")}
        searched = {seq for seq, role in stored.items() if role != "tool"}
        assert store.quiet_commits == 0  # not in the write's own transaction
        await until(lambda: _indexed(path) == searched, "the index to take the messages")
        assert store.quiet_commits == 1  # in one of its own, for all three
    finally:
        await store.close()


async def test_a_search_first_indexes_what_another_process_left_unindexed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    store = open_store(path)
    await store.ensure_thread("t", "r")
    await store.close()
    with sqlite3.connect(path) as db:  # a process that died between its write and its index
        db.execute("INSERT INTO messages(id, thread_id, resource_id, role, content, created_at)"
                   " VALUES (?, 't', 'r', 'user', ?, 1.0)", (new_id(), dumps("left behind")))
    assert _indexed(path) == set()
    store = open_store(path)
    try:
        assert [h.text for h in await store.search_messages("behind")] == ["left behind"]
        assert len(_indexed(path)) == 1
    finally:
        await store.close()


async def test_a_sqlite_store_of_schema_6_keeps_its_index_and_trails_from_then_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "six.sqlite"
    _old_sqlite_store(path, sqlite_schema.MIGRATIONS[:6])  # its rows indexed as stored
    store = open_store(path)
    try:
        hits = await store.search_messages("kubernetes")
        assert [(h.role, h.text) for h in hits] == [("user", "an old question about kubernetes")]
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                              " AND name = 'messages_search'").fetchall() == []
            assert db.execute("SELECT seq FROM search_mark").fetchall() == [(3,)]
        await store.append("t", "r", messages=[MessageIn("assistant", "kubernetes it is")])
        assert len(await store.search_messages("kubernetes")) == 2
    finally:
        await store.close()


def test_query_terms_split_as_the_index_splits_text() -> None:
    assert search_terms('Deploy, "Big world" x_y  ;;') == [
        ("deploy",), ("big", "world"), ("x", "y")]
    assert search_terms("") == [] and search_terms("--") == []


def test_matches_are_the_words_a_term_begins() -> None:
    text = "Deploying the deployment; redeploy"
    assert [text[a:b] for a, b in match_spans(text, search_terms("deploy"))] == [
        "Deploying", "deployment"]


def test_a_snippet_is_one_line_around_the_first_match() -> None:
    text = "filler " * 50 + "the\nneedle is here " + "tail " * 50
    cut = snippet(text, search_terms("needle"), width=40)
    assert "needle" in cut and "\n" not in cut
    assert cut.startswith("…") and cut.endswith("…") and len(cut) <= 42
