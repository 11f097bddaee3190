"""How the stores write JSON values and make ids: one encoder for every store, so a value
round-trips the same whichever store keeps it (``tests/test_store_contract.py``)."""

from __future__ import annotations

import json
import uuid
from typing import Any


def dumps(value: Any) -> str:
    """Compact JSON text; a value JSON cannot hold (a datetime, a set) is stored as its str."""
    return json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def new_id() -> str:
    return uuid.uuid4().hex
