"""Signals as data: normalisation, validation, routing options, what the model sees, and the
record a routed signal becomes in the store (``stored``: the store renders nothing itself).

Only data and rendering live here, so ``state`` and ``notifications`` import it without a circle;
routing and subscriptions, which need an agent, are in ``tui_agent.agent`` (tests/test_layers.py).
"""

from __future__ import annotations

from tui_agent.signals.data import (
    ACTIVE_BEHAVIORS,
    DEFAULT_TAGS,
    IDLE_BEHAVIORS,
    SIGNAL_TYPES,
    IfActive,
    IfIdle,
    Signal,
    SignalType,
    Target,
    build_signal,
    check_attributes,
    check_contents,
    check_name,
    normalize_message,
    normalize_signal,
    parse_if_active,
    parse_if_idle,
    parse_target,
    signal_text,
    unknown_keys_error,
)
from tui_agent.signals.elements import (
    attribute_str,
    digest_signal,
    digest_text,
    escape_attribute,
    escape_text,
    file_part_to_openai,
    is_plain,
    merge_attributes,
    neutralize_markup,
    notification_signal,
    render_digest,
    render_element,
    render_notification,
    render_signal,
    to_model_message,
)
from tui_agent.signals.limits import InputLimits, input_limits, set_input_limits
from tui_agent.signals.stored import model_message_of, signal_in

__all__ = [
    "ACTIVE_BEHAVIORS",
    "DEFAULT_TAGS",
    "IDLE_BEHAVIORS",
    "SIGNAL_TYPES",
    "IfActive",
    "IfIdle",
    "InputLimits",
    "Signal",
    "SignalType",
    "Target",
    "attribute_str",
    "build_signal",
    "check_attributes",
    "check_contents",
    "check_name",
    "digest_signal",
    "digest_text",
    "escape_attribute",
    "escape_text",
    "file_part_to_openai",
    "input_limits",
    "is_plain",
    "merge_attributes",
    "model_message_of",
    "neutralize_markup",
    "normalize_message",
    "normalize_signal",
    "notification_signal",
    "parse_if_active",
    "parse_if_idle",
    "parse_target",
    "render_digest",
    "render_element",
    "render_notification",
    "render_signal",
    "set_input_limits",
    "signal_in",
    "signal_text",
    "to_model_message",
    "unknown_keys_error",
]
