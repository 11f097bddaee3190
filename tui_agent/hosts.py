"""The host registry of a store file: whether a process holds the agent open on it.

A *host* is a process that keeps an agent open on a store and answers what others leave on its
threads: the app, ``tui-agent chat`` and ``tui-agent watch`` (``ThreadRuntime.host``). While it
lives it holds a shared ``flock`` on ``<store>-hosts`` beside the SQLite file; the operating
system drops the lock when the process ends, however it ends, so there is no lease to renew and
nothing stale to clean. ``tui-agent notify`` asks :func:`hosted` (one non-blocking exclusive
lock attempt, a few microseconds) to say who will answer: a host, or the next process that
opens the thread. Standard library only: the lean notify path imports it
(tests/test_cli_notify.py).

A store that is no file (PostgreSQL, ``:memory:``) has no registry here: :func:`hosted` is
None (unknown) and :func:`register` does nothing.
"""

from __future__ import annotations

import contextlib
import os

SUFFIX = "-hosts"


def registry_path(db_path: str) -> str:
    return db_path + SUFFIX


class HostLock:
    """This process's registration as a host of a store file, until :meth:`release`."""

    def __init__(self, db_path: str) -> None:
        import fcntl

        # The app registers before its store's first connection made the store's folder (a
        # first run): make it as the store does, private, or no one could know of this host.
        os.makedirs(os.path.dirname(os.path.abspath(db_path)), mode=0o700, exist_ok=True)
        self._fd: int | None = os.open(registry_path(db_path), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_SH)  # blocks only while a probe holds it (µs)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # closing drops the lock
            self._fd = None


def register(db_path: str | None) -> HostLock | None:
    """Register this process as a host of the store file (None: no file to register on)."""
    if not db_path or db_path == ":memory:":
        return None
    try:
        return HostLock(db_path)
    except OSError:  # a read-only folder: nobody can know of this host, it still answers
        return None


def hosted(db_path: str | None) -> bool | None:
    """Whether some process hosts the store file now (None: unknown, no file registry)."""
    if not db_path or db_path == ":memory:":
        return None
    import fcntl

    try:
        fd = os.open(registry_path(db_path), os.O_RDONLY)
    except FileNotFoundError:
        return False  # no host ever registered here
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True  # a host holds its shared lock
    except OSError:
        return None
    finally:
        os.close(fd)  # also drops the exclusive lock, if it was taken
    return False
