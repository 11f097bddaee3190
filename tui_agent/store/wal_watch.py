"""Being told when an SQLite file is written, instead of asking (Linux ``inotify``, via ctypes).

Every commit to a store in WAL mode ``write()``s its pages to the ``-wal`` file before it becomes
visible, and WAL only works between processes of one host (they share memory), so this kernel
sees every such write: an inotify watch on the file's folder hears each commit of every process.
The change feed (:mod:`tui_agent.store.changes`) then polls ``data_version`` only when told
(and briefly after: the commit becomes visible a moment after its last write), plus a slow
safety poll. Elsewhere (no inotify, or no free watch) :meth:`WalWatch.open` returns None and the
feed polls on its own. Tested by tests/test_change_feed.py.
"""

from __future__ import annotations

import errno
import os
import struct
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

_IN_MODIFY = 0x002
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_Q_OVERFLOW = 0x4000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len — then len bytes of name


class WalWatch:
    """A non-blocking inotify descriptor watching the folder of one SQLite file for writes to
    the file, its ``-wal`` or its ``-journal``. ``fileno()`` becomes readable on such a write;
    :meth:`drain` reads what is there."""

    def __init__(self, fd: int, names: frozenset[bytes]) -> None:
        self._fd = fd
        self._names = names

    @classmethod
    def open(cls, db_path: str) -> WalWatch | None:
        """A watch on ``db_path``'s writes, or None where inotify is not available."""
        libc = _libc()
        if libc is None:
            return None
        path = Path(db_path).resolve()
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        mask = _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO
        if libc.inotify_add_watch(fd, os.fsencode(path.parent), mask) < 0:
            os.close(fd)
            return None
        base = os.fsencode(path.name)
        return cls(fd, frozenset({base, base + b"-wal", base + b"-journal"}))

    def fileno(self) -> int:
        return self._fd

    def drain(self) -> bool:
        """Read every waiting event; True if one concerned the file (or some were lost)."""
        hit = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return hit
            except OSError as error:
                if error.errno == errno.EINTR:
                    continue
                raise
            hit = self._concerns(data) or hit

    def _concerns(self, data: bytes) -> bool:
        offset = 0
        while offset + _EVENT.size <= len(data):
            _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size:offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            if mask & _IN_Q_OVERFLOW or name in self._names:
                return True
        return False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _libc() -> ctypes.CDLL | None:
    """The C library with inotify's functions typed, or None (not Linux, or no inotify)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here, not at import: ``import tui_agent`` stays light

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc is in
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc
