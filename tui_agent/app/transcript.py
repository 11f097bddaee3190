"""A pane's transcript as plain data: what a thread's history and live events *mean* on screen.

No Textual here: ``Transcript`` folds stored messages (``Memory.list_messages``) and live chunks
(``subscribe_to_thread``) into ``Entry`` objects — a user message with its author, an assistant
answer, a tool call with its result, a signal, a run's end marker — and records which entries
are new or changed since the widgets last looked (``take_changes``). The pane's widgets are a
view of it; its tests (``tests/app/test_transcript.py``) need no screen.

Guarantees: an event is never shown twice (a run replayed to a pane that joins mid-run replaces
what history had of that run; a signal echo already shown from history is skipped), and the
model only ever holds what the pane keeps mounted (``prune_to``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tui_agent import events
from tui_agent.signals.data import signal_text

SIGNAL_ICONS = {"state": "⟳", "notification": "✉", "reactive": "↺", "digest": "✉"}


@dataclass(eq=False)
class Entry:
    """One thing on screen. ``kind``: user, assistant, tool, signal, marker."""

    key: str
    kind: str
    run_id: str | None = None
    message_id: str | None = None  # the stored message it came from, when known
    text: str = ""  # user text, assistant Markdown, signal contents, marker text
    author: str = ""  # user: name; assistant: agent id
    source: str = ""  # user: the ``from`` attribute
    status: str = ""  # assistant: streaming|done|aborted|failed|interrupted;
    # tool: running|waiting (for approval)|ok|error
    tag: str = ""  # signal: tag name (or type); tool: tool name
    signal_type: str = ""  # signal: state, notification, reactive, digest, custom
    attributes: dict[str, Any] = field(default_factory=dict)
    args: Any = None  # tool arguments
    result: Any = None  # tool result
    signal_id: str | None = None
    superseded: str = ""  # what superseded it: a retry's run id, or "edit" ("": in force)


@dataclass
class Changes:
    """What changed since the widgets last looked, in the order to apply it."""

    prepended: list[Entry] = field(default_factory=list)  # older history, oldest first
    added: list[Entry] = field(default_factory=list)  # new at the bottom, in order
    changed: list[Entry] = field(default_factory=list)
    removed: list[Entry] = field(default_factory=list)


@dataclass
class RunInfo:
    """What the pane header shows of a run."""

    run_id: str
    agent_id: str = ""
    status: str = "running"  # running | finished | aborted | failed | interrupted
    input_tokens: int = 0
    output_tokens: int = 0


class Transcript:
    """Entries in screen order, plus what changed since ``take_changes``."""

    def __init__(self, agent_id: str = "") -> None:
        self.agent_id = agent_id  # the author of answers whose run's start was not seen
        self.entries: list[Entry] = []
        self._by_key: dict[str, Entry] = {}
        self._seen_signals: set[str] = set()
        self._prepended: list[Entry] = []
        self._added: list[Entry] = []
        self._changed: dict[str, Entry] = {}
        self._removed: list[Entry] = []
        self._counter = 0
        self._open_text: dict[str, Entry] = {}  # run id → its streaming assistant entry
        self._tool_calls: dict[str, Entry] = {}  # tool_call_id → entry
        #: The tool calls shown waiting for a person's approval (issue 24), by tool_call_id.
        self.waiting_calls: set[str] = set()
        self._runs_from_history: set[str] = set()
        self.runs: dict[str, RunInfo] = {}
        self.last_run: RunInfo | None = None  # the newest run seen, live or ended
        self.last_ended: RunInfo | None = None  # the newest ended run (its tokens are known)

    # -- reading -------------------------------------------------------------------------------

    def take_changes(self, *, with_added: bool = True) -> Changes:
        """What changed since the last call; clears it. ``with_added=False`` leaves new
        entries waiting (a pane scrolled up buffers them instead of rendering)."""
        fresh = {id(e) for e in self._added} | {id(e) for e in self._prepended}
        changes = Changes(
            prepended=self._prepended,
            added=self._added if with_added else [],
            changed=[e for e in self._changed.values() if id(e) not in fresh],
            removed=self._removed,
        )
        self._prepended, self._changed, self._removed = [], {}, []
        if with_added:
            self._added = []
        return changes

    @property
    def waiting(self) -> int:
        """New entries not yet taken by the widgets."""
        return len(self._added)

    @property
    def pending(self) -> bool:
        return bool(self._prepended or self._added or self._changed or self._removed)

    def first_message_id(self) -> str | None:
        """The stored message the oldest entry came from, when known (read from history):
        the cursor for older history. None for an entry shown live: ``came_from`` finds its
        record (a later entry's id would page in again what is shown between)."""
        return self.entries[0].message_id if self.entries else None

    # -- history -------------------------------------------------------------------------------

    def load_history(self, records: Iterable[Any], *, prepend: bool = False) -> list[Entry]:
        """Stored messages (oldest first) → entries, at the end or (older pages) at the top."""
        built: list[Entry] = []
        for record in records:
            built.extend(self._from_record(record))
        for entry in built:
            if entry.run_id:
                self._runs_from_history.add(entry.run_id)
            if entry.signal_id:
                self._seen_signals.add(entry.signal_id)
            self._by_key[entry.key] = entry
        if prepend:
            self.entries[:0] = built
            self._prepended[:0] = built
        else:
            self.entries.extend(built)
            self._added.extend(built)
        return built

    def _from_record(self, record: Any) -> list[Entry]:
        meta = record.metadata or {}
        base = {"run_id": record.run_id, "message_id": record.id,
                "superseded": str((meta.get("superseded") or {}).get("by") or "")}
        if record.role == "user":
            signal = meta.get("signal") or {"type": "user", "contents": record.content}
            entry = self._signal_entry(signal, **base)
            return [entry] if entry else []
        if record.role == "assistant":
            entries: list[Entry] = []
            if record.content:
                status = "aborted" if meta.get("aborted") else "done"
                entries.append(self._new("assistant", text=str(record.content), status=status,
                                         author=self.agent_id, **base))
            for call in meta.get("tool_calls") or []:
                function = call.get("function") or {}
                entry = self._new("tool", tag=str(function.get("name", "?")),
                                  args=_parse_json(function.get("arguments")), status="running",
                                  **base)
                self._tool_calls[str(call.get("id"))] = entry
                entries.append(entry)
            return entries
        if record.role == "tool":
            call = self._tool_calls.get(str(meta.get("tool_call_id")))
            if call is not None:
                call.result = _parse_json(record.content)
                call.status = "error" if meta.get("is_error") else "ok"
                return []
            return [self._new("tool", tag="result", result=record.content, status="ok", **base)]
        return []

    # -- live events ---------------------------------------------------------------------------

    def apply(self, event: events.Chunk | dict[str, Any]) -> None:
        kind = str(event.get("type"))
        payload = event.get("payload") or {}
        run_id = event.get("run_id")
        handler = getattr(self, "_on_" + kind.replace("-", "_"), None)
        if handler is not None:
            handler(run_id, payload)

    def _on_start(self, run_id: str | None, payload: events.StartPayload) -> None:
        if not run_id:
            return
        if run_id in self._runs_from_history:  # the stream replays this run from its start
            self._remove_run(run_id)
        if payload.get("persisted"):
            return  # a persisted signal's empty run (logs before issue 21): just its echo
        run = RunInfo(run_id, agent_id=str(payload.get("agent_id") or ""))
        self.runs[run_id] = run
        self.last_run = run

    def _on_text_delta(self, run_id: str | None, payload: events.TextDeltaPayload) -> None:
        text = payload.get("text") or ""
        if not text or not run_id:
            return
        entry = self._open_text.get(run_id)
        if entry is None:
            if not text.strip():
                return
            run = self.runs.get(run_id)
            entry = self._new("assistant", run_id=run_id, status="streaming",
                              author=(run.agent_id if run else "") or self.agent_id)
            self._open_text[run_id] = entry
            self._add(entry)
            text = text.lstrip("\n")
        entry.text += text
        self._touch(entry)

    def _on_step_finish(self, run_id: str | None, payload: events.StepFinishPayload) -> None:
        self._close_text(run_id, "done")

    def _on_tool_call(self, run_id: str | None, payload: events.ToolCallPayload) -> None:
        self._close_text(run_id, "done")
        entry = self._new("tool", run_id=run_id, tag=str(payload.get("tool_name", "?")),
                          args=payload.get("args"), status="running")
        self._tool_calls[str(payload.get("tool_call_id"))] = entry
        self._add(entry)

    def _on_tool_call_approval(
        self, run_id: str | None, payload: events.ToolCallApprovalPayload
    ) -> None:
        entry = self._tool_calls.get(str(payload.get("tool_call_id")))
        if entry is not None and entry.status == "running":
            entry.status = "waiting"  # for a person's approval (issue 24)
            self.waiting_calls.add(str(payload.get("tool_call_id")))
            self._touch(entry)

    def _on_tool_result(self, run_id: str | None, payload: events.ToolResultPayload) -> None:
        entry = self._tool_calls.get(str(payload.get("tool_call_id")))
        if entry is None:
            return
        entry.result = payload.get("result")
        entry.status = "error" if payload.get("is_error") else "ok"
        self.waiting_calls.discard(str(payload.get("tool_call_id")))
        self._touch(entry)

    def _on_finish(self, run_id: str | None, payload: events.FinishPayload) -> None:
        self._end_run(run_id, "finished", "done", payload)
        if payload.get("finish_reason") == "tool-calls":
            self._add(self._new("marker", run_id=run_id, status="warning",
                                text="stopped at max_steps with tool calls pending"))

    def _on_abort(self, run_id: str | None, payload: events.AbortPayload) -> None:
        self._end_run(run_id, "aborted", "aborted", payload)
        self._add(self._new("marker", run_id=run_id, status="aborted",
                            text="aborted — the partial answer is kept"))

    def _on_error(self, run_id: str | None, payload: events.ErrorPayload) -> None:
        self._end_run(run_id, "failed", "failed", payload)
        self._add(self._new("marker", run_id=run_id, status="failed",
                            text=str(payload.get("error") or "the run failed")))

    def _on_interrupted(self, run_id: str | None, payload: events.InterruptedPayload) -> None:
        self._end_run(run_id, "interrupted", "interrupted", payload)
        self._add(self._new("marker", run_id=run_id, status="interrupted",
                            text="interrupted: the process running it stopped"))

    def _on_data_superseded(self, run_id: str | None,
                            payload: events.SupersededPayload) -> None:
        """Messages marked superseded (a retry, an edit, from any process): known by message
        id when they came from history; shown live, an answer by its run, a message by its
        signal."""
        ids = set(payload.get("message_ids") or ())
        runs = set(payload.get("run_ids") or ())
        signals = set(payload.get("signal_ids") or ())
        by = str(payload.get("by") or "edit")
        for entry in self.entries:
            if entry.superseded:
                continue
            live_answer = (entry.message_id is None and entry.kind in ("assistant", "tool")
                           and entry.run_id in runs)
            if entry.message_id in ids or live_answer or (
                    entry.signal_id is not None and entry.signal_id in signals):
                entry.superseded = by
                self._touch(entry)

    def _on_data_user_message(self, run_id: str | None, payload: events.SignalPayload) -> None:
        self._on_data_signal(run_id, payload)

    def _on_data_signal(self, run_id: str | None, payload: events.SignalPayload) -> None:
        signal_id = payload.get("id")
        if signal_id and signal_id in self._seen_signals:
            return
        self._close_text(run_id, "done")
        entry = self._signal_entry(payload, run_id=run_id)
        if entry is not None:
            self._add(entry)

    # -- building blocks -----------------------------------------------------------------------

    def _signal_entry(self, signal: Mapping[str, Any], **base: Any) -> Entry | None:
        signal_id = signal.get("id")
        if signal_id:
            self._seen_signals.add(str(signal_id))
        kind = str(signal.get("type") or "user")
        attributes = dict(signal.get("attributes") or {})
        text = signal_text(signal.get("contents", ""))
        if kind == "user":
            return self._new("user", text=text, author=str(attributes.get("name") or ""),
                             source=str(attributes.get("from") or ""), attributes=attributes,
                             signal_id=signal_id, **base)
        tag = str(signal.get("tag_name") or kind)
        if tag == "notification-summary":
            kind = "digest"
        return self._new("signal", text=text, tag=tag, signal_type=kind,
                         attributes=attributes, signal_id=signal_id, **base)

    def _end_run(self, run_id: str | None, status: str, text_status: str,
                 payload: Mapping[str, Any]) -> None:
        self._close_text(run_id, text_status)
        if not run_id:
            return
        if payload.get("persisted"):
            return
        run = self.runs.setdefault(run_id, RunInfo(run_id))
        run.status = status
        usage = payload.get("usage") or {}
        run.input_tokens = int(usage.get("input_tokens") or 0)
        run.output_tokens = int(usage.get("output_tokens") or 0)
        self.last_run = self.last_ended = run
        for entry in self._tool_calls.values():
            # A call waiting for approval outlives an interrupted run: another goes on for it.
            open_ = ("running",) if status == "interrupted" else ("running", "waiting")
            if entry.run_id == run_id and entry.status in open_ and status != "finished":
                entry.status = "error"
                self._touch(entry)
        if status != "interrupted":
            self.waiting_calls = {c for c, e in self._tool_calls.items() if e.status == "waiting"}

    def _close_text(self, run_id: str | None, status: str) -> None:
        entry = self._open_text.pop(run_id or "", None)
        if entry is not None:
            entry.status = status
            self._touch(entry)

    def _new(self, kind: str, **fields: Any) -> Entry:
        self._counter += 1
        return Entry(key=f"e{self._counter}", kind=kind, **fields)

    def _add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self._by_key[entry.key] = entry
        self._added.append(entry)

    def _touch(self, entry: Entry) -> None:
        if entry.key in self._by_key:
            self._changed[entry.key] = entry

    def _remove_run(self, run_id: str) -> None:
        self._runs_from_history.discard(run_id)
        gone = [e for e in self.entries if e.run_id == run_id]
        self._seen_signals.difference_update(e.signal_id for e in gone if e.signal_id)
        self._drop(gone)

    def _drop(self, gone: list[Entry]) -> None:
        if not gone:
            return
        ids = {id(e) for e in gone}
        self.entries = [e for e in self.entries if id(e) not in ids]
        for entry in gone:
            self._by_key.pop(entry.key, None)
            self._changed.pop(entry.key, None)
        if any(entry.kind == "tool" for entry in gone):  # a pruned call and its result go too
            self._tool_calls = {call: e for call, e in self._tool_calls.items()
                                if id(e) not in ids}
        fresh = {id(e) for e in self._added} | {id(e) for e in self._prepended}
        self._removed.extend(e for e in gone if id(e) not in fresh)
        self._added = [e for e in self._added if id(e) not in ids]
        self._prepended = [e for e in self._prepended if id(e) not in ids]
        self._forget_runs({e.run_id for e in gone if e.run_id})

    def _forget_runs(self, run_ids: set[str]) -> None:
        """A run whose entries are all gone is let go (the transcript kept one per run ever
        shown): unless it is live or the header's last run, paging back brings it again."""
        shown = {e.run_id for e in self.entries}
        keep = {run.run_id for run in (self.last_run, self.last_ended) if run is not None}
        for run_id in run_ids - shown - keep:
            run = self.runs.get(run_id)
            if run is not None and run.status != "running":
                del self.runs[run_id]

    def prune_to(self, keep: int, max_chars: int | None = None) -> int:
        """Drop the oldest entries so at most ``keep`` remain and, with ``max_chars``, their
        text totals at most that (long answers weigh what they render), never inside a live
        answer and never the newest entry. Returns how many were dropped (their history can be
        paged back in)."""
        live = {e.key for e in self._open_text.values()}
        excess = len(self.entries) - keep
        total = sum(len(e.text) for e in self.entries) if max_chars is not None else 0
        gone: list[Entry] = []
        for entry in self.entries[:-1]:
            over_count = excess > 0
            over_size = max_chars is not None and total > max_chars
            if not (over_count or over_size):
                break
            excess -= 1
            total -= len(entry.text)
            if entry.key not in live:
                gone.append(entry)
        self._drop(gone)
        return len(gone)


def _parse_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def signal_icon(entry: Entry) -> str:
    return SIGNAL_ICONS.get(entry.signal_type, "•")


def came_from(entry: Entry, record: Any) -> bool:
    """Whether ``record`` is the stored message that ``entry``, shown live and so without its
    id, was saved as: a message by its signal's id, an answer by its run and text, a tool call
    by its run. A marker came from no message (tests/app/test_pane_controls.py)."""
    meta = record.metadata or {}
    if entry.signal_id:
        return (meta.get("signal") or {}).get("id") == entry.signal_id
    if not entry.run_id or record.run_id != entry.run_id:
        return False
    if entry.kind == "assistant":
        return record.role == "assistant" and record.content == entry.text
    if entry.kind == "tool":
        return record.role == "assistant" and bool(meta.get("tool_calls"))
    return False
