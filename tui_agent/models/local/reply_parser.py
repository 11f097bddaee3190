"""Incremental reading of the constrained reply, so an answer streams while it is generated."""

from __future__ import annotations

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_WHITESPACE = " \t\r\n"


class JsonReplyParser:
    """Reads ``{"answer": "..."}`` or ``{"tool": ..., "arguments": ...}`` as it is generated.

    ``feed`` returns the answer's characters decoded so far (JSON escapes, surrogate pairs),
    so the text streams while the model writes it; a tool call is kept whole in ``text``.
    """

    def __init__(self) -> None:
        self.text = ""
        self.kind: str | None = None  # "answer", "tool" or "other" once the first key is read
        self._pos = 0  # next undecoded character of the answer string in ``text``
        self._in_string = False
        self._closed = False
        self._high: int | None = None  # a high surrogate waiting for its low half

    def feed(self, chunk: str) -> str:
        self.text += chunk
        if self.kind is None:
            self._read_head()
        if self.kind == "answer" and self._in_string and not self._closed:
            return self._read_string()
        return ""

    def flush(self) -> str:
        """What is left at the end: a dangling high surrogate becomes U+FFFD."""
        return self._pending_high_lost()

    def _read_head(self) -> None:
        """Consume ``{ "key" :`` (and the opening quote of an answer) once all of it arrived."""
        head = self.text.lstrip(_WHITESPACE)
        if not self._opens_with(head, "{"):
            return
        body = head[1:].lstrip(_WHITESPACE)
        if not self._opens_with(body, '"'):
            return
        end = body.find('"', 1)
        if end < 0:
            return
        key = body[1:end]
        after = body[end + 1 :].lstrip(_WHITESPACE)
        if not self._opens_with(after, ":"):
            return
        value = after[1:].lstrip(_WHITESPACE)
        if key != "answer":
            self.kind = "tool" if key == "tool" else "other"
            return
        if not self._opens_with(value, '"'):
            return
        self.kind = "answer"
        self._in_string = True
        self._pos = len(self.text) - len(value) + 1

    def _opens_with(self, text: str, char: str) -> bool:
        """Whether ``text`` starts with ``char``. False while it is empty (more is coming) and
        when it starts otherwise: then the reply is not one this parser reads (kind "other")."""
        if text and text[0] != char:
            self.kind = "other"
        return text[:1] == char

    def _read_string(self) -> str:
        """Decode the answer from ``_pos`` up to the closing quote or the last whole character."""
        out: list[str] = []
        text, i = self.text, self._pos
        while i < len(text):
            char = text[i]
            if char == '"':
                self._closed = True
                out.append(self._pending_high_lost())
                i += 1
                break
            if char != "\\":
                out.append(self._pending_high_lost() + char)
                i += 1
                continue
            decoded, width = self._escape(text, i)
            if not width:
                break  # the escape continues in the next chunk
            out.append(decoded)
            i += width
        self._pos = i
        return "".join(out)

    def _escape(self, text: str, i: int) -> tuple[str, int]:
        """The escape at ``text[i]`` decoded, and its length; length 0 while it is incomplete."""
        code = text[i + 1 : i + 2]
        if not code:
            return "", 0
        if code != "u":
            return self._pending_high_lost() + _ESCAPES.get(code, code), 2
        digits = text[i + 2 : i + 6]
        if len(digits) < 4:
            return "", 0
        try:
            value = int(digits, 16)
        except ValueError:  # not valid JSON; keep what was written
            return self._pending_high_lost() + "\\u" + digits, 6
        return self._unicode(value), 6

    def _unicode(self, code: int) -> str:
        """A ``\\uXXXX`` code point; surrogate halves pair up, a lone one becomes U+FFFD."""
        if 0xD800 <= code <= 0xDBFF:
            lost = self._pending_high_lost()
            self._high = code
            return lost
        if 0xDC00 <= code <= 0xDFFF:
            if self._high is None:
                return "\ufffd"
            high, self._high = self._high, None
            return chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00))
        return self._pending_high_lost() + chr(code)

    def _pending_high_lost(self) -> str:
        """U+FFFD for a high surrogate that the next character proves unpaired, else ""."""
        if self._high is None:
            return ""
        self._high = None
        return "\ufffd"
