"""The live demo scenario of ``tui-agent --demo`` (core side: no Textual)."""

from tui_agent.demo.scenario import DEMO_RESOURCE, DEMO_THREAD, DEMO_TITLE, DemoFeed

__all__ = ["DEMO_RESOURCE", "DEMO_THREAD", "DEMO_TITLE", "DemoFeed"]
