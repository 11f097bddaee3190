"""The PostgreSQL store's schema, as an ordered list of migrations (as ``schema.py`` is SQLite's).

``tui_agent_schema.version`` holds the number of migrations applied; they run in one transaction
under an advisory lock, so processes opening a fresh database at once migrate it once. A
migration is never edited once released: add a new one at the end. Times are epoch seconds
(``double precision``, UTC), JSON is text (the same encoder as SQLite: ``codec.dumps``).

Leases are timed by the server's clock (``clock_timestamp()``), not each machine's.

Every commit that changes a thread (its events, messages, lease, signals, lanes) or the inbox
sends ``NOTIFY tui_agent`` from a trigger, with the thread's id as payload (empty for the
inbox): the store's one listening connection wakes subscribers from it
(``tests/test_postgres_store.py``).
"""

from __future__ import annotations

CHANNEL = "tui_agent"
MIGRATION_LOCK = 7_310_013  # pg_advisory_xact_lock key: one migrating process at a time

MIGRATIONS: list[str] = [
    # 1: the same tables as SQLite's first migration, plus the change triggers.
    """
    CREATE TABLE threads (
        id          text PRIMARY KEY,
        resource_id text NOT NULL,
        title       text,
        metadata    text NOT NULL DEFAULT '{}',
        created_at  double precision NOT NULL,
        updated_at  double precision NOT NULL
    );
    CREATE INDEX threads_by_resource ON threads(resource_id, updated_at);

    CREATE TABLE messages (
        seq         bigserial PRIMARY KEY,
        id          text NOT NULL UNIQUE,
        thread_id   text NOT NULL,
        resource_id text NOT NULL,
        role        text NOT NULL,
        content     text NOT NULL,
        run_id      text,
        metadata    text NOT NULL DEFAULT '{}',
        created_at  double precision NOT NULL
    );
    CREATE INDEX messages_by_thread ON messages(thread_id, seq);

    CREATE TABLE events (
        seq         bigserial PRIMARY KEY,
        thread_id   text NOT NULL,
        run_id      text,
        type        text NOT NULL,
        source      text NOT NULL DEFAULT 'AGENT',
        payload     text NOT NULL DEFAULT '{}',
        created_at  double precision NOT NULL
    );
    CREATE INDEX events_by_thread ON events(thread_id, seq);

    CREATE TABLE runs (
        id            text PRIMARY KEY,
        thread_id     text NOT NULL,
        resource_id   text NOT NULL,
        agent_id      text,
        owner         text,
        status        text NOT NULL,
        start_seq     bigint,
        finish_reason text,
        error         text,
        scores        text,
        started_at    double precision NOT NULL,
        ended_at      double precision
    );
    CREATE INDEX runs_by_thread ON runs(thread_id, started_at);

    CREATE TABLE leases (
        thread_id       text PRIMARY KEY,
        run_id          text NOT NULL,
        owner           text NOT NULL,
        expires_at      double precision NOT NULL,
        abort_requested boolean NOT NULL DEFAULT false
    );

    CREATE TABLE signals (
        seq          bigserial PRIMARY KEY,
        id           text NOT NULL UNIQUE,
        thread_id    text NOT NULL,
        resource_id  text NOT NULL,
        type         text NOT NULL,
        status       text NOT NULL,
        run_id       text,
        message      text NOT NULL,
        data         text NOT NULL,
        created_at   double precision NOT NULL,
        delivered_at double precision
    );
    CREATE INDEX signals_by_thread ON signals(thread_id, status, seq);

    CREATE TABLE state_lanes (
        thread_id  text NOT NULL,
        lane_id    text NOT NULL,
        version    integer NOT NULL,
        mode       text NOT NULL,
        cache_key  text NOT NULL,
        value      text,
        updated_at double precision NOT NULL,
        PRIMARY KEY (thread_id, lane_id)
    );

    CREATE TABLE state_lane_history (
        thread_id  text NOT NULL,
        lane_id    text NOT NULL,
        version    integer NOT NULL,
        mode       text NOT NULL,
        cache_key  text NOT NULL,
        value      text,
        delta      text,
        contents   text,
        updated_at double precision NOT NULL,
        PRIMARY KEY (thread_id, lane_id, version)
    );

    CREATE TABLE notifications (
        rownum              bigserial UNIQUE,
        id                  text PRIMARY KEY,
        thread_id           text NOT NULL,
        resource_id         text NOT NULL,
        source              text NOT NULL,
        kind                text NOT NULL,
        priority            text NOT NULL,
        status              text NOT NULL,
        summary             text NOT NULL,
        payload             text,
        dedupe_key          text,
        coalesce_key        text,
        coalesced_count     integer NOT NULL DEFAULT 1,
        attributes          text NOT NULL DEFAULT '{}',
        metadata            text NOT NULL DEFAULT '{}',
        created_at          double precision NOT NULL,
        updated_at          double precision NOT NULL,
        delivered_at        double precision,
        seen_at             double precision,
        dismissed_at        double precision,
        archived_at         double precision,
        discarded_at        double precision,
        failed_at           double precision,
        deliver_at          double precision,
        summary_at          double precision,
        summarized_at       double precision,
        delivery_attempts   integer NOT NULL DEFAULT 0,
        last_delivery_error text,
        claimed_by          text,
        claim_expires_at    double precision
    );
    CREATE INDEX notifications_by_thread ON notifications(thread_id, status, created_at);
    CREATE INDEX notifications_by_status ON notifications(status, created_at);
    CREATE INDEX notifications_due_deliver ON notifications(deliver_at)
        WHERE deliver_at IS NOT NULL;
    CREATE INDEX notifications_due_summary ON notifications(summary_at)
        WHERE summary_at IS NOT NULL;

    -- NOTIFY at commit: a row trigger per thread (PostgreSQL folds identical payloads of one
    -- transaction into one notification), the thread id as payload.
    CREATE FUNCTION tui_agent_notify_thread() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('tui_agent', NEW.thread_id);
        RETURN NULL;
    END $$;
    CREATE FUNCTION tui_agent_notify_any() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('tui_agent', '');
        RETURN NULL;
    END $$;
    CREATE TRIGGER events_notify AFTER INSERT ON events
        FOR EACH ROW EXECUTE FUNCTION tui_agent_notify_thread();
    CREATE TRIGGER messages_notify AFTER INSERT ON messages
        FOR EACH ROW EXECUTE FUNCTION tui_agent_notify_thread();
    CREATE TRIGGER signals_notify AFTER INSERT OR UPDATE ON signals
        FOR EACH ROW EXECUTE FUNCTION tui_agent_notify_thread();
    CREATE TRIGGER leases_notify AFTER INSERT OR UPDATE ON leases
        FOR EACH ROW EXECUTE FUNCTION tui_agent_notify_thread();
    CREATE TRIGGER lanes_notify AFTER INSERT OR UPDATE ON state_lanes
        FOR EACH ROW EXECUTE FUNCTION tui_agent_notify_thread();
    CREATE TRIGGER threads_notify AFTER INSERT OR UPDATE OR DELETE ON threads
        FOR EACH STATEMENT EXECUTE FUNCTION tui_agent_notify_any();
    CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE ON runs
        FOR EACH STATEMENT EXECUTE FUNCTION tui_agent_notify_any();
    CREATE TRIGGER leases_gone_notify AFTER DELETE ON leases
        FOR EACH STATEMENT EXECUTE FUNCTION tui_agent_notify_any();
    CREATE TRIGGER notifications_notify AFTER INSERT OR UPDATE OR DELETE ON notifications
        FOR EACH STATEMENT EXECUTE FUNCTION tui_agent_notify_any();

    -- The hot path of signal routing in one round trip (one statement, its own transaction):
    -- under the thread's lock, a signal for a live run is stored pending for it. NULL: no live
    -- run (the caller then routes in a full transaction: reap, wake, persist...). VOLATILE, so
    -- each statement sees what committed before it, after the lock was taken.
    CREATE FUNCTION tui_agent_deliver_signal(
        p_thread text, p_id text, p_resource text, p_type text, p_message text, p_data text,
        p_now double precision
    ) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
        live_run text;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended(p_thread, 0));
        SELECT run_id INTO live_run FROM leases WHERE thread_id = p_thread
            AND expires_at > extract(epoch from clock_timestamp());  -- the server's clock
        IF live_run IS NULL THEN
            RETURN NULL;
        END IF;
        INSERT INTO signals(id, thread_id, resource_id, type, status, run_id, message, data,
                            created_at)
            VALUES (p_id, p_thread, p_resource, p_type, 'pending', live_run, p_message, p_data,
                    p_now);
        RETURN live_run;
    END $$;
    """,
    # 2: the editor's overrides, stored per agent id (as SQLite's migration 2).
    """
    CREATE TABLE agent_overrides (
        agent_id   TEXT PRIMARY KEY,
        overrides  TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    """,
    # 3: finding stranded signals (pending or queued with no live run to take them) is one
    #    indexed read, cheap enough for every process to do each second (as SQLite's 3).
    """
    CREATE INDEX signals_waiting ON signals(status, thread_id)
        WHERE status IN ('pending', 'queued');
    """,
    # 4: a message is stored once (as SQLite's 4): the history message and the echo of a
    #    signal refer to its row by signal_id; its message column is 'null' when the model
    #    message is rendered from the data. No side table: TOAST keeps a large data out of line
    #    and an update of the row's status does not copy it.
    """
    ALTER TABLE messages ADD COLUMN signal_id text;
    ALTER TABLE events ADD COLUMN signal_id text;
    ALTER TABLE events ADD COLUMN message_id text;
    """,
    # 5: full-text search over messages (as SQLite's 5): message_search holds each user and
    #    assistant message's text (its first 100,000 characters) and its words (the 'simple'
    #    configuration over the text's runs of letters and digits, as SQLite's tokenizer splits
    #    it), kept current by triggers on messages, in the transaction that stores a message.
    #    A text holding an escaped NUL (which PostgreSQL's json cannot turn into text) is
    #    indexed as its raw JSON: no write ever fails for its index. Read by store/search.py.
    """
    CREATE TABLE message_search (
        seq   bigint PRIMARY KEY,
        body  text NOT NULL,
        words tsvector NOT NULL
    );
    CREATE INDEX message_search_words ON message_search USING gin (words);

    CREATE FUNCTION tui_agent_json_text(raw text, path text[]) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE
            WHEN raw IS NULL THEN NULL
            WHEN strpos(raw, '\\u0000') > 0 THEN raw
            ELSE (SELECT CASE json_typeof(v)
                    WHEN 'string' THEN v #>> '{}'
                    WHEN 'array' THEN (SELECT string_agg(p ->> 'text', ' ')
                                       FROM json_array_elements(v) p
                                       WHERE p ->> 'type' = 'text')
                    ELSE NULL END
                  FROM (SELECT raw::json #> path AS v) j)
        END
    $$;
    CREATE FUNCTION tui_agent_message_text(content text, signal_id text) RETURNS text
    LANGUAGE sql STABLE AS $$
        SELECT left(CASE
            WHEN signal_id IS NULL THEN tui_agent_json_text(content, '{}')
            ELSE (SELECT tui_agent_json_text(s.data, '{contents}') FROM signals s
                  WHERE s.id = signal_id)
        END, 100000)
    $$;
    CREATE FUNCTION tui_agent_search_row(seq bigint, body text) RETURNS void
    LANGUAGE sql AS $$
        INSERT INTO message_search(seq, body, words)
        SELECT seq, body,
               to_tsvector('simple', regexp_replace(body, '[^[:alnum:]]+', ' ', 'g'))
        WHERE body IS NOT NULL AND body <> ''
    $$;
    CREATE FUNCTION tui_agent_index_message() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.role IN ('user', 'assistant') THEN
            PERFORM tui_agent_search_row(NEW.seq,
                                         tui_agent_message_text(NEW.content, NEW.signal_id));
        END IF;
        RETURN NULL;
    END $$;
    CREATE FUNCTION tui_agent_unindex_message() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM message_search WHERE seq = OLD.seq;
        RETURN NULL;
    END $$;
    CREATE TRIGGER messages_search AFTER INSERT ON messages
        FOR EACH ROW EXECUTE FUNCTION tui_agent_index_message();
    CREATE TRIGGER messages_unsearch AFTER DELETE ON messages
        FOR EACH ROW EXECUTE FUNCTION tui_agent_unindex_message();
    SELECT tui_agent_search_row(m.seq, tui_agent_message_text(m.content, m.signal_id))
        FROM messages m WHERE m.role IN ('user', 'assistant');
    """,
    # 6: tool calls that wait for a human (as SQLite's 6), with the change trigger: a parked
    #    run in another process hears its answer through LISTEN/NOTIFY.
    """
    CREATE TABLE tool_approvals (
        seq          bigserial PRIMARY KEY,
        id           text NOT NULL UNIQUE,
        thread_id    text NOT NULL,
        resource_id  text NOT NULL,
        run_id       text NOT NULL,
        agent_id     text,
        tool_call_id text NOT NULL,
        tool_name    text NOT NULL,
        args         text NOT NULL,
        options      text NOT NULL DEFAULT '{}',
        status       text NOT NULL,
        answer_args  text,
        reason       text,
        answered_by  text,
        taken_by     text,
        created_at   double precision NOT NULL,
        answered_at  double precision
    );
    CREATE INDEX tool_approvals_by_call ON tool_approvals(run_id, tool_call_id);
    CREATE INDEX tool_approvals_untaken ON tool_approvals(run_id) WHERE taken_by IS NULL;
    CREATE INDEX tool_approvals_by_status ON tool_approvals(status, seq);
    CREATE TRIGGER tool_approvals_notify AFTER INSERT OR UPDATE ON tool_approvals
        FOR EACH ROW EXECUTE FUNCTION tui_agent_notify_thread();
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
