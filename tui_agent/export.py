"""A thread as a file: the JSON of ``tui-agent export --format json`` (which ``tui-agent import``
takes back, into any store) and its Markdown for people to read, shared by the CLI and the app
(its export key, through the bridge).

The JSON is a :class:`~tui_agent.store.records.ThreadArchive` (``Store.export_thread``) under a
``format``/``version`` header: a thread imported from it and exported again gives the same
text (tests/test_export_import.py, SQLite to PostgreSQL and back).

What leaves the store is what the store keeps: messages in their transcript form, so a tool
payload hidden by ``hooks["transform"]`` (its ``"transcript"`` target) is hidden here too; the
event log (the stream, whose tool chunks carry the *display* form) is not exported.
:func:`kept_messages` is the one place an export's messages pass through, the seam for any
further policy on what may leave (tests/test_export_import.py checks a hidden payload stays
hidden).
"""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic import ValidationError

from tui_agent.errors import ConfigError, StoreError
from tui_agent.store import Store
from tui_agent.store.records import ArchivedMessage, ArchivedSignal, ThreadArchive

FORMAT: Final = "tui-agent-thread"
VERSION: Final = 1
FORMATS: Final = ("json", "md")


async def export_text(store: Store, thread_id: str, fmt: str) -> str:
    """The thread as ``fmt`` (``json`` or ``md``); ``StoreError`` for an unknown thread."""
    archive = await store.export_thread(thread_id)
    if archive is None:
        raise StoreError(f"no thread {thread_id!r} in {store.location}")
    archive = kept_messages(archive)
    return archive_json(archive) if fmt == "json" else archive_markdown(archive)


def kept_messages(archive: ThreadArchive) -> ThreadArchive:
    """The archive as it may leave the store. Messages are stored in their transcript form
    already (``hooks["transform"]`` ran before they were written), so this passes them as
    they are: it is where a policy on what an export may carry applies."""
    return archive


def archive_json(archive: ThreadArchive) -> str:
    document = {"format": FORMAT, "version": VERSION, **archive.model_dump(mode="json")}
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def read_archive(text: str, name: str) -> ThreadArchive:
    """The archive in an export's JSON; a ``ConfigError`` of one line naming ``name`` and what
    is wrong for anything else (nothing is written)."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"{name} is not a tui-agent export: not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ConfigError(f"{name} is not a tui-agent export (no \"format\": \"{FORMAT}\")")
    if document.get("version") != VERSION:
        raise ConfigError(f"{name} is a tui-agent export of version "
                          f"{document.get('version')!r}; this tui-agent reads version {VERSION}")
    body = {k: v for k, v in document.items() if k not in ("format", "version")}
    try:
        return ThreadArchive.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the document"
        raise ConfigError(f"{name} is not a valid tui-agent export: {where}: {first['msg']} "
                          f"({error.error_count()} problem(s))") from None


# -- Markdown -----------------------------------------------------------------------------------


def archive_markdown(archive: ThreadArchive) -> str:
    thread = archive.thread
    signals = {s.id: s for s in archive.signals}
    lines = [f"# {thread.title or thread.id}", "",
             f"`{thread.resource_id}/{thread.id}` · created {_when(thread.created_at)} · "
             f"{len(archive.messages)} messages", ""]
    for message in archive.messages:
        lines += _message(message, signals.get(message.signal_id or ""))
    if archive.state_lanes:
        lines += ["## State lanes", ""]
        for lane in archive.state_lanes:
            lines += [f"### {lane.id} (version {lane.version}, {len(lane.history)} kept)", "",
                      "```json", json.dumps(lane.value, ensure_ascii=False, indent=2), "```", ""]
    if archive.notifications:
        lines += ["## Notifications", ""]
        lines += [f"- **{n.priority}** {n.source}/{n.kind}: {n.summary} ({n.status}"
                  f"{f', ×{n.coalesced_count}' if n.coalesced_count > 1 else ''})"
                  for n in archive.notifications]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC")


def author(signal: ArchivedSignal | None) -> str:
    """Who sent a signal: ``name · from`` of its attributes ("" when they name no one)."""
    data = signal.data if signal is not None and isinstance(signal.data, dict) else {}
    attributes = data.get("attributes") or {}
    parts = [str(attributes[k]) for k in ("name", "from") if attributes.get(k)]
    return " · ".join(parts)


def _message(message: ArchivedMessage, signal: ArchivedSignal | None) -> list[str]:
    head = message.role
    body = _text(message.content)
    if message.signal_id is not None:
        who = author(signal)
        head = f"{message.role} · {who}" if who else message.role
        data = signal.data if signal is not None and isinstance(signal.data, dict) else {}
        body = _text(data.get("contents"))
    if message.role == "tool":
        head = f"tool · {message.metadata.get('tool_name', '?')}"
        body = f"```\n{body}\n```"
    lines = [f"### {head} — {_when(message.created_at)}", ""]
    if body:
        lines += [body, ""]
    for call in message.metadata.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        lines += [f"- calls `{function.get('name', '?')}({function.get('arguments', '')})`", ""]
    return lines


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if p)
    return json.dumps(content, ensure_ascii=False)
