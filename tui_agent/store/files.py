"""The store's files on disk: private, and a clear typed error when one is not a usable store.

Privacy: the directory a store creates is ``0700`` and the database ``0600`` whatever the umask
(the file is created before SQLite opens it; SQLite gives its ``-wal``/``-shm`` files the
database's mode, and they are set to ``0600`` again once open). An existing store or directory
that others can read gets an :class:`InsecureStoreWarning` (its mode is the owner's choice: it is
not changed). A file that is not a usable database (corrupt, truncated, not SQLite, a directory)
becomes one :class:`~tui_agent.errors.StoreCorruptError` naming the path instead of sqlite3's
error. Tests: ``tests/test_store_files.py``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import warnings
from pathlib import Path

from tui_agent.errors import StoreCorruptError, StoreError

DIR_MODE = 0o700
FILE_MODE = 0o600
SIDECARS = ("-wal", "-shm")

# sqlite3's messages for a file it cannot use as a database, and what to tell the user.
_UNUSABLE = {
    "file is not a database": "not a SQLite database",
    "database disk image is malformed": "corrupt or truncated",
    "unable to open database file": "cannot be opened as a database file",
}


class InsecureStoreWarning(UserWarning):
    """A store file or its directory can be read or written by other users."""


def prepare_store_file(path: str) -> None:
    """Create the store's directory (0700) and file (0600) if missing; warn if they exist with a
    looser mode. Raise a StoreError for a path that is a directory or cannot be created."""
    file = Path(path)
    if file.is_dir():
        raise StoreCorruptError(f"store {path} is a directory, not a database file")
    _make_private_dirs(file.parent)
    try:
        fd = os.open(file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        _check_writable(file)
        _warn_if_loose(file, "store file")
        return
    except OSError as error:
        raise StoreError(f"store {path} cannot be created: {error.strerror}") from None
    try:
        os.fchmod(fd, FILE_MODE)  # the umask could only have removed bits; this is exact
    finally:
        os.close(fd)


def _check_writable(file: Path) -> None:
    """A store is written to (even by reads: WAL, migrations): a read-only file is refused with
    one line, whoever runs (root may write a file of mode 0444, but it was made read-only)."""
    mode = _mode(file)
    if mode is not None and (not mode & 0o222 or not os.access(file, os.W_OK)):
        raise StoreCorruptError(
            f"store {file} is read-only (mode {mode:o}): tui-agent writes to its store; "
            f"chmod u+w {file}, or give another path with --db / TUI_AGENT_DB"
        )


def tighten_sidecars(path: str) -> None:
    """Set the ``-wal``/``-shm`` files to 0600 (SQLite copies the database's mode; a store made
    by an older version may have left them looser)."""
    database_mode = _mode(Path(path))
    if database_mode is None or database_mode & 0o077:
        return  # an existing, looser store: warned about, left as its owner set it
    for suffix in SIDECARS:
        with contextlib.suppress(OSError):  # absent, or another user's: nothing to do
            sidecar = Path(path + suffix)
            if (_mode(sidecar) or 0) & 0o077:
                sidecar.chmod(FILE_MODE)


def unusable_store_error(path: str, error: BaseException) -> StoreCorruptError | None:
    """A StoreCorruptError naming ``path`` if ``error`` says the file is no usable database."""
    if not isinstance(error, sqlite3.DatabaseError):
        return None
    message = str(error)
    for known, meaning in _UNUSABLE.items():
        if known in message:
            return StoreCorruptError(
                f"store {path} is {meaning} ({message}); restore it from a backup, or give "
                "another path with --db / TUI_AGENT_DB"
            )
    return None


def _make_private_dirs(directory: Path) -> None:
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    if not missing:
        _warn_if_loose(directory, "store directory")
        return
    for created in reversed(missing):
        try:
            created.mkdir(mode=DIR_MODE)
            created.chmod(DIR_MODE)
        except FileExistsError:  # another process made it meanwhile
            continue
        except OSError as error:
            raise StoreError(f"store directory {created} cannot be created: "
                             f"{error.strerror}") from None


def _warn_if_loose(path: Path, what: str) -> None:
    mode = _mode(path)
    # The file must be private; its directory only must not let others replace it (a home
    # or project folder readable by others is common, and the file's own mode protects it).
    loose = 0o022 if what == "store directory" else 0o077
    if mode is None or not mode & loose or not _owned(path) or _sticky(path):
        return
    warnings.warn(
        f"{what} {path} is readable by other users (mode {mode:o}); "
        f"chmod {'700' if what == 'store directory' else '600'} it to keep threads private",
        InsecureStoreWarning,
        stacklevel=4,
    )


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


def _sticky(path: Path) -> bool:
    """A sticky directory (/tmp): others may write in it but cannot replace our file."""
    try:
        return bool(path.stat().st_mode & stat.S_ISVTX)
    except OSError:
        return False


def _owned(path: Path) -> bool:
    try:
        return path.stat().st_uid == os.getuid()
    except (OSError, AttributeError):
        return False
