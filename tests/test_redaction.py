"""Redaction replaces exact secrets (8+ characters) and well-known key shapes, and never mangles
other text (issue 11): ``api_key="x"`` must not turn every "x" into ``***``."""

from __future__ import annotations

import os

import pytest

from tui_agent.models.redaction import call_secrets, redact


def test_a_short_secret_is_not_replaced_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if "KEY" in n or "TOKEN" in n or "SECRET" in n]:
        monkeypatch.delenv(name)
    secrets = call_secrets({"api_key": "x", "headers": {"Authorization": "Bearer x"}})
    assert "x" not in secrets and all(len(s) >= 8 for s in secrets)
    text = "max_tokens exceeded for model x-large (index 0x1f)"
    assert redact(text, secrets) == text
    assert redact(text, ["x"]) == text  # even when handed to redact directly


def test_a_long_secret_and_its_header_words_are_replaced() -> None:
    secrets = call_secrets({"api_key": "Zt9pQ2rX8vLm", "extra_headers": {
        "X-Session-Id": "sess-0123456789", "Content-Type": "application/json"}})
    text = "bad key Zt9pQ2rX8vLm for session sess-0123456789 (application/json)"
    assert redact(text, secrets) == "bad key *** for session *** (application/json)"


@pytest.mark.parametrize("ordinary", [
    "keyboard_shortcuts_enabled", "sk-learn_pipeline_step", "key-value-store-layout",
    "pk_primary_key_constraint", "skeleton_screen_loader",
])
def test_words_that_start_like_keys_are_left_alone(ordinary: str) -> None:
    assert redact(f"error in {ordinary}", []) == f"error in {ordinary}"


@pytest.mark.parametrize("key", [
    "sk-proj-Xq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1", "sk-ant-api03-Xq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1",
    "AIzaSyXq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1Fb5", "gsk_Xq7Lm2Nv9Rt4Wz8Kp3Hs6Jd1", "xai-Xq7Lm2Nv9Rt4Wz8Kp3H",
])
def test_well_known_key_shapes_are_replaced(key: str) -> None:
    assert redact(f"rejected {key}.", []) == "rejected ***."
