"""``tui-agent notify`` returns at once, and a host answers (issue 21, points 3 and 7).

Real processes: ``notify`` returns once its record is stored and its decision made; the
process that hosts the store (``watch`` here, as the app and ``chat`` do) sends what the
decision sends, heard on the store's change feed; with no host the next process to open the
store sends it; ``--wait`` runs the wake in ``notify`` itself, as before. SQLite goes through
the lean path (standard library only), PostgreSQL (and ``--agent``) through the full one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_cli import ROOT, SCRIPTED, Command, run

from tui_agent.cli import notify_fast
from tui_agent.hosts import hosted, register
from tui_agent.notifications.policy import PRIORITIES, default_decision
from tui_agent.store.schema import SCHEMA_VERSION

NOTIFY = ("notify", "--source", "ci", "--kind", "build")


@pytest.fixture(autouse=True)
def _commands_ended() -> Iterator[None]:
    yield
    while Command.started:
        Command.started.pop().end()


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "cli.db")
    return str(request.getfixturevalue("pg_database"))


def new_thread(db: str, thread: str = "main") -> None:
    code, _, err = run("--db", db, "send", "--agent", SCRIPTED, "-t", thread, "--new", "hello")
    assert code == 0, err


def notify(db: str, *args: str, agent: bool = False) -> tuple[int, list[dict[str, Any]], str]:
    """One ``tui-agent notify`` process; the lean path is taken on SQLite (no --agent)."""
    extra = ("--agent", SCRIPTED) if agent or db.startswith("postgresql") else ()
    code, out, err = run("--db", db, *extra, *NOTIFY, *args)
    return code, [json.loads(line) for line in out.splitlines()], err


def records(db: str, thread: str = "main") -> list[dict[str, Any]]:
    code, out, err = run("--db", db, "export", "-t", thread, "--format", "json")
    assert code == 0, err
    return json.loads(out)["notifications"]


def host(db: str) -> Command:
    watch = Command("--db", db, "watch", "--agent", SCRIPTED, "-t", "main", "--json")
    watch.wait_for("watching", "stderr")
    return watch


def stop(watch: Command) -> str:
    watch.process.send_signal(signal.SIGINT)
    code, out, _ = watch.finish()  # it ends (a host's dispatcher once lost its cancellation)
    assert code == 0
    return out


# -- the host answers ---------------------------------------------------------------------------


def test_notify_returns_at_once_and_the_host_answers_every_one(db: str) -> None:
    new_thread(db)
    watch = host(db)
    for n in range(5):
        code, _, err = notify(db, "-t", "main", f"build {n} failed")
        assert code == 0, err
        said = err.splitlines()[-1]  # one line, whatever its length (never wrapped)
        assert said.startswith("deliver (medium on an idle thread: delivered) · "), err
        assert said.endswith(("the process that hosts this store sends it now",
                              "a process that has the store open sends it")), err
        assert "echo:" not in err  # nothing ran here
        # The host's run for it ends before the next is sent: a medium notification that
        # finds the thread still busy is summarised instead (the policy), not delivered.
        watch.wait_for('"type": "finish"', times=n + 1)
    code, _, err = notify(db, "-t", "main", "--priority", "low", "flaky test")
    assert code == 0 and "summarize" in err
    text = watch.wait_for("notification-summary")  # the digest of the low one
    assert all(f"build {n} failed" in text for n in range(5))
    stop(watch)
    by_summary = {r["summary"]: r for r in records(db)}
    assert all(by_summary[f"build {n} failed"]["status"] == "delivered" for n in range(5))
    assert by_summary["flaky test"]["summarized_at"] is not None


def test_with_no_host_the_next_process_to_open_the_store_answers(db: str) -> None:
    new_thread(db)
    code, _, err = notify(db, "-t", "main", "deploy done")
    assert code == 0, err
    assert "the next one to open it sends it" in err or "a process that has" in err
    watch = host(db)  # opens the store: it sends what waits
    watch.wait_for("deploy done")
    watch.wait_for('"type": "finish"')
    stop(watch)
    assert [r["status"] for r in records(db) if r["summary"] == "deploy done"] == ["delivered"]


def test_notify_wait_runs_the_wake_itself(db: str) -> None:
    new_thread(db)
    code, outcome, err = notify(db, "-t", "main", "--wait", "release cut", agent=True)
    assert code == 0, err
    assert outcome[0]["record"]["status"] == "delivered"
    code, out, _ = run("--db", db, "export", "-t", "main")
    assert "echo: <notification" in out and "release cut" in out  # answered before it exited


def test_send_no_wait_holds_the_wake_for_the_host(db: str) -> None:
    new_thread(db)
    watch = host(db)
    code, out, err = run("--db", db, "send", "--agent", SCRIPTED, "-t", "main", "--no-wait",
                         "--as", "Devin", "any blockers?")
    assert code == 0, err
    assert err.startswith("hold") and out == ""
    watch.wait_for('"type": "finish"')
    chunks = [json.loads(line) for line in stop(watch).splitlines()]
    text = "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta")
    assert text == 'echo: <user name="Devin">any blockers?</user>'  # answered by the host


# -- the lean path ------------------------------------------------------------------------------


def test_the_lean_path_imports_the_standard_library_only(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    new_thread(db)
    script = ("import sys; from tui_agent.main import main; code = main(sys.argv[1:]); "
              "import json; print(json.dumps(sorted(sys.modules)), file=sys.stderr); "
              "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script, "--db", db, *NOTIFY, "hi"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    heavy = {"asyncio", "pydantic", "pydantic_settings", "litellm", "textual", "rich",
             "jsonschema", "aiosqlite", "httpx", "tui_agent.store", "tui_agent.agent"}
    assert not loaded & heavy, loaded & heavy
    assert json.loads(done.stdout)["record"]["summary"] == "hi"


def test_the_lean_table_is_the_built_in_policy() -> None:
    now = datetime.now(UTC)
    for priority in PRIORITIES:
        for state in ("idle", "active"):
            decision = default_decision(priority, state, now)
            action, reason, summary_at, deliver_at = notify_fast.TABLE[priority, state]
            assert (action, reason) == (decision.action, decision.reason)
            assert summary_at == (decision.summary_at is not None)
            assert deliver_at == (decision.deliver_at is not None)
    assert notify_fast.SCHEMA_VERSION == SCHEMA_VERSION  # a new migration: check the SQL


def test_lean_and_full_paths_store_the_same_records(tmp_path: Path) -> None:
    """The same notifications, merges included, through each path into a store of its own."""
    sent = [("--priority", "low", "--coalesce-key", "ci", "one"),
            ("--priority", "urgent", "--coalesce-key", "ci", "two"),
            ("--dedupe-key", "d1", "--priority", "low", "three"),
            ("--dedupe-key", "d1", "--priority", "high", "four"),
            ("--priority", "high", "five")]
    stored: dict[str, list[dict[str, Any]]] = {}
    for kind in ("lean", "full"):
        db = str(tmp_path / f"{kind}.db")
        new_thread(db)
        for args in sent:
            code, _, err = notify(db, "-t", "main", *args, agent=kind == "full")
            assert code == 0, err
        stored[kind] = records(db)
    same = ("source", "kind", "priority", "summary", "dedupe_key", "coalesce_key",
            "coalesced_count", "attributes", "metadata", "payload")
    assert [[r[k] for k in same] for r in stored["lean"]] == [
        [r[k] for k in same] for r in stored["full"]]
    assert [r["summary"] for r in stored["lean"]] == ["two", "four", "five"]


def test_notify_stdin_sends_one_notification_per_line(db: str) -> None:
    new_thread(db)
    lines = ('plain text line\n{"summary": "as json", "priority": "low", "source": "gh",'
             ' "kind": "pr"}\n\n{"summary": "with key", "dedupe_key": "k"}\n')
    extra = ("--agent", SCRIPTED) if db.startswith("postgresql") else ()
    done = subprocess.run([sys.executable, "-m", "tui_agent", "--db", db, *extra, *NOTIFY,
                           "-t", "main", "--stdin"], input=lines, cwd=ROOT,
                          capture_output=True, text=True, timeout=30, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["record"]["summary"] for o in outcomes] == ["plain text line", "as json",
                                                           "with key"]
    assert [o["record"]["source"] for o in outcomes] == ["ci", "gh", "ci"]
    assert {r["summary"] for r in records(db)} >= {"plain text line", "as json", "with key"}


# -- the registry -------------------------------------------------------------------------------


def test_the_host_registry_says_whether_a_host_lives(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    assert hosted(db) is False
    lock = register(db)
    assert lock is not None and hosted(db) is True
    lock.release()
    assert hosted(db) is False
    assert hosted(":memory:") is None and hosted(None) is None


def test_a_host_registers_before_its_stores_folder_exists(tmp_path: Path) -> None:
    """The app hosts before its store's first connection creates the folder (a first run):
    it registered nothing, and ``send --no-wait`` said no process hosted the store."""
    db = str(tmp_path / "new" / "data" / "x.db")
    lock = register(db)
    assert lock is not None and hosted(db) is True
    assert (tmp_path / "new" / "data").stat().st_mode & 0o777 == 0o700
    lock.release()
