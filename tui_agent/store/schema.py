"""The store's schema, as an ordered list of migrations.

``PRAGMA user_version`` holds the number of migrations applied. A migration is never edited once
released: add a new one at the end. Times are stored as UNIX seconds (REAL, UTC); JSON as TEXT.
"""

from __future__ import annotations

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
]

SCHEMA_VERSION = len(MIGRATIONS)
