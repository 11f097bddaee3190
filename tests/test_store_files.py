"""The store's files: private whatever the umask, a warning for a looser existing one, and a
typed error (never sqlite3's) for a file that is not a usable store (issue 11)."""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui_agent import Memory, SqliteStore
from tui_agent.errors import StoreCorruptError, StoreError
from tui_agent.store.files import InsecureStoreWarning


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest umask: anything private below is made private on purpose."""
    old = os.umask(0)
    yield
    os.umask(old)


async def test_a_new_store_is_private_whatever_the_umask(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "new" / "deeper" / "store.db"
    store = SqliteStore(path)
    try:
        await store.ensure_thread("t", "r")
        await store.append("t", "r", events=[])
        assert _mode(path.parent) == 0o700
        assert _mode(path.parent.parent) == 0o700
        assert _mode(path) == 0o600
        sidecars = [Path(f"{path}{s}") for s in ("-wal", "-shm")]
        assert [p for p in sidecars if p.exists()], "WAL mode makes -wal/-shm files"
        for sidecar in sidecars:
            if sidecar.exists():
                assert _mode(sidecar) == 0o600, sidecar
    finally:
        await store.close()


async def test_an_existing_store_others_can_read_gets_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    path.touch()
    path.chmod(0o644)
    store = SqliteStore(path)
    try:
        with pytest.warns(InsecureStoreWarning, match=r"shared.db is readable by other users"):
            await store.list_threads()
        assert _mode(path) == 0o644  # its owner's choice: warned about, not changed
    finally:
        await store.close()


async def test_a_private_store_gets_no_warning(tmp_path: Path, recwarn: pytest.WarningsRecorder
                                               ) -> None:
    store = SqliteStore(tmp_path / "private.db")
    try:
        await store.list_threads()
    finally:
        await store.close()
    assert [w for w in recwarn if w.category is InsecureStoreWarning] == []


def _corrupt_files(tmp_path: Path, good: Path) -> dict[str, Path]:
    data = good.read_bytes()
    files = {
        "truncated": (tmp_path / "truncated.db", data[: len(data) // 2]),
        "garbled": (tmp_path / "garbled.db",
                    data[:4096] + bytes((b ^ 0x5A) for b in data[4096:])),
        "not a database": (tmp_path / "text.db", b"hello, not a database\n" * 100),
        "bad header": (tmp_path / "header.db", b"X" * 16 + data[16:]),
    }
    for path, content in files.values():
        path.write_bytes(content)
        path.chmod(0o600)
    directory = tmp_path / "directory.db"
    directory.mkdir()
    return {**{k: p for k, (p, _) in files.items()}, "a directory": directory}


async def make_store_with_history(path: Path) -> None:
    store = SqliteStore(path)
    try:
        for i in range(40):
            await store.append("t", "r", events=[])
            await Memory(store=store).save_messages(
                [{"role": "user", "content": f"message {i} " * 100}], thread_id="t",
                resource_id="r")
        await store.close()
    finally:
        await store.close()
    for suffix in ("-wal", "-shm"):  # a closed store has checkpointed its WAL
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("kind", ["truncated", "garbled", "not a database", "bad header",
                                  "a directory"])
async def test_an_unusable_store_file_is_a_typed_error_naming_it(tmp_path: Path, kind: str) -> None:
    good = tmp_path / "good.db"
    await make_store_with_history(good)
    path = _corrupt_files(tmp_path, good)[kind]
    store = SqliteStore(path)
    memory = Memory(store=store)
    try:
        with pytest.raises(StoreError) as caught:
            await memory.list_messages("t", limit=1000)
            await store.ensure_thread("t2", "r")
        assert isinstance(caught.value, StoreCorruptError)
        assert str(path) in str(caught.value)
    finally:
        await store.close()


async def test_a_directory_others_can_write_gets_a_warning_unless_sticky(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    store = SqliteStore(shared / "s.db")
    try:
        with pytest.warns(InsecureStoreWarning, match="store directory"):
            await store.list_threads()
    finally:
        await store.close()
    shared.chmod(0o1777)  # like /tmp: others cannot replace the file
    store = SqliteStore(shared / "t.db")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", InsecureStoreWarning)
            await store.list_threads()
    finally:
        await store.close()
