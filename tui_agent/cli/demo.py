"""The demo's tools under the name settings files use (docs/settings.md:
``tools = ["tui_agent.cli.demo:demo_tools"]``); they live in ``tui_agent.demo.agent``."""

from tui_agent.demo.agent import calculate, demo_tools

__all__ = ["calculate", "demo_tools"]
