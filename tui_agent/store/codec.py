"""How the stores write JSON values and make ids: one encoder for every store, so a value
round-trips the same whichever store keeps it (``tests/test_store_contract.py``)."""

from __future__ import annotations

import os

from tui_agent._util import dumps, loads

__all__ = ["dumps", "loads", "new_id"]


def new_id() -> str:
    """32 random hex digits (uuid4().hex's form and randomness without the UUID object: a
    burst of queued messages makes one per signal)."""
    return os.urandom(16).hex()
