"""Keeping credentials out of error messages, for every model path (litellm and direct HTTP).

A message from a provider may quote the key it was sent ("Incorrect API key provided: …"), so
before it reaches a log, the store or the screen every credential the call could have sent is
replaced by ``***``, and anything shaped like a well-known key is too. Only exact secrets of 8
characters or more are replaced, so ``api_key="x"`` never turns every "x" into ``***``. Tested
on both paths in ``tests/test_litellm_model.py``
(``test_a_key_of_any_shape_from_any_source_never_shows_…``) and in ``tests/test_redaction.py``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET")
# A well-known key's shape: its prefix and separator, then 12+ key characters including a digit
# (ordinary words such as "keyboard_shortcuts_enabled" or "sk-learn" are not keys).
_SECRET_PATTERN = re.compile(
    r"\b(?:(?:sk|pk|key|xai)[-_]|gsk_|AIza)(?=[-_A-Za-z]*[0-9])[-_A-Za-z0-9]{12,}"
)
_HEADER_WORDS = ("auth", "key", "token", "secret", "cookie", "signature", "session", "password",
                 "credential")
MIN_SECRET_LENGTH = 8  # a shorter "secret" would blank out ordinary text wherever it occurs


def looks_secret(name: str) -> bool:
    """Whether an (upper-case) variable or setting name is a credential's."""
    return any(w in name for w in CREDENTIAL_WORDS) and "PATH" not in name


def is_credential_header(name: str) -> bool:
    lowered = name.lower()
    return any(w in lowered for w in _HEADER_WORDS)


def call_secrets(kwargs: Mapping[str, Any]) -> list[str]:
    """Every credential this call could have sent, whatever its shape: the environment's
    (variables named like credentials), the call's own (``api_key`` and other credential-named
    settings, from a ModelConfig or ``model_settings``), and credential headers' values (each
    word too: ``Bearer <token>``)."""
    found = [v for k, v in os.environ.items() if looks_secret(k)]
    found += [v for k, v in kwargs.items() if isinstance(v, str) and looks_secret(k.upper())]
    for name in ("extra_headers", "headers"):
        headers = kwargs.get(name)
        if isinstance(headers, Mapping):
            found += header_secrets(headers)
    exact = {v for v in found if len(v) >= MIN_SECRET_LENGTH}
    return sorted(exact, key=len, reverse=True)  # longest first: a key before its parts


def header_secrets(headers: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key, value in headers.items():
        if isinstance(value, str) and is_credential_header(str(key)):
            found += [value, *value.split()]
    return found


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` (the exact strings, only those of 8 characters or more)
    and anything shaped like a known key as ``***``; the rest of the text is left as it is."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, "***")
    return _SECRET_PATTERN.sub("***", text)
