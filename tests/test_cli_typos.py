"""A typo creates nothing (issue 21, point 6), through the real ``tui-agent`` commands.

A ``-t`` thread that does not exist is exit 2 with one line naming it and the closest names,
unless ``--new`` (send, notify, state) or ``--wait`` (watch); ``chat -t NEW`` creates it and says
so; the default thread is made on first use. An explicit ``--db`` in a folder that does not
exist, and a file that is no store, are one line each. On SQLite and PostgreSQL where a store
is involved.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli import SCRIPTED, Command, run


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


def one_line(code: int, out: str, err: str) -> str:
    assert code == 2, (code, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip() and "warning:" not in line]
    assert len(lines) == 1, err
    return lines[0]


def threads_of(db: str) -> list[str]:
    """The store's thread ids, as `search` sees them (any thread that was created)."""
    _, out, _ = run("--db", db, "search", "--json", "--limit", "500", "hello")
    return sorted({json.loads(line)["thread_id"] for line in out.splitlines()})


def test_a_named_thread_that_does_not_exist_is_exit_2_with_the_closest_names(db: str) -> None:
    code, _, err = run("--db", db, "send", "--agent", SCRIPTED, "-t", "standup", "--new",
                       "hello")
    assert code == 0, err
    for command in (["send", "hello"], ["notify", "--source", "ci", "--kind", "b", "hello"],
                    ["state", "--lane", "l", "{}"], ["watch"]):
        line = one_line(*run("--db", db, "--agent", SCRIPTED, "-t", "standpu", *command))
        assert "no thread 'standpu'" in line and "(closest: standup)" in line, line
        assert ("--wait" if command == ["watch"] else "--new") in line
    code, _, err = run("--db", db, "export", "-t", "standpu")
    assert code == 2 and "no thread 'standpu'" in err  # nothing was created
    assert threads_of(db) == ["standup"]


def test_new_creates_the_thread_and_the_default_thread_is_made_on_first_use(db: str) -> None:
    assert run("--db", db, "send", "--agent", SCRIPTED, "hello default")[0] == 0  # main
    assert run("--db", db, "--agent", SCRIPTED, "-t", "n1", "notify", "--new", "--source", "ci",
               "--kind", "build", "--wait", "hello notify")[0] == 0
    assert run("--db", db, "--agent", SCRIPTED, "-t", "s1", "state", "--new", "--lane", "l",
               '{"hello": 1}')[0] == 0
    code, _, err = run("--db", db, "--agent", SCRIPTED, "-t", "s1", "state", "--lane", "l",
                       '{"hello": 2}')
    assert code == 0, err  # it exists now
    assert set(threads_of(db)) >= {"main", "n1"}


def test_watch_wait_waits_for_a_thread_that_does_not_exist_yet(db: str) -> None:
    watch = Command("--db", db, "watch", "--agent", SCRIPTED, "-t", "later", "--wait", "--json")
    watch.wait_for("watching", "stderr")
    code, _, err = run("--db", db, "send", "--agent", SCRIPTED, "-t", "later", "--new", "hello")
    assert code == 0, err
    watch.wait_for('"type": "finish"')
    watch.process.send_signal(signal.SIGINT)
    assert watch.finish()[0] == 0


def test_chat_on_a_new_thread_creates_it_and_says_so(db: str) -> None:
    chat = Command("--db", db, "chat", "--agent", SCRIPTED, "-t", "fresh", stdin=True)
    chat.wait_for("model ready")
    chat.write("/quit")
    code, out, err = chat.finish()
    assert code == 0, err
    assert "new thread" in out and "/fresh created" in out
    code, _, err = run("--db", db, "export", "-t", "fresh")
    assert code == 0, err  # it exists


def test_an_explicit_store_in_a_folder_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    line = one_line(*run("--db", str(missing / "x.db"), "send", "--agent", SCRIPTED, "hi"))
    assert f"store folder {missing} does not exist" in line
    assert not (tmp_path / "no").exists()
    line = one_line(*run("send", "--agent", SCRIPTED, "hi",
                         env={"TUI_AGENT_DB": str(missing / "x.db")}))
    assert "TUI_AGENT_DB" in line and str(missing) in line


def _not_a_store(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.db"
    if kind == "random":
        path.write_bytes(bytes(range(256)) * 40)
    elif kind == "directory":
        path.mkdir()
    else:
        assert run("--db", str(path), "send", "--agent", SCRIPTED, "hello")[0] == 0
        if kind == "read-only":
            path.chmod(0o444)
        else:  # a store of a newer schema
            with sqlite3.connect(path) as connection:
                connection.execute("PRAGMA user_version = 99")
    return path


@pytest.mark.parametrize("kind", ["random", "directory", "read-only", "newer"])
def test_a_file_that_is_not_a_store_is_one_clear_line(tmp_path: Path, kind: str) -> None:
    path = _not_a_store(tmp_path, kind)
    expected = {"random": "not a SQLite database", "directory": "is a directory",
                "read-only": "is read-only", "newer": "newer than this tui-agent"}[kind]
    for command in (["send", "hi"], ["notify", "--source", "ci", "--kind", "b", "hi"],
                    ["watch"], ["search", "hi"], ["export"]):
        line = one_line(*run("--db", str(path), "--agent", SCRIPTED, *command))
        assert expected in line and str(path) in line, (command, line)
