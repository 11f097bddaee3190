"""The store's schema, as an ordered list of migrations.

``PRAGMA user_version`` holds the number of migrations applied. A migration is never edited once
released: add a new one at the end. Times are stored as UNIX seconds (REAL, UTC); JSON as TEXT.
"""

from __future__ import annotations


def _json_text(source: str, path: str) -> str:
    """The text at ``path`` of JSON ``source`` (SQL): a string itself, an array's text parts
    joined, else NULL."""
    return f"""(CASE
        WHEN NOT json_valid({source}) THEN NULL
        WHEN json_type({source}, '{path}') = 'text' THEN json_extract({source}, '{path}')
        WHEN json_type({source}, '{path}') = 'array' THEN (
            SELECT group_concat(json_extract(p.value, '$.text'), ' ')
            FROM json_each({source}, '{path}') p WHERE json_extract(p.value, '$.type') = 'text')
    END)"""


def message_text(row: str) -> str:
    """The searchable text of message row ``row`` (SQL): its signal's ``contents`` for the
    history message of a signal, else its content (see :func:`_json_text`)."""
    signal = (
        "(SELECT COALESCE((SELECT b.data FROM signal_data b WHERE b.id = s.id), s.data) AS data"
        f" FROM signals s WHERE s.id = {row}.signal_id)"
    )
    return f"""(CASE
        WHEN {row}.signal_id IS NOT NULL THEN (
            SELECT {_json_text("d.data", "$.contents")} FROM {signal} d)
        ELSE {_json_text(f"{row}.content", "$")}
    END)"""


MIGRATIONS: list[str] = [
    # 1: threads, messages, the per-thread event log, runs and their leases, signals,
    #    state lanes, the notification inbox.
    """
    CREATE TABLE threads (
        id          TEXT PRIMARY KEY,
        resource_id TEXT NOT NULL,
        title       TEXT,
        metadata    TEXT NOT NULL DEFAULT '{}',
        created_at  REAL NOT NULL,
        updated_at  REAL NOT NULL
    );
    CREATE INDEX threads_by_resource ON threads(resource_id, updated_at);

    CREATE TABLE messages (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        id          TEXT NOT NULL UNIQUE,
        thread_id   TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        role        TEXT NOT NULL,
        content     TEXT NOT NULL,
        run_id      TEXT,
        metadata    TEXT NOT NULL DEFAULT '{}',
        created_at  REAL NOT NULL
    );
    CREATE INDEX messages_by_thread ON messages(thread_id, seq);

    CREATE TABLE events (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id   TEXT NOT NULL,
        run_id      TEXT,
        type        TEXT NOT NULL,
        source      TEXT NOT NULL DEFAULT 'AGENT',
        payload     TEXT NOT NULL DEFAULT '{}',
        created_at  REAL NOT NULL
    );
    CREATE INDEX events_by_thread ON events(thread_id, seq);

    CREATE TABLE runs (
        id            TEXT PRIMARY KEY,
        thread_id     TEXT NOT NULL,
        resource_id   TEXT NOT NULL,
        agent_id      TEXT,
        owner         TEXT,
        status        TEXT NOT NULL,
        start_seq     INTEGER,
        finish_reason TEXT,
        error         TEXT,
        scores        TEXT,
        started_at    REAL NOT NULL,
        ended_at      REAL
    );
    CREATE INDEX runs_by_thread ON runs(thread_id, started_at);

    CREATE TABLE leases (
        thread_id       TEXT PRIMARY KEY,
        run_id          TEXT NOT NULL,
        owner           TEXT NOT NULL,
        expires_at      REAL NOT NULL,
        abort_requested INTEGER NOT NULL DEFAULT 0
    );

    CREATE TABLE signals (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        id           TEXT NOT NULL UNIQUE,
        thread_id    TEXT NOT NULL,
        resource_id  TEXT NOT NULL,
        type         TEXT NOT NULL,
        status       TEXT NOT NULL,
        run_id       TEXT,
        message      TEXT NOT NULL,
        data         TEXT NOT NULL,
        created_at   REAL NOT NULL,
        delivered_at REAL
    );
    CREATE INDEX signals_by_thread ON signals(thread_id, status, seq);

    CREATE TABLE state_lanes (
        thread_id  TEXT NOT NULL,
        lane_id    TEXT NOT NULL,
        version    INTEGER NOT NULL,
        mode       TEXT NOT NULL,
        cache_key  TEXT NOT NULL,
        value      TEXT,
        updated_at REAL NOT NULL,
        PRIMARY KEY (thread_id, lane_id)
    );

    CREATE TABLE state_lane_history (
        thread_id  TEXT NOT NULL,
        lane_id    TEXT NOT NULL,
        version    INTEGER NOT NULL,
        mode       TEXT NOT NULL,
        cache_key  TEXT NOT NULL,
        value      TEXT,
        delta      TEXT,
        contents   TEXT,
        updated_at REAL NOT NULL,
        PRIMARY KEY (thread_id, lane_id, version)
    );

    CREATE TABLE notifications (
        id                  TEXT PRIMARY KEY,
        thread_id           TEXT NOT NULL,
        resource_id         TEXT NOT NULL,
        source              TEXT NOT NULL,
        kind                TEXT NOT NULL,
        priority            TEXT NOT NULL,
        status              TEXT NOT NULL,
        summary             TEXT NOT NULL,
        payload             TEXT,
        dedupe_key          TEXT,
        coalesce_key        TEXT,
        coalesced_count     INTEGER NOT NULL DEFAULT 1,
        attributes          TEXT NOT NULL DEFAULT '{}',
        metadata            TEXT NOT NULL DEFAULT '{}',
        created_at          REAL NOT NULL,
        updated_at          REAL NOT NULL,
        delivered_at        REAL,
        seen_at             REAL,
        dismissed_at        REAL,
        archived_at         REAL,
        discarded_at        REAL,
        failed_at           REAL,
        deliver_at          REAL,
        summary_at          REAL,
        summarized_at       REAL,
        delivery_attempts   INTEGER NOT NULL DEFAULT 0,
        last_delivery_error TEXT,
        claimed_by          TEXT,
        claim_expires_at    REAL
    );
    CREATE INDEX notifications_by_thread ON notifications(thread_id, status, created_at);
    CREATE INDEX notifications_by_status ON notifications(status, created_at);
    CREATE INDEX notifications_due_deliver ON notifications(deliver_at)
        WHERE deliver_at IS NOT NULL;
    CREATE INDEX notifications_due_summary ON notifications(summary_at)
        WHERE summary_at IS NOT NULL;
    """,
    # 2: the editor's overrides, stored per agent id (issue 12; Agent.save_editor_overrides).
    """
    CREATE TABLE agent_overrides (
        agent_id   TEXT PRIMARY KEY,
        overrides  TEXT NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
    # 3: finding stranded signals (pending or queued with no live run to take them) is one
    #    indexed read, cheap enough for every process to do each second.
    """
    CREATE INDEX signals_waiting ON signals(status, thread_id)
        WHERE status IN ('pending', 'queued');
    """,
    # 4: a message is stored once (issue 11): a signal's text lives in its row's data only. The
    #    history message and the echo event of a signal refer to that row by signal_id (their
    #    content, metadata.signal and payload are read from it); the row's message column is
    #    'null' (the model message is rendered from the data). The echo of a generate() input
    #    refers to its stored message by message_id (its contents are the message's content).
    #    A large data is kept in signal_data instead of its signals row (data 'null' there),
    #    which is never rewritten (a run taking the signal rewrites the signals row). Rows
    #    written before keep their own copies (signal_id NULL) and read as they always did.
    #    One index on signals instead of two (each costs every signal of a burst an insert,
    #    issue 10): every query of signals names a status (and the thread), and an index on
    #    (status, thread_id) serves them all in seq order (its entries end with the rowid).
    """
    DROP INDEX signals_by_thread;
    DROP INDEX signals_waiting;
    CREATE INDEX signals_by_status ON signals(status, thread_id);
    ALTER TABLE messages ADD COLUMN signal_id TEXT;
    ALTER TABLE events ADD COLUMN signal_id TEXT;
    ALTER TABLE events ADD COLUMN message_id TEXT;
    CREATE TABLE signal_data (
        id   TEXT PRIMARY KEY,
        data TEXT NOT NULL
    );
    """,
    # 5: full-text search over messages (issue 23): an FTS5 index of each user and assistant
    #    message's text (its first 100,000 characters, see message_text), kept current by
    #    triggers on messages: the transaction that stores a message indexes it, and a deleted
    #    message leaves the index. Filled here from the messages stored before. Read by
    #    store/search.py. The prefix indexes (of 2, 3 and 4 characters) answer a short prefix
    #    (what the app's search box holds while a word is typed) from one list instead of a
    #    merge of every word it begins (benchmarks/bench_search.py: 100 ms → under 1 ms).
    f"""
    CREATE VIRTUAL TABLE message_search USING fts5(body, prefix='2 3 4');
    CREATE TRIGGER messages_search AFTER INSERT ON messages
        WHEN NEW.role IN ('user', 'assistant')
    BEGIN
        INSERT INTO message_search(rowid, body)
            SELECT NEW.seq, body FROM (SELECT substr({message_text("NEW")}, 1, 100000) AS body)
            WHERE body IS NOT NULL AND body != '';
    END;
    CREATE TRIGGER messages_unsearch AFTER DELETE ON messages
    BEGIN
        DELETE FROM message_search WHERE rowid = OLD.seq;
    END;
    INSERT INTO message_search(rowid, body)
        SELECT seq, body FROM (
            SELECT m.seq AS seq, substr({message_text("m")}, 1, 100000) AS body
            FROM messages m WHERE m.role IN ('user', 'assistant'))
        WHERE body IS NOT NULL AND body != '';
    """,
    # 6: tool calls that wait for a human (issue 24): one row per call a run parked on
    #    (``require_approval``), pending until someone approves or declines it, then taken by
    #    the run that executes the answer (``taken_by``). A thread whose lease names a run with
    #    an untaken row is held: its lease is not reaped when it expires (the run waits, its
    #    owner may be gone), signals are kept pending for it, and whoever answers last takes it
    #    over if its owner is dead. Read and written by store/approvals.py.
    """
    CREATE TABLE tool_approvals (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        id           TEXT NOT NULL UNIQUE,
        thread_id    TEXT NOT NULL,
        resource_id  TEXT NOT NULL,
        run_id       TEXT NOT NULL,
        agent_id     TEXT,
        tool_call_id TEXT NOT NULL,
        tool_name    TEXT NOT NULL,
        args         TEXT NOT NULL,
        options      TEXT NOT NULL DEFAULT '{}',
        status       TEXT NOT NULL,
        answer_args  TEXT,
        reason       TEXT,
        answered_by  TEXT,
        taken_by     TEXT,
        created_at   REAL NOT NULL,
        answered_at  REAL
    );
    CREATE INDEX tool_approvals_by_call ON tool_approvals(run_id, tool_call_id);
    CREATE INDEX tool_approvals_untaken ON tool_approvals(run_id) WHERE taken_by IS NULL;
    CREATE INDEX tool_approvals_by_status ON tool_approvals(status, seq);
    """,
    # 7: the search index trails the log by a moment (issue 22): the trigger of 5 indexed each
    #    message in the transaction that stored it (a woken run's first delta waited on it);
    #    now the messages past ``search_mark`` are indexed in a transaction of their own a
    #    moment after the writes that stored them (``SqliteStore``), and before every search
    #    (``store.search``): a search still sees every committed message. Everything stored
    #    before was indexed by the trigger.
    """
    DROP TRIGGER messages_search;
    CREATE TABLE search_mark (seq INTEGER NOT NULL);
    INSERT INTO search_mark(seq) SELECT COALESCE(MAX(seq), 0) FROM messages;
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
