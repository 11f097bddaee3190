"""The Textual app: several live thread panes on one agent core.

Nothing here is imported by the core (a test checks that the core never imports Textual);
``tui_agent.app.main.run_app`` is what ``tui-agent`` with no command runs.
"""
