"""Where SQLite's SQL and PostgreSQL's differ: one small table per dialect.

Every statement the shared roles run (``reads.py``, ``lanes.py``, ``inbox.py``) is written once,
with ``?`` placeholders in the order of the arguments, and ``{name}`` slots for what the two
engines spell differently. :meth:`Dialect.sql` fills the slots from its table and, for
PostgreSQL, numbers the placeholders ``$1, $2, …``; the result is kept, so a statement is
rendered once per process. Tests: ``tests/test_store_dialect.py``; the statements themselves
run in the contract suite on both stores (``tests/test_store_contract.py``).

The slots:

- ``{now}``: the clock leases live by. SQLite: the caller's ``time.time()``, passed as an
  argument (``*dialect.now_args()`` where the slot stands); PostgreSQL: the server's clock, so
  two machines whose clocks differ never take each other's live run for dead.
- ``{signal_data}``: the data of signal row ``s``. SQLite keeps a large one out of line (in
  ``signal_data``: rewriting a row on a status change would copy it); PostgreSQL's TOAST does
  that by itself.
  Where it keeps it is ``spill_chars``: a signal's data longer than that (characters of JSON)
  goes to ``signal_data``; None: always in its row.
- ``{rownum}``: a notification's insertion order (SQLite's ``rowid``, PostgreSQL's column).
- ``{greatest}``: the larger of two values (``max`` / ``greatest``).
- ``{ilike}``: a literal, ASCII-case-blind match (SQLite's ``LIKE`` is; PostgreSQL's ``ILIKE``).
- ``{skip_locked}`` / ``{for_update}``: row locks of a claim and of a read-then-write.
  SQLite needs none: its write transaction (``BEGIN IMMEDIATE``) already excludes every other
  writer.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Final

_PLACEHOLDER: Final = re.compile(r"\?")
_SLOT: Final = re.compile(r"\{(now|signal_data|rownum|greatest|ilike|skip_locked|for_update)\}")


@dataclass(frozen=True)
class Dialect:
    """One engine's spelling of the slots (see the module docstring)."""

    name: str
    numbered: bool  # placeholders $1, $2, … instead of ?
    now: str
    signal_data: str
    spill_chars: int | None
    rownum: str
    greatest: str
    ilike: str
    skip_locked: str
    for_update: str
    # A transaction-scoped lock on a key (a thread, a lane): None where the write transaction
    # itself serialises writers (SQLite).
    lock_key: str | None
    # The number at a JSON path of ``payload``: ``{dotted}`` (``usage.input_tokens``) or
    # ``{commas}`` (``usage,input_tokens``), as the engine writes a path.
    json_number: str
    _rendered: dict[str, str] = field(default_factory=dict[str, str], compare=False, repr=False)

    def sql(self, statement: str) -> str:
        """``statement`` in this dialect: slots filled, placeholders numbered if need be."""
        rendered = self._rendered.get(statement)
        if rendered is None:
            slots = self._slots()
            rendered = _SLOT.sub(lambda match: slots[match[1]], statement)
            if self.numbered:
                numbers = iter(range(1, 1 << 16))
                rendered = _PLACEHOLDER.sub(lambda _match: f"${next(numbers)}", rendered)
            self._rendered[statement] = rendered
        return rendered

    def now_args(self) -> tuple[float, ...]:
        """The arguments a ``{now}`` slot takes: the caller's clock on SQLite, none on
        PostgreSQL (the server reads its own)."""
        return () if self.numbered else (time.time(),)

    def usage(self, key: str) -> str:
        """The sum of ``payload``'s ``usage.<key>`` token count (0 where absent)."""
        number = self.json_number.format(dotted=f"usage.{key}", commas=f"usage,{key}")
        return f"COALESCE(SUM({number}), 0)"

    def _slots(self) -> dict[str, str]:
        return {
            "now": self.now, "signal_data": self.signal_data, "rownum": self.rownum,
            "greatest": self.greatest, "ilike": self.ilike, "skip_locked": self.skip_locked,
            "for_update": self.for_update,
        }


SQLITE: Final = Dialect(
    name="sqlite",
    numbered=False,
    now="?",
    signal_data="COALESCE((SELECT b.data FROM signal_data b WHERE b.id=s.id), s.data)",
    spill_chars=2048,
    rownum="rowid",
    greatest="max",
    ilike="LIKE",
    skip_locked="",
    for_update="",
    lock_key=None,
    json_number="json_extract(payload, '$.{dotted}')",
)

POSTGRES: Final = Dialect(
    name="postgres",
    numbered=True,
    now="extract(epoch from clock_timestamp())::double precision",
    signal_data="s.data",
    spill_chars=None,
    rownum="rownum",
    greatest="greatest",
    ilike="ILIKE",
    skip_locked=" FOR UPDATE SKIP LOCKED",
    for_update=" FOR UPDATE",
    lock_key="SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
    json_number="(payload::jsonb #>> '{{{commas}}}')::numeric",
)
