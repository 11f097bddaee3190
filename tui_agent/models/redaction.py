"""Keeping credentials out of error messages, for every model path (litellm and direct HTTP).

A message from a provider may quote the key it was sent ("Incorrect API key provided: …"), so
before it reaches a log, the store or the screen every credential the call could have sent is
replaced by ``***``, and anything shaped like a well-known key is too. Tested on both paths in
``tests/test_litellm_model.py`` (``test_a_key_of_any_shape_from_any_source_never_shows_…``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET")
_SECRET_PATTERN = re.compile(r"\b(sk|pk|key|gsk|xai|AIza)[-_A-Za-z0-9]{12,}")
_HEADER_WORDS = ("auth", "key", "token", "secret", "cookie", "signature")


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
    return sorted({v for v in found if len(v) >= 8}, key=len, reverse=True)  # longest first


def header_secrets(headers: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key, value in headers.items():
        if isinstance(value, str) and is_credential_header(str(key)):
            found += [value, *value.split()]
    return found


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` and anything shaped like a known key as ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return _SECRET_PATTERN.sub("***", text)
