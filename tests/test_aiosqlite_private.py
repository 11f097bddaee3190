"""The three aiosqlite internals the SQLite store relies on (``tui_agent/store/
aiosqlite_private.py``) still behave as on the versions pinned in ``pyproject.toml``. If one
fails, aiosqlite changed: the message says which internal and which version."""

from __future__ import annotations

import sqlite3
import threading
import tomllib
from importlib.metadata import version
from pathlib import Path

import aiosqlite
import pytest

from tui_agent.store.aiosqlite_private import (
    make_worker_daemon,
    raw_connection,
    run_with_connection,
)

PINNED = "<0.23,>=0.22"  # as packaging writes the specifier of pyproject.toml's pin
ROOT = Path(__file__).resolve().parent.parent


def _changed(what: str) -> str:
    return (
        f"aiosqlite {version('aiosqlite')} changed {what}, which tui_agent/store/"
        f"aiosqlite_private.py relies on (tested on aiosqlite{PINNED}): adapt that module, "
        "then widen the pin in pyproject.toml"
    )


async def test_a_function_runs_on_the_worker_thread_with_the_raw_connection(
    tmp_path: Path,
) -> None:
    db = await aiosqlite.connect(tmp_path / "p.db", isolation_level=None)
    seen: dict[str, object] = {}

    def body(conn: object, value: int) -> int:
        seen["conn"], seen["thread"] = conn, threading.current_thread()
        return value + 1

    try:
        try:
            result = await run_with_connection(db, body, 41)
        except (AttributeError, TypeError) as error:
            pytest.fail(_changed(f"Connection._execute/_conn ({error})"))
        assert result == 42, _changed("what Connection._execute returns")
        assert isinstance(seen["conn"], sqlite3.Connection), _changed("Connection._conn")
        assert seen["thread"] is not threading.main_thread(), _changed(
            "where Connection._execute runs a function"
        )
        try:
            here = raw_connection(db)
        except (AttributeError, ValueError) as error:
            pytest.fail(_changed(f"Connection._conn ({error})"))
        assert here is seen["conn"], _changed("Connection._conn")
    finally:
        await db.close()


async def test_the_worker_thread_can_be_made_a_daemon(tmp_path: Path) -> None:
    connection = aiosqlite.connect(tmp_path / "d.db")
    try:
        make_worker_daemon(connection)
    except AttributeError as error:
        pytest.fail(_changed(f"Connection._thread ({error})"))
    db = await connection
    try:
        worker = await run_with_connection(db, lambda _conn: threading.current_thread())
        assert worker.daemon, _changed("Connection._thread (not the worker thread it starts)")
    finally:
        await db.close()


def test_the_installed_version_is_the_pinned_one() -> None:
    from packaging.requirements import Requirement

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = [Requirement(d) for d in pyproject["project"]["dependencies"]]
    pin = next(r for r in pins if r.name == "aiosqlite")
    assert str(pin.specifier) == PINNED.replace(" ", ""), "keep PINNED and pyproject.toml equal"
    assert version("aiosqlite") in pin.specifier, _changed("its version")
