"""Full-text search over messages, on either store: SQLite's FTS5 index and PostgreSQL's
``tsvector`` one. PostgreSQL's is kept by triggers on ``messages`` in the transaction that
stores a message (its schema migration 5). SQLite's trails the log by a moment (its migration
7): the messages past ``search_mark`` are indexed in a transaction of their own
``INDEX_AFTER_S`` after the writes that stored them (``SqliteStore``: off the path of a woken
run's first delta, which waited on the index), and a search first indexes whatever still
trails (:func:`index_trailing`, any process's). Either way a search sees every committed
message and nothing else.

The query language is the same on both: words (each matches a word it begins, case folded; a
one-letter word only itself),
``"quoted phrases"`` (their words in a row), every term required (tui_agent.text.search_terms).
Only the statement differs: one small table, by dialect. Tests: the contract suite on both
stores (tests/store_contract.py), tests/test_search.py; speed: benchmarks/bench_search.py.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from tui_agent.store.records import MessageHit
from tui_agent.store.roles import Database
from tui_agent.store.rows import at
from tui_agent.store.schema import message_text
from tui_agent.text import search_terms

_COLUMNS: Final = (
    "SELECT m.seq, m.id, m.thread_id, m.resource_id, t.title, m.role, m.created_at, f.body"
)

# dialect name → (statement, its thread filter, its order); ``?`` the match, then the thread.
_STATEMENTS: Final = {
    "sqlite": (
        f"{_COLUMNS} FROM message_search f JOIN messages m ON m.seq = f.rowid"
        " LEFT JOIN threads t ON t.id = m.thread_id WHERE message_search MATCH ?",
        " AND m.thread_id = ?",
        " ORDER BY f.rowid DESC LIMIT ?",
    ),
    "postgres": (
        f"{_COLUMNS} FROM message_search f JOIN messages m ON m.seq = f.seq"
        " LEFT JOIN threads t ON t.id = m.thread_id"
        " WHERE f.words @@ to_tsquery('simple', ?)",
        " AND m.thread_id = ?",
        " ORDER BY f.seq DESC LIMIT ?",
    ),
}


# SQLite: whether messages wait past the mark (the highest seq ever given, from AUTOINCREMENT's
# own table, beside the mark), and indexing them (schema migration 7).
_TRAILS: Final = ("SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'messages')"
                  " > (SELECT seq FROM search_mark)")
_INDEX_TRAILING: Final = (
    "INSERT INTO message_search(rowid, body) SELECT seq, body FROM ("
    f" SELECT m.seq AS seq, substr({message_text('m')}, 1, 100000) AS body FROM messages m"
    " WHERE m.seq > (SELECT seq FROM search_mark) AND m.role IN ('user', 'assistant'))"
    " WHERE body IS NOT NULL AND body != ''"
)
_MOVE_MARK: Final = ("UPDATE search_mark SET seq = MAX(seq, COALESCE("
                     "(SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0))")


def trails(conn: sqlite3.Connection) -> bool:
    """Messages wait to be indexed (a read of two rows)."""
    row = conn.execute(_TRAILS).fetchone()
    return bool(row and row[0])


def index_trailing(conn: sqlite3.Connection) -> int:
    """The body of a write transaction (``SqliteStore.write``): index the user and assistant
    messages stored past the mark, any process's, and move the mark past them; how many were
    indexed. Inside the transaction no other writer can store a message meanwhile, and seqs
    only grow, so none is skipped or indexed twice."""
    indexed = conn.execute(_INDEX_TRAILING).rowcount
    conn.execute(_MOVE_MARK)
    return indexed


def match_expression(dialect: str, terms: list[tuple[str, ...]]) -> str:
    """``terms`` as the engine's query: an FTS5 ``MATCH`` string (``"big world"* "x"``) or a
    ``tsquery`` (``(big <-> world:*) & (x)``). Words hold only letters and digits, so neither
    needs escaping."""
    if dialect == "sqlite":
        return " ".join('"' + " ".join(term) + ('"*' if len(term[-1]) > 1 else '"')
                        for term in terms)
    return " & ".join("(" + " <-> ".join((*term[:-1], _prefix(term[-1]))) + ")" for term in terms)


def _prefix(word: str) -> str:
    """A word matching the words it begins; one letter matches only itself (as a prefix it
    would match a good part of every text, and slowly)."""
    return f"{word}:*" if len(word) > 1 else word


class MessageSearch:
    """Messages found by their words."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def search_messages(
        self, query: str, *, thread_id: str | None = None, limit: int = 50
    ) -> list[MessageHit]:
        """User and assistant messages (of ``thread_id``, or of every thread) matching every
        term of ``query``, newest first, at most ``limit``; none for a query with no words."""
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        await self.database.index_trailing_messages()
        dialect = self.database.dialect
        statement, by_thread, order = _STATEMENTS[dialect.name]
        args: list[object] = [match_expression(dialect.name, terms)]
        if thread_id is not None:
            statement += by_thread
            args.append(thread_id)
        found = await self.database.rows(statement + order, (*args, limit))
        return [
            MessageHit(
                seq=row[0], message_id=row[1], thread_id=row[2], resource_id=row[3],
                thread_title=row[4], role=row[5], created_at=at(row[6]), text=row[7],
            )
            for row in found
        ]
