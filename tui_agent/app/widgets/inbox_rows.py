"""How one inbox record reads: two lines, a third for a delivery that failed.

```
▸☐ ‼ urgent  ci/deploy_failed ×2                 4s
      ✗ failed · main · Deploy of v1.4 to prod failed
      ✗ 5 attempts · RuntimeError: the thread is gone
```

Priority and status each have a symbol and a word, so a row reads without colour too; colours
are theme variables (``$text-error`` …), readable on dark and light themes alike. Pure functions
of the record, the width and the time: the caller caches what they return.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from textual.content import Content

from tui_agent.app.widgets.inbox_filters import UNREAD, InboxRecord

PRIORITY_LOOK: dict[str, tuple[str, str]] = {
    "urgent": ("‼", "$text-error bold"),
    "high": ("!", "$text-warning bold"),
    "medium": ("•", "$text-primary"),
    "low": ("·", "$text-muted"),
}
STATUS_LOOK: dict[str, tuple[str, str]] = {
    "pending": ("◌", "$text-warning"),
    "delivered": ("✉", "$text-success"),
    "seen": ("✓", "$text-muted"),
    "dismissed": ("⊘", "$text-muted"),
    "archived": ("▣", "$text-muted"),
    "discarded": ("⌫", "$text-muted"),
    "failed": ("✗", "$text-error"),
}
INDENT = "      "  # lines 2 and 3 start under the priority word


def age_text(seconds: float) -> str:
    """``now`` (under a minute), ``3m``, ``2h``, ``5d``: it changes at most once a minute, so
    an idle inbox stays still (a clock a little ahead of a record shows ``now``)."""
    seconds = max(0.0, seconds)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


def ago(moment: datetime | None, now: float) -> str:
    """``just now`` or ``3m ago``, for a sentence."""
    age = age_of(moment, now)
    return "just now" if age == "now" else f"{age} ago"


def age_of(moment: datetime | None, now: float) -> str:
    return "" if moment is None else age_text(now - moment.timestamp())


def row_heights(records: Sequence[InboxRecord]) -> list[int]:
    """Each record's row height: 3 lines when a delivery failed (attempts and the last error),
    else 2."""
    return [3 if r.last_delivery_error else 2 for r in records]


def status_label(record: InboxRecord) -> tuple[str, str]:
    """The status word (``pending, summarised`` once a digest covered it) and its style."""
    symbol, style = STATUS_LOOK.get(record.status, ("?", "$text-muted"))
    word = record.status
    if record.status == "pending" and record.summarized_at is not None:
        word = "pending, summarised"
    return f"{symbol} {word}", style


def row_lines(record: InboxRecord, *, width: int, now: float, cursor: bool, marked: bool,
              changed: datetime | None = None) -> list[Content]:
    """The row's lines, each exactly ``width`` cells. The age is of ``changed`` (default: the
    record's ``updated_at``)."""
    age = age_of(changed or record.updated_at, now)
    lines = [_head(record, width, age, cursor, marked), _body(record, width)]
    if record.last_delivery_error:
        lines.append(_failure(record, width))
    return lines


def _head(record: InboxRecord, width: int, age: str, cursor: bool, marked: bool) -> Content:
    symbol, style = PRIORITY_LOOK.get(record.priority, ("?", ""))
    unread = record.status in UNREAD
    what = Content.assemble(
        ("▸" if cursor else " ", "bold"),
        ("☑" if marked else "☐", "$text-accent bold" if marked else "$text-muted"),
        " ", (f"{symbol} {record.priority:<6}", style), " ",
        (f"{record.source}/{record.kind}", "bold" if unread else "$text-muted"),
        (f" ×{record.coalesced_count}" if record.coalesced_count > 1 else "", "$text-accent"),
    )
    room = max(1, width - len(age) - 1)
    return Content.assemble(what.truncate(room, ellipsis=True, pad=True), " ",
                            (age, "$text-muted")).truncate(width, pad=True)


def _body(record: InboxRecord, width: int) -> Content:
    status, style = status_label(record)
    summary_style = "" if record.status in UNREAD else "$text-muted"
    return Content.assemble(
        INDENT, (status, style), " · ", (record.thread_id, "$text-secondary"), " · ",
        (_one_line(record.summary), summary_style),
    ).truncate(width, ellipsis=True, pad=True)


def _failure(record: InboxRecord, width: int) -> Content:
    attempts = record.delivery_attempts
    label = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    return Content.assemble(
        INDENT, (f"✗ {label}", "$text-error bold"), " · ",
        (_one_line(record.last_delivery_error or ""), "$text-error"),
    ).truncate(width, ellipsis=True, pad=True)


def detail_text(record: InboxRecord, now: float) -> Content:
    """The cursor's record in full (the summary and the last error wrap): for the panel under
    the list."""
    status, style = status_label(record)
    symbol, priority_style = PRIORITY_LOOK.get(record.priority, ("?", ""))
    times = [f"created {ago(record.created_at, now)}"]
    if record.updated_at != record.created_at:
        times.append(f"changed {ago(record.updated_at, now)}")
    if record.delivered_at is not None:
        times.append(f"delivered {ago(record.delivered_at, now)}")
    parts: list[str | tuple[str, str]] = [
        (f"{symbol} {record.priority}", priority_style), " ",
        (f"{record.source}/{record.kind}", "bold"),
        (f" ×{record.coalesced_count}" if record.coalesced_count > 1 else "", "$text-accent"),
        " · ", (status, style), "\n",
        (f"{record.resource_id}/{record.thread_id}", "$text-secondary"), " · ",
        (" · ".join(times), "$text-muted"), "\n", record.summary,
    ]
    if record.last_delivery_error:
        attempts = record.delivery_attempts
        parts += ["\n", (f"✗ {attempts} delivery attempt{'s' if attempts != 1 else ''}, "
                         f"last error: {record.last_delivery_error}", "$text-error")]
    return Content.assemble(*parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())
