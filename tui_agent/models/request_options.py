"""``provider_options`` and message options, shaped the same way for every model path.

Message ``provider_options`` are ``{provider: {field: value}}``; only the entry of the model's
provider is used (``cacheControl`` → ``cache_control``). A field a provider takes on a message
(``MESSAGE_FIELDS``: Anthropic's ``cache_control``, OpenAI's ``name``) is set on the message; any
other (OpenAI's ``reasoning_effort``) is a request field, lifted to the request — a provider API
rejects unknown message keys (tests/test_provider_options_wire.py). A flat dict with no provider
key counts as Anthropic's. ``request.provider_options`` follow the same rule and become extra
request fields (they win over lifted message fields). Both the litellm path and the direct HTTP
path use these functions, so one request produces the same body on either (tests run on both:
``tests/test_litellm_model.py::test_system_message_provider_options_follow_the_provider``).
"""

from __future__ import annotations

import re
from typing import Any

_NOT_PROVIDERS = {"cache_control", "cacheControl"}
#: Provider option fields that belong on a message; every other field is request-level.
MESSAGE_FIELDS = frozenset({"cache_control", "name"})


def option_keys(prefix: str, provider: str, name: str) -> set[str]:
    """The ``provider_options`` keys that belong to this model (Claude on Bedrock and Vertex
    takes Anthropic's too)."""
    keys = {prefix, provider}
    if "claude" in name and provider in ("bedrock", "vertex_ai"):
        keys.add("anthropic")
    return keys


def pick_options(options: Any, keys: set[str], flat_owner: str | None) -> dict[str, Any]:
    """The entry of ``options`` ({provider: {...}}) that belongs to this model's provider.
    A flat dict (no dict values keyed by provider) belongs to ``flat_owner``."""
    if not isinstance(options, dict) or not options:
        return {}
    nested = {k: v for k, v in options.items() if isinstance(v, dict) and k not in _NOT_PROVIDERS}
    if not nested and flat_owner is not None:
        return dict(options) if flat_owner in keys else {}
    picked: dict[str, Any] = {}
    for key in keys:
        entry = options.get(key)
        if isinstance(entry, dict):
            picked.update(entry)
    return picked


def shaped_message(message: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """The message without ``provider_options``, this provider's message-level fields set on
    it instead (its request-level ones: :func:`lifted_options`)."""
    if "provider_options" not in message:
        return message
    out = {k: v for k, v in message.items() if k != "provider_options"}
    fields = pick_options(message["provider_options"], keys, "anthropic")
    for key, value in fields.items():
        if snake(key) in MESSAGE_FIELDS:
            out[snake(key)] = value
    return out


def lifted_options(messages: list[dict[str, Any]], keys: set[str]) -> dict[str, Any]:
    """The request-level fields of this provider found in the messages' ``provider_options``
    (a later message wins a clash)."""
    lifted: dict[str, Any] = {}
    for message in messages:
        if "provider_options" in message:
            fields = pick_options(message["provider_options"], keys, "anthropic")
            for key, value in fields.items():
                if snake(key) not in MESSAGE_FIELDS:
                    lifted[snake(key)] = value
    return lifted


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() if name != name.lower() else name
