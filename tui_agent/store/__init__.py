"""Stores: where threads, messages and each thread's ordered event log live.

``Store`` is the contract every store implements (``tui_agent.store.contract``), its records are
in ``tui_agent.store.records``, and ``open_store(url)`` opens one from a path or URL.
"""

from tui_agent.store.contract import Store
from tui_agent.store.sqlite import SqliteStore
from tui_agent.store.url import open_store

__all__ = ["SqliteStore", "Store", "open_store"]
