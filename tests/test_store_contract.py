"""The store contract (``tests/store_contract.py``) against every store: one factory each.

A store joins by adding a factory to ``STORE_FACTORIES`` (an async context manager that gives a
fresh, empty store and closes it). Today: SQLite on a file, SQLite in memory, and PostgreSQL (a
database of the test's own on the session's server, ``tests/pg_server.py``: skipped without
one, failed under CI=1).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pg_server
import pytest
import store_contract
from store_contract import StoreContract

from tui_agent.store import Store, open_store

StoreFactory = Callable[[Path, pytest.FixtureRequest], AbstractAsyncContextManager[Store]]


@asynccontextmanager
async def sqlite_file(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    store = open_store(tmp_path / "contract.sqlite")
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def sqlite_memory(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    store = open_store("sqlite:///:memory:")
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def postgres(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    async with pg_server.fresh_database(request.getfixturevalue("pg_admin_url")) as url:
        store = open_store(url)
        try:
            yield store
        finally:
            await store.close()


STORE_FACTORIES: dict[str, StoreFactory] = {
    "sqlite-file": sqlite_file,
    "sqlite-memory": sqlite_memory,
    "postgres": postgres,
}


@pytest.fixture(params=list(STORE_FACTORIES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with STORE_FACTORIES[request.param](tmp_path, request) as opened:
        assert isinstance(opened, Store), f"{request.param} does not implement the contract"
        yield opened


class TestStoreContract(StoreContract):
    pass


def test_every_method_of_the_contract_is_exercised() -> None:
    """A method added to ``Store`` needs a contract test before a second store can rely on it."""
    roles = [cls for cls in Store.__mro__ if cls.__module__ == Store.__module__]  # its Protocols
    members = {name for role in roles for name in vars(role) if not name.startswith("_")}
    assert len(members) > 50  # every role's methods, not only the composition's own
    source = Path(store_contract.__file__).read_text(encoding="utf-8")
    untested = sorted(name for name in members if f"store.{name}" not in source)
    assert not untested, f"no contract test calls Store.{untested}: add one to store_contract.py"
