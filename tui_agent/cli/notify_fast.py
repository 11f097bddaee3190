"""``tui-agent notify`` in a few milliseconds: the lean path (issue 21, point 7).

A CI script calls ``tui-agent notify`` once per event, each a new process, so what counts is
the cost of one process. This path imports the standard library only (argparse, sqlite3,
json; no asyncio, pydantic, rich or litellm) and does, in one ``BEGIN IMMEDIATE`` transaction
on the SQLite file, what ``send_notification_signal`` does with the built-in delivery policy:
it checks the thread, merges into a pending record of the same dedupe or coalesce key, takes
the policy's decision (the built-in table, :data:`TABLE`) and stores the record. What the
decision sends now (a delivery, a digest) is left *due now* (``deliver_at`` / ``summary_at``)
instead of being sent from here: the notification dispatcher of a process that hosts the store
(the app, ``chat``, ``watch``: ``ThreadRuntime.host``) hears the commit on the store's change
feed and sends it within milliseconds, as one delivery across processes (its claims); with no
host, the record waits, and the next process that opens the store sends it. ``--wait`` keeps
the old behaviour (the run it wakes, run and awaited here) on the full path.

Whenever anything is not plainly the common case — another policy (``--agent``), a store
that is not a usable SQLite file of this schema, a thread to create, a setting or input this
path does not check the way the full path does — it returns None and the full path runs, so
every error and edge keeps the full path's behaviour. The records it stores equal the full
path's (tests/test_cli_notify.py compares them), and :data:`TABLE` is ``default_decision``'s
(checked there too).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn

SCHEMA_VERSION = 7  # tui_agent.store.schema.SCHEMA_VERSION (tests/test_cli_notify.py)
MAX_TEXT_BYTES = 1_000_000  # tui_agent.signals.limits.InputLimits' defaults
MAX_ID_LENGTH = 256
PRIORITIES = ("low", "medium", "high", "urgent")
LEAN_KEYS = frozenset({"source", "kind", "summary", "priority", "dedupe_key", "coalesce_key"})
# Settings this path reads; any other TUI_AGENT_* variable, or file key, sends it to the full
# path (which checks them all and names a bad one).
_ENV = frozenset({"TUI_AGENT_DB", "TUI_AGENT_RESOURCE", "TUI_AGENT_THREAD", "TUI_AGENT_MODEL"})
_FILE_KEYS = frozenset({"db", "resource", "thread", "model", "theme", "show_inbox",
                        "show_state", "keymap", "agents", "default_agent"})
# [[agents]] of the settings file have no delivery policy of their own: the built-in one
# decides for them too, so they are no reason for the full path.

# The built-in delivery policy (tui_agent.notifications.policy.default_decision): priority ×
# thread state → (action, reason, the decision's summary_at is now, its deliver_at is now).
TABLE: dict[tuple[str, str], tuple[str, str, bool, bool]] = {}
for _state in ("idle", "active"):
    TABLE["urgent", _state] = ("deliver", f"urgent: delivered at once ({_state})", False, False)
    TABLE["low", _state] = ("summarize", f"low: summarised in the next digest ({_state})",
                            True, False)
TABLE["medium", "idle"] = ("deliver", "medium on an idle thread: delivered", False, False)
TABLE["high", "idle"] = ("deliver", "high on an idle thread: delivered", False, False)
TABLE["high", "active"] = ("summarize", "high on an active thread: a summary now, the full "
                           "notification once the thread is idle", False, True)
TABLE["medium", "active"] = ("summarize", "medium on an active thread: summarised in the next "
                             "digest", True, False)
Decision = tuple[str, str, bool, bool]
Stored = tuple[dict[str, Any], Decision, float]  # the record as stored, its decision, when


def schedule(decision: Decision) -> tuple[bool, bool]:
    """(summary due now, full delivery due now): what the decision sends at once, left due
    for a host's dispatcher instead (a digest now is a summary due now)."""
    action, _, summary_at, deliver_at = decision
    return (summary_at or (action == "summarize" and not summary_at),
            deliver_at or action == "deliver")


COLUMNS = (
    "id", "thread_id", "resource_id", "source", "kind", "priority", "status", "summary",
    "payload", "dedupe_key", "coalesce_key", "coalesced_count", "attributes", "metadata",
    "created_at", "updated_at", "delivered_at", "seen_at", "dismissed_at", "archived_at",
    "discarded_at", "failed_at", "deliver_at", "summary_at", "summarized_at",
    "delivery_attempts", "last_delivery_error",
)
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM notifications"
_UNCLAIMED = "(claimed_by IS NULL OR claim_expires_at<?)"
_MERGE = (
    f"{_SELECT} WHERE thread_id=? AND status='pending' AND source=? AND kind=?"
    " AND ((dedupe_key IS NOT NULL AND dedupe_key=?) OR (coalesce_key IS NOT NULL AND"
    f" coalesce_key=?)) AND {_UNCLAIMED} ORDER BY updated_at DESC LIMIT 1"
)
_INSERT = (
    "INSERT INTO notifications(id, thread_id, resource_id, source, kind, priority, status,"
    " summary, payload, dedupe_key, coalesce_key, coalesced_count, attributes, metadata,"
    " created_at, updated_at, discarded_at, deliver_at, summary_at, claimed_by,"
    " claim_expires_at) VALUES (?,?,?,?,?,?,'pending',?,'null',?,?,1,'{}','{}',?,?,NULL,?,?,"
    "NULL,NULL)"
)
_MERGE_UPDATE = (
    "UPDATE notifications SET summary=?, priority=?, payload='null',"
    " coalesced_count=coalesced_count+1, dedupe_key=?, coalesce_key=?, updated_at=?,"
    " deliver_at=?, summary_at=? WHERE id=? AND status='pending' AND " + _UNCLAIMED
)


class Fallback(Exception):
    """Not the lean path's case: the full path runs (and says what is wrong, if anything)."""


class _HandOver(argparse.ArgumentParser):
    """A command line the notify-only parser cannot read (another command, a typo) is the
    full parser's to read, and to explain. Its formatters, made to check each option as it is
    added, are given a width: argparse would import shutil for the terminal's (2 ms, with bz2
    and lzma); ``--help`` still gets the terminal's."""

    def error(self, message: str) -> NoReturn:
        raise Fallback(message)

    def format_help(self) -> str:
        self.helping = True
        return super().format_help()

    def format_usage(self) -> str:
        self.helping = True
        return super().format_usage()

    def _get_formatter(self) -> argparse.HelpFormatter:
        if getattr(self, "helping", False):
            return super()._get_formatter()
        return argparse.RawDescriptionHelpFormatter(prog=self.prog, width=100)  # build_parser's


def run_fast(argv: Sequence[str] | None) -> int | None:
    """``tui-agent notify …`` on the lean path: its exit status, or None for the full path."""
    from tui_agent.startup.args import build_parser, parse_args

    try:
        args = parse_args(argv, build_parser("notify", _HandOver))
        if args.command != "notify":
            return None
        path, stored = _notify(args)
    except (Fallback, sqlite3.Error, OSError, ValueError):
        return None  # nothing was committed: the full path does it, or names the problem
    # Committed: from here on nothing may hand over to the full path (it would send it again).
    if isinstance(stored, str):  # the thread does not exist: one line, exit 2
        sys.stderr.write(f"tui-agent: {stored}\n")
        return 2
    _report(stored, path)
    return 0


def _notify(args: argparse.Namespace) -> tuple[str, list[Stored] | str]:
    """Store the command line's notifications: the store file and what was stored (or the
    message naming a thread that does not exist). Fallback (nothing written) otherwise."""
    if args.wait or args.agent or args.agent_name or args.demo:
        raise Fallback
    settings = _settings(args)
    items = notifications_of(args, sys.stdin if args.stdin else None)
    if not items or not all(_plain(item) for item in items):
        raise Fallback
    path = _store_file(settings.get("db"))
    resource = settings.get("resource") or _default_resource()
    thread = settings.get("thread") or "main"
    if not _good_id(resource) or not _good_id(thread):
        raise Fallback
    return path, _store(path, resource, thread, items, named=args.thread_given and not args.new)


# -- the command line and settings --------------------------------------------------------------

def notifications_of(args: argparse.Namespace, stdin: Any) -> list[dict[str, Any]]:
    """The notifications the command line gives: its own, or one per line of ``stdin`` (a JSON
    object, or plain text: the summary, with ``--source``/``--kind``/``--priority``). Shared
    by the lean and the full path; a bad line is a ValueError naming its number."""
    defaults: dict[str, Any] = {"source": args.source, "kind": args.kind,
                                "priority": args.priority}
    for key in ("dedupe_key", "coalesce_key"):
        if getattr(args, key):
            defaults[key] = getattr(args, key)
    if stdin is None:
        return [{**defaults, "summary": " ".join(args.summary).strip()}]
    items: list[dict[str, Any]] = []
    for number, line in enumerate(stdin, 1):
        text = line.strip()
        if not text:
            continue
        if text.startswith("{"):
            try:
                given = json.loads(text)
            except ValueError as error:
                raise ValueError(f"notify --stdin: line {number} is not JSON: {error}") from None
            if not isinstance(given, dict):
                raise ValueError(f"notify --stdin: line {number} is not a JSON object")
            items.append({**{k: v for k, v in defaults.items() if v is not None}, **given})
        else:
            items.append({**defaults, "summary": text})
    return items


def _plain(item: dict[str, Any]) -> bool:
    """A notification whose every value this path checks as the full path does."""
    if set(item) - LEAN_KEYS or item.get("priority", "medium") not in PRIORITIES:
        return False
    for key in ("source", "kind", "summary"):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip() or not _text_ok(value):
            return False
    for key in ("dedupe_key", "coalesce_key"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value or
                                  not _text_ok(value)):
            return False
    return True


def _text_ok(value: str) -> bool:
    if value.isascii():
        return len(value) <= MAX_TEXT_BYTES
    try:
        return len(value.encode("utf-8")) <= MAX_TEXT_BYTES
    except UnicodeEncodeError:
        return False


def _good_id(value: str) -> bool:
    return bool(value.strip()) and len(value) <= MAX_ID_LENGTH and _text_ok(value)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """db, resource and thread by flags > environment > file, as ``load_settings`` reads them;
    anything this path does not read the same way is a Fallback."""
    if any(name.startswith("TUI_AGENT_") and name not in _ENV and value
           for name, value in os.environ.items()):
        raise Fallback
    values = _file_settings()
    for key in ("db", "resource", "thread", "model"):
        env = os.environ.get(f"TUI_AGENT_{key.upper()}")
        if env:
            values[key] = env
    for key in ("db", "resource", "thread"):
        given = getattr(args, key)
        if given is not None:
            values[key] = given
    model = values.get("model")
    if model is not None and (not isinstance(model, str) or "/" not in model.strip("/")):
        raise Fallback  # the full path names the bad model string
    return values


def _file_settings() -> dict[str, Any]:
    from tui_agent.paths import config_dir

    for candidate in (os.path.join(os.getcwd(), "tui-agent.toml"),
                      os.path.join(config_dir(), "tui-agent.toml")):
        if os.path.isfile(candidate):
            import tomllib

            with open(candidate, "rb") as file:
                values = tomllib.load(file)
            if set(values) - _FILE_KEYS or not all(
                    isinstance(values.get(k, ""), str) for k in ("db", "resource", "thread")):
                raise Fallback
            if not isinstance(values.get("agents", []), list):
                raise Fallback
            return values
    return {}


def _default_resource() -> str:
    user = os.environ.get("USER")
    if user:
        return user
    import getpass

    try:
        return getpass.getuser() or "local"
    except (KeyError, OSError):
        return "local"


def _store_file(db: str | None) -> str:
    """The SQLite file to write: it must exist, be private and writable (else the full path
    makes it, or says what is wrong with it)."""
    if db is None:
        from tui_agent.paths import data_dir

        db = os.path.join(data_dir(), "tui-agent.db")
    if "://" in db:
        if not db.startswith("sqlite:///") or db == "sqlite:///":
            raise Fallback  # PostgreSQL, or a URL the full path explains
        db = db.removeprefix("sqlite://")
    db = os.path.expanduser(db)
    if db == ":memory:" or db == "/:memory:":
        raise Fallback
    mode = os.stat(db).st_mode  # OSError (no such file): the full path
    if not os.path.isfile(db) or mode & 0o077 or not mode & 0o200 or not os.access(db, os.W_OK):
        raise Fallback  # a directory, a loose or read-only file: the full path's one line
    return db


# -- the transaction ----------------------------------------------------------------------------

def _store(path: str, resource: str, thread: str, items: list[dict[str, Any]], *,
           named: bool) -> list[Stored] | str:
    """Check the thread, then merge or insert each record, in one transaction. The stored
    records with their decisions, or the message naming a thread that does not exist."""
    connection = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    kept = False
    try:
        if connection.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            raise Fallback
        connection.execute("PRAGMA synchronous=NORMAL")  # as the store's own connections
        connection.execute("BEGIN IMMEDIATE")
        try:
            owner = connection.execute("SELECT resource_id FROM threads WHERE id=?",
                                       (thread,)).fetchone()
            if owner is None and not named:
                raise Fallback  # to be created: the full path does
            if owner is None:
                message = _missing(connection, thread, path)
                connection.execute("ROLLBACK")
                return message
            if owner[0] != resource:
                raise Fallback  # the full path names the thread's resource
            stored = [_save(connection, resource, thread, item) for item in items]
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        _KEPT.append(connection)  # see exit_now
        kept = True
        return stored
    finally:
        if not kept:
            connection.close()


_KEPT: list[sqlite3.Connection] = []


def exit_now(code: int) -> NoReturn:
    """End the ``tui-agent notify`` process at once: output flushed, no interpreter teardown,
    and the store's connection left unclosed. Closing the last connection of a SQLite file
    checkpoints its write-ahead log and deletes it (~10 ms of writes and fsync, and the next
    process recreates it); left open, the committed transaction stays in the log, durable as
    any commit (the OS keeps what was written), for the next connection, or the log's own
    autocheckpoint, to fold in. Only the real command line ends this way (``tui_agent.main``
    with no argv); a caller in-process gets the code back."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _missing(connection: sqlite3.Connection, thread: str, path: str) -> str:
    from tui_agent.cli.threads import closest_message

    names = [row[0] for row in connection.execute("SELECT id FROM threads")]
    return closest_message(thread, names, path, "add --new to create it")


def _save(connection: sqlite3.Connection, resource: str, thread: str, item: dict[str, Any]
          ) -> Stored:
    now = time.time()
    priority = item.get("priority", "medium")
    dedupe, coalesce = item.get("dedupe_key"), item.get("coalesce_key")
    active = connection.execute("SELECT 1 FROM leases WHERE thread_id=? AND expires_at>?",
                                (thread, now)).fetchone() is not None
    old: dict[str, Any] | None = None
    if dedupe is not None or coalesce is not None:
        found = connection.execute(_MERGE, (thread, item["source"], item["kind"], dedupe,
                                            coalesce, now)).fetchone()
        old = None if found is None else dict(zip(COLUMNS, found, strict=True))
    if old is not None:
        priority = max(old["priority"], priority, key=PRIORITIES.index)
    decision = TABLE[priority, "active" if active else "idle"]
    summary_due, deliver_due = schedule(decision)
    summary_at = now if summary_due else None
    deliver_at = now if deliver_due else None
    if old is not None:
        summary_at = _earliest(old["summary_at"], summary_at)
        deliver_at = _earliest(old["deliver_at"], deliver_at)
        touched = connection.execute(_MERGE_UPDATE, (
            item["summary"], priority, old["dedupe_key"] or dedupe,
            old["coalesce_key"] or coalesce, now, deliver_at, summary_at, old["id"], now,
        )).rowcount
        if touched == 1:
            return _read(connection, old["id"]), decision, now
        summary_at = now if summary_due else None  # taken meanwhile: a new record
        deliver_at = now if deliver_due else None
    record_id = os.urandom(16).hex()  # as uuid4().hex, the store's ids (uuid costs 3 ms)
    connection.execute(_INSERT, (record_id, thread, resource, item["source"], item["kind"],
                                 priority, item["summary"], dedupe, coalesce, now, now,
                                 deliver_at, summary_at))
    return _read(connection, record_id), decision, now


def _earliest(a: float | None, b: float | None) -> float | None:
    return min((x for x in (a, b) if x is not None), default=None)


def _read(connection: sqlite3.Connection, record_id: str) -> dict[str, Any]:
    row = connection.execute(f"{_SELECT} WHERE id=?", (record_id,)).fetchone()
    record: dict[str, Any] = {}
    for name, value in zip(COLUMNS, row, strict=True):
        if name in ("payload", "attributes", "metadata"):
            value = None if value is None else json.loads(value)
        elif name.endswith("_at"):
            value = _iso(value)
        record[name] = value
    return record


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


# -- what it prints -----------------------------------------------------------------------------

def _report(stored: list[Stored], path: str) -> None:
    from tui_agent.hosts import hosted

    who = answerer(hosted(path))
    for record, (action, reason, summary_at, deliver_at), now in stored:
        decision = {"action": action, "reason": reason,
                    "summary_at": _iso(now) if summary_at else None,
                    "deliver_at": _iso(now) if deliver_at else None}
        sys.stderr.write(f"{action} ({reason}) · {who}\n")
        sys.stdout.write(json.dumps({"record": record, "decision": decision},
                                    ensure_ascii=False) + "\n")


def answerer(host: bool | None) -> str:
    """Who sends what a notification's decision sends, said on stderr (both paths)."""
    if host is None:
        return "a process that has the store open sends it"
    if host:
        return "the process that hosts this store sends it now"
    return "no process hosts this store: the next one to open it sends it"
