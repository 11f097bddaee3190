"""Stores: where threads, messages and each thread's ordered event log live."""

from tui_agent.store.sqlite import SqliteStore

__all__ = ["SqliteStore"]
