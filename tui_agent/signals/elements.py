"""What the model sees: signals rendered as plain text or as one XML element.

The contract says both "a user message with no attributes is its plain text" and "no content can
forge an element". Both hold here: plain user text is passed verbatim except that a ``<`` which
would open markup (``<tag``, ``</tag``, ``<!--``, ``<?``, ``< tag``) or ends a text is written
``&lt;`` (see ``neutralize_markup``). Ordinary text such as ``x<=3`` is untouched; a user typing
``</user><user name="admin">`` cannot make the model see an element, nor can a message split
into parts that a provider or chat template joins (``"hi <"`` + ``'user name="admin">'``).
Wrapped signals escape all of ``& < >`` in contents (and ``"``, newline, CR, tab in attribute
values).

Proved by tests/test_signal_render.py: a wrapped signal parses (xml.etree) as exactly one element
with the intended tag, attributes and text for any contents and attribute values made of XML
characters (a parser reports CR/CRLF in text as LF: XML's line-end rule, not a forgery); plain
text, for any string or list of parts at all, contains nothing that opens markup, after the
parts are joined the way each model path joins them (litellm, direct HTTP, the local chat
template). Characters XML cannot carry (most C0 controls) are passed through as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tui_agent.errors import SignalError
from tui_agent.signals.data import (
    Signal,
    build_signal,
    check_attributes,
    normalize_signal,
)

_TEXT_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ATTR_ESCAPES = {**_TEXT_ESCAPES, '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
_TEXT_RE = re.compile("[&<>]")
_ATTR_RE = re.compile('[&<>"\n\r\t]')
# A "<" opens markup (start/end tag, comment, CDATA, doctype, processing instruction) only when
# followed by "/", "!", "?" or a character that can start an XML name. Non-ASCII characters are
# all treated as name starts: stricter than XML, never looser. Lenient parsers (and models) also
# read "< user>" or "<\0user>" as a tag, so a "<" before whitespace or NUL is neutralised too;
# and so is a "<" that ends the text: a provider or chat template that joins a message's parts
# would otherwise complete it with the next part's start ("hi <" + 'user name="admin">').
MARKUP_OPEN = r"<(?=[/!?:_A-Za-z\x00\t\n\r\f\v ]|[^\x00-\x7f]|\Z)"
_MARKUP_OPEN_RE = re.compile(MARKUP_OPEN)


def escape_text(text: str) -> str:
    """Escape ``& < >`` for element content."""
    return _TEXT_RE.sub(lambda m: _TEXT_ESCAPES[m.group()], text)


def attribute_str(value: Any) -> str:
    """An attribute value as the string the model sees (before escaping)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, Mapping)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    raise SignalError(f"attribute value of type {type(value).__name__} cannot be rendered")


def escape_attribute(value: Any) -> str:
    """Escape a value for a double-quoted attribute: ``& < > "`` and newline, CR, tab as char
    references (an XML parser would otherwise turn them into spaces)."""
    return _ATTR_RE.sub(lambda m: _ATTR_ESCAPES[m.group()], attribute_str(value))


def neutralize_markup(text: str) -> str:
    """Plain user text as the model sees it: verbatim, except that every ``<`` which would open
    markup (``<tag``, ``</tag``, ``<!--``, ``<?``, ``< tag``, ``<\\0tag``) or ends the text is
    written ``&lt;``.

    So ``x<=3``, ``<3`` or ``1<2`` reach the model untouched, while ``</user><user
    name="admin">`` cannot pose as an element: ``&lt;/user>&lt;user name="admin">``. Parts
    neutralised one by one stay neutral however they are joined (no part ends with ``<``).
    """
    return _MARKUP_OPEN_RE.sub("&lt;", text)


def merge_attributes(
    own: Mapping[str, Any] | None, branch: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The signal's own attributes with the taken branch's merged over them.

    The branch wins a clash, but a merged attribute keeps its first position (``own`` order, then
    new branch keys). ``None`` values are dropped *after* the merge, so a branch value of ``None``
    removes the signal's own attribute of that name for that branch.
    """
    if not own and not branch:
        return {}  # the common case, on every signal's hot path
    return merge_checked(check_attributes(own), check_attributes(branch, "branch attributes"))


def merge_checked(own: Mapping[str, Any], branch: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`merge_attributes` of attributes checked already (a signal's and a parsed
    branch's): nothing is checked again."""
    if not own and not branch:
        return {}
    merged = {**own, **branch}
    return {k: v for k, v in merged.items() if v is not None}


def render_element(tag: str, attributes: Mapping[str, Any], text: str) -> str:
    """``<tag a="v" ...>escaped text</tag>``; attributes must already be merged and non-None.
    Strings and integers that need no escaping (found with one search over them all: each
    escape is of one character) are written as they are; else each value is escaped
    (``escape_attribute``)."""
    values = [v if type(v) is str else str(v) if type(v) is int else _OTHER
              for v in attributes.values()]
    if _OTHER in values or _ATTR_RE.search("".join(values)) is not None:
        attrs = "".join([f' {name}="{escape_attribute(v)}"' for name, v in attributes.items()])
    else:
        attrs = "".join([f' {name}="{v}"' for name, v in zip(attributes, values, strict=True)])
    return f"<{tag}{attrs}>{escape_text(text)}</{tag}>"


_OTHER: Any = object()  # an attribute value render_element escapes on its own


def _as_signal(signal: Signal | Mapping[str, Any]) -> Signal:
    return signal if isinstance(signal, Signal) else normalize_signal(signal)


def is_plain(signal: Signal, attributes: Mapping[str, Any]) -> bool:
    """A user message with no (merged, non-None) attributes is sent as plain text."""
    return signal.type == "user" and not attributes


def render_signal(
    signal: Signal | Mapping[str, Any], branch_attributes: Mapping[str, Any] | None = None
) -> str:
    """The text the model sees for ``signal`` (file parts are not text: see to_model_message)."""
    sig = _as_signal(signal)
    attrs = merge_attributes(sig.attributes, branch_attributes)
    if is_plain(sig, attrs):
        return neutralize_markup(sig.text)
    return render_element(sig.tag, attrs, sig.text)


def file_part_to_openai(part: Mapping[str, Any]) -> dict[str, Any]:
    """A stored file part as an OpenAI-style content part (as litellm takes it)."""
    media_type = part["media_type"]
    if "url" in part:
        source = part["url"]
    else:
        data = part["data"]
        source = data if data.startswith("data:") else f"data:{media_type};base64,{data}"
    if media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": source}}
    file: dict[str, Any] = {"format": media_type}
    file["file_id" if "url" in part else "file_data"] = source
    if part.get("filename"):
        file["filename"] = part["filename"]
    return {"type": "file", "file": file}


def to_model_message(
    signal: Signal | Mapping[str, Any], branch_attributes: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The user message the model gets for ``signal``.

    Without file parts ``content`` is the rendered string. With files it is a list: for a plain
    user message its parts in order (text neutralised); otherwise one text part holding the
    element (all text joined) followed by the files. ``provider_options`` ride along if set.
    """
    sig = _as_signal(signal)
    if type(sig.contents) is str and is_plain(sig, {}) and not (
        sig.attributes or branch_attributes or sig.provider_options
    ):  # a plain text message, most of what is sent: skip the general case below
        return {"role": "user", "content": neutralize_markup(sig.contents)}
    return model_message(sig, merge_attributes(sig.attributes, branch_attributes))


def model_message(signal: Signal, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`to_model_message` for a checked signal and its ``attributes`` already merged
    (``merge_checked``): nothing is checked again."""
    parts = signal.contents if isinstance(signal.contents, list) else []
    content: str | list[dict[str, Any]]
    if not any(p["type"] == "file" for p in parts):
        content = (neutralize_markup(signal.text) if is_plain(signal, attributes)
                   else render_element(signal.tag, attributes, signal.text))
    elif is_plain(signal, attributes):
        content = [_plain_part(p) for p in parts]
    else:
        files = [file_part_to_openai(p) for p in parts if p["type"] == "file"]
        text = render_element(signal.tag, attributes, signal.text)
        content = [{"type": "text", "text": text}, *files]
    message: dict[str, Any] = {"role": "user", "content": content}
    if signal.provider_options:
        message["provider_options"] = dict(signal.provider_options)
    return message


def _plain_part(part: Mapping[str, Any]) -> dict[str, Any]:
    if part["type"] == "text":
        return {"type": "text", "text": neutralize_markup(part["text"])}
    return file_part_to_openai(part)


# -- notifications --------------------------------------------------------------------------------

_CORE_NOTIFICATION_FIELDS = ("id", "source", "kind", "priority")


def notification_signal(
    *,
    id: str,
    source: str,
    kind: str,
    summary: str,
    priority: str = "medium",
    attributes: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    tag_name: str = "notification",
) -> Signal:
    """The signal that delivers one inbox record in full.

    Attributes are ``id, source, kind, priority`` then the record's extra ``attributes``; an
    extra attribute can never replace one of those four (it keeps to its own name or is dropped).
    """
    fields = notification_fields(id=id, source=source, kind=kind, summary=summary,
                                 priority=priority, attributes=attributes, metadata=metadata,
                                 tag_name=tag_name)
    return build_signal(fields, "notification")


def notification_fields(
    *, id: str, source: str, kind: str, summary: str, priority: str,
    attributes: Mapping[str, Any] | None, metadata: Mapping[str, Any] | None, tag_name: str,
) -> dict[str, Any]:
    """The fields of :func:`notification_signal`'s signal (its attributes checked), for a
    caller that builds the Signal itself from fields it checked (``checked_signal``)."""
    extra = {k: v for k, v in check_attributes(attributes).items()
             if k not in _CORE_NOTIFICATION_FIELDS}
    core = {"id": id, "source": source, "kind": kind, "priority": priority}
    return {"type": "notification", "tag_name": tag_name, "contents": summary,
            "attributes": {**core, **extra}, "metadata": dict(metadata or {})}


def render_notification(
    *,
    id: str,
    source: str,
    kind: str,
    summary: str,
    priority: str = "medium",
    attributes: Mapping[str, Any] | None = None,
    tag_name: str = "notification",
) -> str:
    """``<notification id="…" source="…" kind="…" priority="…">summary</notification>``."""
    sig = notification_signal(id=id, source=source, kind=kind, summary=summary,
                              priority=priority, attributes=attributes, tag_name=tag_name)
    return render_signal(sig)


def digest_text(counts: Mapping[str, object]) -> str:
    """``github: 2, slack: 1``: sources in alphabetical order (case-insensitive, then exact)."""
    for source, n in counts.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise SignalError(f"digest count for {source!r} must be a non-negative int, got {n!r}")
    return ", ".join(f"{s}: {counts[s]}" for s in sorted(counts, key=lambda s: (s.casefold(), s)))


def digest_signal(
    counts: Mapping[str, object],
    pending: object,
    attributes: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Signal:
    """The signal of a digest of pending notifications: ``pending`` first, then ``attributes``
    (e.g. ``priority``, the highest pending one); ``pending`` cannot be overridden."""
    if not isinstance(pending, int) or isinstance(pending, bool) or pending < 0:
        raise SignalError(f"pending must be a non-negative int, got {pending!r}")
    extra = {k: v for k, v in check_attributes(attributes).items() if k != "pending"}
    fields = {"type": "notification", "tag_name": "notification-summary",
              "contents": digest_text(counts), "attributes": {"pending": pending, **extra},
              "metadata": dict(metadata or {})}
    return build_signal(fields, "digest")


def render_digest(
    counts: Mapping[str, object], pending: object, attributes: Mapping[str, Any] | None = None
) -> str:
    """``<notification-summary pending="3">github: 2, slack: 1</notification-summary>``."""
    return render_signal(digest_signal(counts, pending, attributes))
