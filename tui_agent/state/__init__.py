"""State lanes: named, versioned context channels on a memory thread."""

from __future__ import annotations

from tui_agent.state.lanes import (
    StateLane,
    StateLanesMixin,
    StateLaneVersion,
    merge_patch,
    send_state_signal,
)

__all__ = ["StateLane", "StateLaneVersion", "StateLanesMixin", "merge_patch", "send_state_signal"]
